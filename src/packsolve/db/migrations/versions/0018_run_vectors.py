"""run_vectors: a finished run's level vector (db.level_vectors), packed once when it finishes.

The first compare of two finished runs joined their attempts in SQL: 26 s on SQLite, 59 s on
PostgreSQL for two runs of a million attempts. Each run's attempts packed as arrays sorted by level
hash, the same groups come from the two vectors in memory.
Not filled here: 0021 replaced it by run_snapshots, made lazily (an old migration calls no live code).

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

# The arrays, one column each, as this revision made them.
ARRAYS = ("keys", "checks", "kinds", "statuses", "walls", "peaks")


def upgrade() -> None:
    op.create_table(
        "run_vectors",
        sa.Column("run_id", sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("legend", sa.Text(), nullable=False),
        *(sa.Column(c, sa.LargeBinary(), nullable=False) for c in ARRAYS),
    )


def downgrade() -> None:
    op.drop_table("run_vectors")
