"""refusals: which worker hosts refused a queued attempt's task and why; workers.signs.

A task no worker can serve used to go back to the broker unacknowledged, which RabbitMQ redelivers
at once from the head of the queue: it stopped every task behind it. Workers now send it back to
the tail, after a wait, and record each refusal here, so the scheduler gives up an attempt every
live worker refuses and `status` says which levels wait and why.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "refusals",
        sa.Column("run_id", sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("level_hash", sa.String(64), primary_key=True),
        sa.Column("host", sa.String(255), primary_key=True),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("authentic", sa.Boolean(), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("first_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_at", sa.DateTime(timezone=True), nullable=False),
    )
    # Whether the worker process runs only signed tasks (null: an earlier version, or no key).
    with op.batch_alter_table("workers") as batch:
        batch.add_column(sa.Column("signs", sa.Boolean()))


def downgrade() -> None:
    with op.batch_alter_table("workers") as batch:
        batch.drop_column("signs")
    op.drop_table("refusals")
