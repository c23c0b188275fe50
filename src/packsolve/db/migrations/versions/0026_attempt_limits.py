"""attempts.time_limit, attempts.cpu_limit: an attempt's own limits, where its run's are relative
(--time-limit 3x: each level's from its history); NULL: the run's.

Nullable columns added in place: on SQLite an ALTER TABLE ADD COLUMN (not a batch copy of the table),
which keeps the attempts table and its triggers (run_figures, attempts_text) as they are; dropped in
place too (SQLite 3.35+: no index or trigger names them).

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

_COLUMNS = ("time_limit", "cpu_limit")


def upgrade() -> None:
    for name in _COLUMNS:
        op.add_column("attempts", sa.Column(name, sa.Float(), nullable=True))


def downgrade() -> None:
    for name in reversed(_COLUMNS):
        op.drop_column("attempts", name)
