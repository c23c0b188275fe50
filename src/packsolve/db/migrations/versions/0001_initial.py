"""Initial schema: levels, runs, attempts.

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "levels",
        sa.Column("hash", sa.String(64), primary_key=True),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_levels_kind", "levels", ["kind"])
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("label", sa.String(200)),
        sa.Column("parent_id", sa.Integer(), sa.ForeignKey("runs.id")),
        sa.Column("mode", sa.String(16), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("heuristic", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(64)),
        sa.Column("time_limit", sa.Float()),
        sa.Column("node_limit", sa.BigInteger()),
        sa.Column("memory_limit_mb", sa.Integer()),
        sa.Column("concurrency", sa.Integer()),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("version", sa.String(64), nullable=False),
        sa.Column("options", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True)),
    )
    op.create_table(
        "attempts",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("level_hash", sa.String(64), sa.ForeignKey("levels.hash"), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("heuristic", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("solution", sa.Text()),
        sa.Column("length", sa.Integer()),
        sa.Column("nodes", sa.BigInteger()),
        sa.Column("wall_s", sa.Float()),
        sa.Column("cpu_s", sa.Float()),
        sa.Column("peak_rss_mb", sa.Float()),
        sa.Column("worker", sa.String(255)),
        sa.Column("tries", sa.Integer(), nullable=False),
        sa.Column("queued_at", sa.DateTime(timezone=True)),
        sa.Column("started_at", sa.DateTime(timezone=True)),
        sa.Column("finished_at", sa.DateTime(timezone=True)),
        sa.Column("message", sa.Text()),
        sa.UniqueConstraint("run_id", "level_hash", name="uq_attempt_run_level"),
    )
    op.create_index("ix_attempts_run_status", "attempts", ["run_id", "status"])
    op.create_index("ix_attempts_level", "attempts", ["level_hash"])


def downgrade() -> None:
    op.drop_table("attempts")
    op.drop_table("runs")
    op.drop_index("ix_levels_kind", "levels")
    op.drop_table("levels")
