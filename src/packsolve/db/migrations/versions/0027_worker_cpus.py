"""workers.cpus: the CPUs a worker process is pinned to under --cpus-per-attempt ("0", "2,3"); NULL when
it is not pinned.

Added in place (a nullable column), as 0026 does.

Revision ID: 0027
Revises: 0026
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("workers", sa.Column("cpus", sa.String(255), nullable=True))


def downgrade() -> None:
    op.drop_column("workers", "cpus")
