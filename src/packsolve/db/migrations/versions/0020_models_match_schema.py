"""The schema is what the models say: SQLite's runs.heuristic becomes TEXT and runs.options JSON.

0004 made a run's heuristic text on PostgreSQL only (SQLite never enforced the 64 characters) and
0012 made its options JSONB on PostgreSQL only (SQLite kept the JSON as text in a TEXT column):
PostgreSQL has both already. On SQLite the runs table is rebuilt with the types the models declare,
keeping every row and, as 0009 made it, AUTOINCREMENT (a run id is never given out twice). No value
changes: the options were JSON text already, read as JSON by the models.

ix_run_figures_key (0014) is declared in the models since this revision, as it is on each dialect
(unique on SQLite, not on PostgreSQL): nothing to change in the database for it.

db.migrate.drift(engine) is empty after this revision on both dialects (tests/integration/
test_migrations.py); the objects the models deliberately leave out are listed in models.UNMODELLED.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

# The types, as this revision makes them (the models may move on): (heuristic, options).
BEFORE = (sa.String(64), sa.Text())
AFTER = (sa.Text(), sa.JSON())


def _rebuild(
    heuristic: tuple[sa.types.TypeEngine, sa.types.TypeEngine],
    options: tuple[sa.types.TypeEngine, sa.types.TypeEngine],
) -> None:
    """Rebuild SQLite's runs table (batch mode copies every row and index), the two columns' types changed."""
    conn = op.get_bind()
    if conn.dialect.name != "sqlite":
        return  # PostgreSQL's columns have these types since 0004 and 0012
    if conn.exec_driver_sql("PRAGMA foreign_keys").scalar():
        # Dropping the old table would cascade into every attempt (db.migrate.upgrade turns them off).
        raise RuntimeError("runs is rebuilt with SQLite's foreign keys off: use `packsolve db upgrade`")
    with op.batch_alter_table(
        "runs", recreate="always", table_kwargs={"sqlite_autoincrement": True}
    ) as batch:
        batch.alter_column(
            "heuristic", existing_type=heuristic[0], type_=heuristic[1], existing_nullable=False
        )
        batch.alter_column("options", existing_type=options[0], type_=options[1], existing_nullable=False)
    broken = conn.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
    if broken:
        raise RuntimeError(f"rebuilding the runs table broke {len(broken)} reference(s): {broken[:3]}")


def upgrade() -> None:
    _rebuild((BEFORE[0], AFTER[0]), (BEFORE[1], AFTER[1]))


def downgrade() -> None:
    _rebuild((AFTER[0], BEFORE[0]), (AFTER[1], BEFORE[1]))
