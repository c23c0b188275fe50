"""Indexes for the dashboard's far pages and its text search over a run's attempts.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01
"""

from __future__ import annotations

import logging

from alembic import op
from sqlalchemy.exc import DBAPIError

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

log = logging.getLogger("alembic.runtime.migration")
# Trigram indexes (PostgreSQL's pg_trgm) let `LIKE '%text%'` on names and messages find the few
# rows holding the text instead of reading every attempt of the run.
TRIGRAM = ("name", "message")


def upgrade() -> None:
    # Pack order with the id: a far page's ids are read from the index alone (on PostgreSQL, whose
    # indexes do not hold the id by themselves; SQLite's hold the rowid, which is the id).
    op.drop_index("ix_attempts_run_seq", "attempts")
    op.create_index("ix_attempts_run_seq", "attempts", ["run_id", "seq", "id"])
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        # Without statistics of its own, the new index would look the most selective of all to
        # SQLite's planner and be chosen for every page of a run, sorted then in a temporary tree.
        op.execute("ANALYZE attempts")
        return
    try:
        with bind.begin_nested():
            op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    except DBAPIError as exc:  # not installed, or not this user's to create: searching still works
        log.warning("pg_trgm is not available (%s): the dashboard's text search reads whole runs", exc.orig)
        return
    for column in TRIGRAM:
        op.create_index(
            f"ix_attempts_{column}_trgm",
            "attempts",
            [column],
            if_not_exists=True,
            postgresql_using="gin",
            postgresql_ops={column: "gin_trgm_ops"},
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for column in TRIGRAM:
            op.drop_index(f"ix_attempts_{column}_trgm", "attempts", if_exists=True)
    op.drop_index("ix_attempts_run_seq", "attempts")
    op.create_index("ix_attempts_run_seq", "attempts", ["run_id", "seq"])
