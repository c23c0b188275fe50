"""run_failures: a finished run's failure groups (`report failures`), grouped once when it finishes.

Grouping a run's failed attempts by message pattern reads every one of them in Python (2 to 4 s for
a run of a million attempts); a finished run's never change, so db.runs.finish_run_if_done groups
them then and keeps them here with its finished_at.
Not filled here: 0021 replaced it by run_snapshots, made lazily (an old migration calls no live code).

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "run_failures",
        sa.Column("run_id", sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("examples", sa.Integer(), nullable=False),
        sa.Column("groups", sa.Text(), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("run_failures")
