"""Indexes that let the dashboard sort a run's attempts by a column without reading the whole run.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

# (run_id, column, id): a page of a run sorted by the column (ties in the order the attempts were
# made) is read from the index, 50 rows whatever the size of the run; without id, a column of few
# values (kind, status) would sort a whole group to find its first 50. Pack order had its index already.
SORTED = (
    "name",
    "kind",
    "heuristic",
    "status",
    "wall_s",
    "cpu_s",
    "nodes",
    "peak_rss_mb",
    "length",
    "worker",
    "tries",
    "finished_at",
)


def upgrade() -> None:
    for column in SORTED:
        op.create_index(f"ix_attempts_sort_{column}", "attempts", ["run_id", column, "id"])
    if op.get_bind().dialect.name == "sqlite":
        # SQLite knows an index's selectivity only from ANALYZE: in a database analysed before, the new
        # indexes would look far more selective than the old ones and be chosen for every query.
        op.execute("ANALYZE attempts")


def downgrade() -> None:
    for column in SORTED:
        op.drop_index(f"ix_attempts_sort_{column}", "attempts")
