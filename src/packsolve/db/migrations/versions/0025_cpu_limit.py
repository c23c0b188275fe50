"""cpu_limit: a run's limit on the CPU time of each attempt's process tree (--cpu-limit), beside time_limit;
and how each worker process measures its attempts (workers.measurement: cgroup-v1 or rusage).

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("cpu_limit", sa.Float(), nullable=True))
    with op.batch_alter_table("workers") as batch:
        batch.add_column(sa.Column("measurement", sa.String(16), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("workers") as batch:
        batch.drop_column("measurement")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("cpu_limit")
