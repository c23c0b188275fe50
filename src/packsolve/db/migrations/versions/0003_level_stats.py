"""Report tables: per-level figures folded from finished runs, and the runs folded so far.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # `report hardest --all` ranks levels across every run; aggregating a million
    # attempts per call is too slow, so finished runs are folded in here once.
    op.create_table(
        "level_stats",
        sa.Column("level_hash", sa.String(64), sa.ForeignKey("levels.hash"), primary_key=True),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("decided", sa.Integer(), nullable=False),
        sa.Column("solved", sa.Integer(), nullable=False),
        sa.Column("best_wall_s", sa.Float()),
        sa.Column("best_nodes", sa.BigInteger()),
        sa.Column("max_par2_s", sa.Float()),
        sa.Column("max_nodes", sa.BigInteger()),
        sa.Column("last_run_id", sa.Integer(), nullable=False),
    )
    op.create_index("ix_level_stats_kind", "level_stats", ["kind"])
    op.create_table(
        "level_stats_runs",
        sa.Column("run_id", sa.Integer(), primary_key=True, autoincrement=False),
    )
    # Compare and show read one level's attempts across runs and one run's attempts in pack order.
    op.create_index("ix_attempts_run_seq", "attempts", ["run_id", "seq"])


def downgrade() -> None:
    op.drop_index("ix_attempts_run_seq", "attempts")
    op.drop_table("level_stats_runs")
    op.drop_index("ix_level_stats_kind", "level_stats")
    op.drop_table("level_stats")
