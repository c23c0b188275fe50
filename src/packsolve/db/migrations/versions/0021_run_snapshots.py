"""run_snapshots: one table for what the read model keeps of a finished run, with one staleness rule.

run_final (0014), compare_figures (0016), run_failures (0017) and run_vectors (0018) each kept
something of finished runs with their own table and check of the run's finished_at, and were
filled in the transaction stamping a run finished. Their content now lives in run_snapshots, a
row per (run, name), valid while the run's finished_at equals its stamp, made off the write path
(the scheduler, a local solve's end, or the first reader). Nothing is copied or filled here:
the old tables are dropped and each snapshot is made again when first wanted.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

_ARRAYS = ("keys", "checks", "kinds", "statuses", "walls", "peaks")


def upgrade() -> None:
    op.create_table(
        "run_snapshots",
        sa.Column("run_id", sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("name", sa.String(200), primary_key=True),
        sa.Column("stamp", sa.DateTime(timezone=True), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("data", sa.LargeBinary()),
    )
    for table in ("run_final", "compare_figures", "run_failures", "run_vectors"):
        op.drop_table(table)


def downgrade() -> None:
    """Recreate the four tables empty (a version before this one reads its attempts where they are empty)."""
    stamped = sa.DateTime(timezone=True)

    def run_key(name: str = "run_id") -> sa.Column:
        return sa.Column(name, sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)

    op.create_table(
        "run_final",
        run_key(),
        sa.Column("kind", sa.String(64), primary_key=True),
        sa.Column("heuristic", sa.String(64), primary_key=True),
        sa.Column("wall_median", sa.Float()),
        sa.Column("cpu_median", sa.Float()),
        sa.Column("peak_rss_mb", sa.Float()),
        sa.Column("finished_at", stamped, nullable=False),
    )
    op.create_table(
        "compare_figures",
        run_key("run_a"),
        run_key("run_b"),
        sa.Column("kind", sa.String(64), primary_key=True),
        sa.Column("a_finished_at", stamped, nullable=False),
        sa.Column("b_finished_at", stamped, nullable=False),
        sa.Column("figures", sa.Text(), nullable=False),
    )
    op.create_table(
        "run_failures",
        run_key(),
        sa.Column("examples", sa.Integer(), nullable=False),
        sa.Column("groups", sa.Text(), nullable=False),
        sa.Column("finished_at", stamped, nullable=False),
    )
    op.create_table(
        "run_vectors",
        run_key(),
        sa.Column("finished_at", stamped, nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("legend", sa.Text(), nullable=False),
        *(sa.Column(c, sa.LargeBinary(), nullable=False) for c in _ARRAYS),
    )
    op.drop_table("run_snapshots")
