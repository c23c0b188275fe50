"""Worker leases and claim holders (fencing), and when a distributed run's submit finished sending.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # One row per worker process that claims attempts: alive while lease_until lies ahead.
    op.create_table(
        "workers",
        sa.Column("name", sa.String(255), primary_key=True),  # hostname/pid: the holder of its claims
        sa.Column("host", sa.String(255), nullable=False),  # the Celery hostname, as attempts.worker shows it
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("renewed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=False, index=True),
        sa.Column("offers", sa.Text(), nullable=False, server_default="{}"),  # JSON: kind -> source
    )
    with op.batch_alter_table("attempts") as batch:
        batch.add_column(sa.Column("holder", sa.String(255)))
        batch.create_index("ix_attempts_holder", ["holder"])
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("sent_at", sa.DateTime(timezone=True)))
        batch.add_column(sa.Column("send_error", sa.Text()))
    # Runs of earlier versions were sent in full or not at all before this column existed.
    op.execute("UPDATE runs SET sent_at = created_at WHERE mode = 'distributed'")


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("send_error")
        batch.drop_column("sent_at")
    with op.batch_alter_table("attempts") as batch:
        batch.drop_index("ix_attempts_holder")
        batch.drop_column("holder")
    op.drop_table("workers")
