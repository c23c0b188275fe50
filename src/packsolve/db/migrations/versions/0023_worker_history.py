"""worker_events and how a worker process's lease ended: its history stays shown after it is gone.

A worker process lost mid-run used to vanish from every view once its lease was forgotten, with
nothing saying what was taken back from it. Each process now records its concurrency and declared
programs as it starts, whether it stopped cleanly (stopped_at) or was seen lapsed (lapsed_at), and
worker_events keeps its history: started, lease lapsed, claims taken back, stopped.

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("workers") as batch:
        batch.add_column(sa.Column("concurrency", sa.Integer()))
        batch.add_column(sa.Column("programs", sa.Text()))
        batch.add_column(sa.Column("stopped_at", sa.DateTime(timezone=True)))
        batch.add_column(sa.Column("lapsed_at", sa.DateTime(timezone=True)))
    op.create_table(
        "worker_events",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("worker", sa.String(255), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("detail", sa.JSON().with_variant(postgresql.JSONB(), "postgresql")),
    )
    op.create_index("ix_worker_events_worker_at", "worker_events", ["worker", "at"])
    op.create_index("ix_worker_events_at", "worker_events", ["at"])


def downgrade() -> None:
    op.drop_index("ix_worker_events_at", "worker_events")
    op.drop_index("ix_worker_events_worker_at", "worker_events")
    op.drop_table("worker_events")
    with op.batch_alter_table("workers") as batch:
        for column in ("lapsed_at", "stopped_at", "programs", "concurrency"):
            batch.drop_column(column)
