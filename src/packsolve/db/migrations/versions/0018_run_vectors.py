"""run_vectors: a finished run's level vector (db.level_vectors), packed once when it finishes.

The first compare of two finished runs joined their attempts in SQL: 26 s on SQLite, 59 s on
PostgreSQL for two runs of a million attempts. Each run's attempts packed as arrays sorted by level
hash, the same groups come from the two vectors in memory. Filled here for the runs already finished.

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


def upgrade() -> None:
    op.create_table(
        "run_vectors",
        sa.Column("run_id", sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("legend", sa.Text(), nullable=False),
        *(sa.Column(c, sa.LargeBinary(), nullable=False) for c in _ARRAYS),
    )
    _store_vectors()


_ARRAYS = ("keys", "checks", "kinds", "statuses", "walls", "peaks")


def _store_vectors() -> None:
    """Pack and keep the vector of every finished run (what stamping a run finished now does)."""
    from packsolve.db.run_vectors import store_vector

    bind = op.get_bind()
    finished = bind.execute(sa.text("SELECT id FROM runs WHERE finished_at IS NOT NULL ORDER BY id"))
    for run_id in list(finished.scalars()):
        store_vector(bind, run_id)


def downgrade() -> None:
    op.drop_table("run_vectors")
