"""run_failures: a finished run's failure groups (`report failures`), grouped once when it finishes.

Grouping a run's failed attempts by message pattern reads every one of them in Python (2 to 4 s for
a run of a million attempts); a finished run's never change, so db.runs.finish_run_if_done groups
them then and keeps them here with its finished_at. Filled here for the runs already finished.

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
    _store_groups()


def _store_groups() -> None:
    """Group and keep the failures of every finished run (what stamping a run finished now does)."""
    from packsolve.db.failures import store_groups

    bind = op.get_bind()
    finished = bind.execute(sa.text("SELECT id FROM runs WHERE finished_at IS NOT NULL ORDER BY id"))
    for run_id in list(finished.scalars()):
        store_groups(bind, run_id)


def downgrade() -> None:
    op.drop_table("run_failures")
