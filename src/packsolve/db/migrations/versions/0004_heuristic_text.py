"""A run's heuristic choice can name one heuristic per kind: text, not 64 characters.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # SQLite never enforced the length; PostgreSQL would refuse "sudoku=dlx,sliding=pdb-663,...".
    if op.get_bind().dialect.name == "postgresql":
        op.alter_column("runs", "heuristic", type_=sa.Text(), existing_type=sa.String(64))


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.alter_column("runs", "heuristic", type_=sa.String(64), existing_type=sa.Text())
