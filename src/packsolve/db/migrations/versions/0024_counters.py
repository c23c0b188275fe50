"""counters: what happened that no other row keeps, counted where it happens, for /metrics.

Stale results refused, claims the scheduler took back, tasks refused by reason, and the scheduler's
passes (how many, their seconds in all, the last one's) leave no row of their own behind; each is
one (name, label) row here, added to in the transaction of the event (or right after it).

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "counters",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("label", sa.String(64), primary_key=True),
        sa.Column("value", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("counters")
