"""Run ids are never reused: SQLite's runs table is rebuilt with AUTOINCREMENT, keeping every row.

Without it SQLite gives a new run the id of the newest run deleted, and that run's leftover tasks
on the broker named the new run. PostgreSQL's sequences never hand an id out twice: nothing to do.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def _rebuild(autoincrement: bool) -> None:
    """Rebuild SQLite's runs table (batch mode copies every row and index) with or without AUTOINCREMENT."""
    conn = op.get_bind()
    if conn.dialect.name != "sqlite":
        return
    if conn.exec_driver_sql("PRAGMA foreign_keys").scalar():
        # Dropping the old table would cascade into every attempt (db.migrate.upgrade turns them off).
        raise RuntimeError("runs is rebuilt with SQLite's foreign keys off: use `packsolve db upgrade`")
    options = {"sqlite_autoincrement": autoincrement}
    with op.batch_alter_table("runs", recreate="always", table_kwargs=options):
        pass
    broken = conn.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
    if broken:
        raise RuntimeError(f"rebuilding the runs table broke {len(broken)} reference(s): {broken[:3]}")


def upgrade() -> None:
    _rebuild(autoincrement=True)


def downgrade() -> None:
    _rebuild(autoincrement=False)
