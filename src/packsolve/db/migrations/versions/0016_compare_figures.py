"""compare_figures: two finished runs' compare footer per kind, read once (a finished run never changes).

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Read over two 1,000,000-attempt runs it takes seconds; kept, the compare page reads a few rows.
    op.create_table(
        "compare_figures",
        sa.Column("run_a", sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("run_b", sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("kind", sa.String(64), primary_key=True),
        sa.Column("a_finished_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("b_finished_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("figures", sa.Text(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("compare_figures")
