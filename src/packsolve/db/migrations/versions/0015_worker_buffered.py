"""What each worker process has computed and not yet written, as its lease renewals say it.

Revision ID: 0015
Revises: 0013
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # JSON {run id: [level hash, ...]}: the results in the process's write buffer at its last renewal,
    # so `status` tells them from the attempts really running (null: a worker of an earlier version).
    with op.batch_alter_table("workers") as batch:
        batch.add_column(sa.Column("buffered", sa.Text()))


def downgrade() -> None:
    with op.batch_alter_table("workers") as batch:
        batch.drop_column("buffered")
