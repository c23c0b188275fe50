"""refusals: one row per (run, level, heuristic, worker host), not per (run, level, host): a run may try a
level with several heuristics (0028), and a task every worker refuses for one of them (a program only
some machines have) must give up that attempt alone, not the level's other heuristics.

The rows there are take the heuristic of their attempt (every run before 0028 holds a level once).
PostgreSQL changes the primary key in place; SQLite, which cannot, makes the table again and copies
the rows. Downgrading keeps one row per (run, level, host): the most recent.

Revision ID: 0029
Revises: 0028
Create Date: 2026-12-05
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None

PK = "refusals_pkey"
OLD = ["run_id", "level_hash", "host"]
NEW = ["run_id", "level_hash", "heuristic", "host"]
# A refusal row's attempt's heuristic ('' if the attempt is gone).
OWN = (
    "COALESCE((SELECT MIN(a.heuristic) FROM attempts a "
    "WHERE a.run_id = refusals.run_id AND a.level_hash = refusals.level_hash), '')"
)


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        _remake_sqlite(with_heuristic=True)
        return
    # Added with a default for the rows there, which then take their attempt's; new rows always name one.
    op.add_column("refusals", sa.Column("heuristic", sa.String(64), nullable=False, server_default=""))
    op.execute(sa.text(f"UPDATE refusals SET heuristic = {OWN}"))
    op.drop_constraint(PK, "refusals", type_="primary")
    op.create_primary_key(PK, "refusals", NEW)
    op.alter_column("refusals", "heuristic", server_default=None)


def downgrade() -> None:
    # Keep the latest refusal of each (run, level, host); the others would collide.
    op.execute(
        sa.text(
            "DELETE FROM refusals WHERE EXISTS (SELECT 1 FROM refusals r WHERE r.run_id = refusals.run_id "
            "AND r.level_hash = refusals.level_hash AND r.host = refusals.host "
            "AND (r.last_at > refusals.last_at "
            "OR (r.last_at = refusals.last_at AND r.heuristic > refusals.heuristic)))"
        )
    )
    if op.get_bind().dialect.name != "postgresql":
        _remake_sqlite(with_heuristic=False)
        return
    op.drop_constraint(PK, "refusals", type_="primary")
    op.create_primary_key(PK, "refusals", OLD)
    op.drop_column("refusals", "heuristic")


def _remake_sqlite(with_heuristic: bool) -> None:
    """SQLite cannot change a table's primary key: make refusals again with the new one, its rows copied
    (with their attempt's heuristic, upgrading), as SQLite's documentation says."""
    columns: list[sa.Column[Any]] = [
        sa.Column("run_id", sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("level_hash", sa.String(64), nullable=False),
        *([sa.Column("heuristic", sa.String(64), nullable=False)] if with_heuristic else []),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("authentic", sa.Boolean(), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("first_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_at", sa.DateTime(timezone=True), nullable=False),
    ]
    names = [c.name for c in columns]
    op.create_table("refusals_remade", *columns, sa.PrimaryKeyConstraint(*(NEW if with_heuristic else OLD)))
    kept = [n for n in names if n != "heuristic"]
    if with_heuristic:
        op.execute(
            sa.text(
                f"INSERT INTO refusals_remade ({', '.join(kept)}, heuristic) "
                f"SELECT {', '.join(kept)}, {OWN} FROM refusals"
            )
        )
    else:
        op.execute(
            sa.text(f"INSERT INTO refusals_remade ({', '.join(kept)}) SELECT {', '.join(kept)} FROM refusals")
        )
    op.drop_table("refusals")
    op.rename_table("refusals_remade", "refusals")
