"""parts: a split level's parts as workers share them (issue 38): the claim token of the level's attempt
each row was handed out under, the worker process holding it, the best length known when it was handed
out, and a part's answer (the whole level's) with its length.

Revision ID: 0031
Revises: 0030
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0031"
down_revision = "0030"
branch_labels = None
depends_on = None

COLUMNS = ("split_of", "token", "holder", "best", "length", "solution")


def upgrade() -> None:
    op.add_column("parts", sa.Column("split_of", sa.Integer()))
    op.add_column("parts", sa.Column("token", sa.Integer()))
    op.add_column("parts", sa.Column("holder", sa.String(255)))
    op.add_column("parts", sa.Column("best", sa.Integer()))
    op.add_column("parts", sa.Column("length", sa.Integer()))
    op.add_column("parts", sa.Column("solution", sa.Text()))


def downgrade() -> None:
    # SQLite drops a column itself since 3.35 (Debian 12 has 3.40): no table remade.
    for name in reversed(COLUMNS):
        op.drop_column("parts", name)
