"""Indexes that let the dashboard sort a run's attempts by a column without reading the whole run.

Revision ID: 0011
Revises: 0008
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0011"
down_revision = "0008"
branch_labels = None
depends_on = None

# (run_id, column): the first page of a run sorted by the column is read from the index, a page
# of 50 rows whatever the size of the run. Sorting by status and by pack order had their index already.
SORTED = ("wall_s", "cpu_s", "nodes", "peak_rss_mb", "finished_at", "name", "kind", "worker")


def upgrade() -> None:
    for column in SORTED:
        op.create_index(f"ix_attempts_run_{column}", "attempts", ["run_id", column])


def downgrade() -> None:
    for column in SORTED:
        op.drop_index(f"ix_attempts_run_{column}", "attempts")
