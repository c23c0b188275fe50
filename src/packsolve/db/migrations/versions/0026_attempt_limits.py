"""attempts.time_limit, attempts.cpu_limit: an attempt's own limits, where its run's are relative
(--time-limit 3x: each level's from its history); NULL: the run's.

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("attempts") as batch:
        batch.add_column(sa.Column("time_limit", sa.Float(), nullable=True))
        batch.add_column(sa.Column("cpu_limit", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("attempts") as batch:
        batch.drop_column("cpu_limit")
        batch.drop_column("time_limit")
