"""Claims counted apart from tries: a fencing token per claim, a try only for an attempt that started.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("attempts") as batch:
        batch.add_column(sa.Column("claims", sa.Integer(), nullable=False, server_default="0"))
    # Until now every claim counted a try: the claims made so far are the tries.
    op.execute("UPDATE attempts SET claims = tries")


def downgrade() -> None:
    with op.batch_alter_table("attempts") as batch:
        batch.drop_column("claims")
