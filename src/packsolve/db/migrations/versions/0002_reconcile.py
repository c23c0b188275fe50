"""Reconcile bookkeeping: an attempt's deadline and requeue count, a run's cap on tries.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("attempts") as batch:
        # When a running attempt must have reported back (start + hard limit); NULL without a time limit.
        batch.add_column(sa.Column("deadline", sa.DateTime(timezone=True)))
        # How often the scheduler re-sent the attempt's task (broker lost it, or its worker died).
        batch.add_column(sa.Column("requeues", sa.Integer(), nullable=False, server_default="0"))
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("max_tries", sa.Integer()))
    op.create_index("ix_attempts_status_deadline", "attempts", ["status", "deadline"])


def downgrade() -> None:
    op.drop_index("ix_attempts_status_deadline", "attempts")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("max_tries")
    with op.batch_alter_table("attempts") as batch:
        batch.drop_column("requeues")
        batch.drop_column("deadline")
