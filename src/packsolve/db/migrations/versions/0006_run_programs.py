"""The external solver programs each worker ran for a run: command and SHA-256 of the executable.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # One row per (run, worker, solver, binary): a worker that ran two builds of one program
    # during a run has two rows, and reports warn when a run's rows disagree.
    op.create_table(
        "run_programs",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("worker", sa.String(255), nullable=False),
        sa.Column("solver", sa.String(200), nullable=False),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("command", sa.Text(), nullable=False),
        sa.Column("executable", sa.Text(), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("first_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("run_id", "worker", "solver", "sha256", name="uq_run_program"),
    )


def downgrade() -> None:
    op.drop_table("run_programs")
