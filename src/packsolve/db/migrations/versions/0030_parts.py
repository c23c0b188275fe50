"""parts: what each part of a split level cost and how it ended (issue 38), a best-of-all part once per
round; the level's one result stays on its attempt.

Revision ID: 0030
Revises: 0029
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "parts",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("level_hash", sa.String(64), nullable=False),
        sa.Column("heuristic", sa.String(64), nullable=False),
        sa.Column("part", sa.Integer(), nullable=False),
        sa.Column("parts", sa.Integer(), nullable=False),
        sa.Column("round", sa.Integer(), nullable=False),
        sa.Column("window_lo", sa.Integer()),
        sa.Column("window_hi", sa.Integer()),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("nodes", sa.BigInteger()),
        sa.Column("wall_s", sa.Float()),
        sa.Column("cpu_s", sa.Float()),
        sa.Column("peak_rss_mb", sa.Float()),
        sa.Column("resume", sa.Integer()),
        sa.Column("worker", sa.String(255)),
        sa.Column("started_at", sa.DateTime(timezone=True)),
        sa.Column("finished_at", sa.DateTime(timezone=True)),
        sa.Column("message", sa.Text()),
        sa.UniqueConstraint("run_id", "level_hash", "heuristic", "part", "round", name="uq_part_run"),
        sqlite_autoincrement=True,
    )


def downgrade() -> None:
    op.drop_table("parts")
