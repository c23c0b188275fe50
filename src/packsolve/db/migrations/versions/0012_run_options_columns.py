"""A run's options become a JSON document, its pid and provenance real columns.

runs.options was JSON text holding the command line, the pid of a local run's process, its
resume history and its provenance (the kinds used, the external programs' declarations). The
pid moves to runs.pid, the provenance to runs.kinds and runs.solvers (JSON); options keeps the
rest. On PostgreSQL options becomes JSONB; SQLite keeps JSON as text in the same column.
A run whose options could not be read keeps none (an empty document), as the readers read it.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01
"""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

# The columns, as this revision made them (the models may move on).
DOCUMENT = sa.JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True), "postgresql")
MOVED = ("pid", "kinds", "solvers")


def _runs(options: Any) -> sa.TableClause:
    """Return the runs table with the columns this revision reads and writes, options of the given type."""
    return sa.table(
        "runs",
        sa.column("id", sa.Integer),
        sa.column("options", options),
        sa.column("pid", sa.Integer),
        sa.column("kinds", DOCUMENT),
        sa.column("solvers", DOCUMENT),
    )


def _document(text: Any) -> dict[str, Any]:
    """Return the options text as a dict: {} for text that is no JSON object."""
    try:
        value = json.loads(text) if isinstance(text, (str, bytes)) else text
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def upgrade() -> None:
    conn = op.get_bind()
    op.add_column("runs", sa.Column("pid", sa.Integer(), nullable=True))
    op.add_column("runs", sa.Column("kinds", DOCUMENT, nullable=True))
    op.add_column("runs", sa.Column("solvers", DOCUMENT, nullable=True))
    runs = _runs(sa.Text)
    for run_id, text in conn.execute(sa.select(runs.c.id, runs.c.options)).all():
        options = _document(text)
        pid, kinds, solvers = (options.pop(key, None) for key in MOVED)
        conn.execute(
            sa.update(runs)
            .where(runs.c.id == run_id)
            .values(
                options=json.dumps(options, sort_keys=True),
                pid=pid if isinstance(pid, int) and not isinstance(pid, bool) else None,
                kinds=kinds if isinstance(kinds, dict) else {},
                solvers=solvers if isinstance(solvers, dict) else {},
            )
        )
    if conn.dialect.name == "postgresql":
        op.execute("ALTER TABLE runs ALTER COLUMN options TYPE JSONB USING options::jsonb")


def downgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name == "postgresql":
        op.execute("ALTER TABLE runs ALTER COLUMN options TYPE TEXT USING options::text")
    runs = _runs(sa.Text)
    rows = conn.execute(sa.select(runs.c.id, runs.c.options, runs.c.pid, runs.c.kinds, runs.c.solvers)).all()
    for run_id, text, pid, kinds, solvers in rows:
        options = _document(text)
        if pid is not None:
            options["pid"] = pid
        options.update(kinds=kinds or {}, solvers=solvers or {})
        conn.execute(
            sa.update(runs).where(runs.c.id == run_id).values(options=json.dumps(options, sort_keys=True))
        )
    for column in reversed(MOVED):
        op.drop_column("runs", column)
