"""attempts: unique per (run, level, heuristic), no longer per (run, level): a run may try one level with
several heuristics side by side (--heuristic a,b,c, issue 36).

PostgreSQL drops the constraint and adds the new one. SQLite cannot drop a table's constraint, so the
table is made again as SQLite's documentation says (create the new table, copy every row with its id,
drop the old one, rename): the table's own SQL is read from sqlite_master and only the constraint is
changed in it, and its indexes and triggers (the FTS index's and run_figures', migrations 0013 and 0014)
are read before and made again after, as they were. The FTS table attempts_text names the table and
its rowids, both kept. Downgrading fails while a run holds a level twice.

Revision ID: 0028
Revises: 0027
Create Date: 2026-12-04
"""

from __future__ import annotations

import re

import sqlalchemy as sa
from alembic import op

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None

OLD = "uq_attempt_run_level"
NEW = "uq_attempt_run_level_heuristic"
OLD_SQL = f"CONSTRAINT {OLD} UNIQUE (run_id, level_hash)"
NEW_SQL = f"CONSTRAINT {NEW} UNIQUE (run_id, level_hash, heuristic)"


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _remake_sqlite(OLD_SQL, NEW_SQL)
    else:
        op.drop_constraint(OLD, "attempts", type_="unique")
        op.create_unique_constraint(NEW, "attempts", ["run_id", "level_hash", "heuristic"])
        _said_again()


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _remake_sqlite(NEW_SQL, OLD_SQL)
    else:
        op.drop_constraint(NEW, "attempts", type_="unique")
        op.create_unique_constraint(OLD, "attempts", ["run_id", "level_hash"])
        _said_again()


def _said_again() -> None:
    """Make ix_attempts_run_said (0014) again, as it was, after the constraint's index (PostgreSQL).

    Of two indexes a query could read at the same estimated cost PostgreSQL takes the newer: without
    statistics, a run's attempts of one status with a message (the summary's example per status) would
    be read through the new constraint's index, in level hash order, where they were read through this
    one, in the order they were written, as a scan of the table reads them too.
    """
    said = sa.text("message IS NOT NULL")
    op.drop_index("ix_attempts_run_said", "attempts")
    op.create_index("ix_attempts_run_said", "attempts", ["run_id", "status"], postgresql_where=said)


def _remake_sqlite(old: str, new: str) -> None:
    """Make the attempts table again with the constraint old (its SQL) replaced by new."""
    bind = op.get_bind()
    table = bind.exec_driver_sql("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'attempts'")
    sql = table.scalar_one()
    if old not in sql:
        raise RuntimeError(f"attempts has no {old!r}: its schema is not the one this migration knows")
    kept = bind.exec_driver_sql(
        "SELECT type, name, sql FROM sqlite_master "
        "WHERE tbl_name = 'attempts' AND type IN ('index', 'trigger') AND sql IS NOT NULL ORDER BY rowid"
    ).all()
    columns = ", ".join(f'"{row[1]}"' for row in bind.exec_driver_sql("PRAGMA table_info(attempts)"))
    # Triggers first: the copy must not count the rows again in run_figures nor index them twice.
    for kind, name, _ in kept:
        if kind == "trigger":
            bind.exec_driver_sql(f'DROP TRIGGER "{name}"')
    # After a rename SQLite keeps the name quoted: CREATE TABLE "attempts" (...).
    remade = re.sub(r'^CREATE TABLE\s+("?)attempts\1', "CREATE TABLE attempts_remade", sql.replace(old, new))
    bind.exec_driver_sql(remade)
    bind.exec_driver_sql(f"INSERT INTO attempts_remade ({columns}) SELECT {columns} FROM attempts")
    bind.exec_driver_sql("DROP TABLE attempts")
    bind.exec_driver_sql("ALTER TABLE attempts_remade RENAME TO attempts")
    for _, _, statement in kept:
        bind.exec_driver_sql(statement)
