"""attempts.stdout and attempts.stderr: what a solver printed beyond its answer, head and tail kept.

Nullable text columns (NULL: nothing kept), added in place: on SQLite an ALTER TABLE ADD COLUMN,
which keeps the attempts table and its triggers (run_figures, attempts_text) as they are. No text
index covers them (a trigram index of every kept output would weigh several times the output):
the dashboard's text search reads a run's attempts that kept output, found by a partial index.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

_COLUMNS = ("stdout", "stderr")
_KEPT = sa.text("stderr IS NOT NULL OR stdout IS NOT NULL")


def upgrade() -> None:
    for name in _COLUMNS:
        op.add_column("attempts", sa.Column(name, sa.Text(), nullable=True))
    op.create_index(
        "ix_attempts_run_output", "attempts", ["run_id"], sqlite_where=_KEPT, postgresql_where=_KEPT
    )


def downgrade() -> None:
    op.drop_index("ix_attempts_run_output", "attempts")
    # SQLite drops a column in place (3.35+) once no index or trigger names it.
    for name in _COLUMNS:
        op.drop_column("attempts", name)
