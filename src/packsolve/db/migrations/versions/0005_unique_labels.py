"""A label names one run: old duplicates and all-digit labels are renamed, then labels are unique.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

runs = sa.table("runs", sa.column("id", sa.Integer), sa.column("label", sa.String))


def new_labels(rows: list[tuple[int, str]]) -> dict[int, str]:
    """Return {run id: new label} for the runs whose label must change, given (id, label) of labelled runs.

    The newest run keeps a label used twice (it is the one `RUN` found before);
    older ones become LABEL-ID. An all-digit label, which always read as a run
    id, becomes run-LABEL. A new label taken already gets -2, -3, ... appended.
    """
    taken = {label for _, label in rows}
    kept: set[str] = set()
    out: dict[int, str] = {}
    for run_id, label in sorted(rows, reverse=True):  # newest first
        wanted = label
        if label.isdigit() or label == "latest":
            wanted = f"run-{label}"
        elif label in kept:
            wanted = f"{label}-{run_id}"
        if wanted != label:
            base, n = wanted, 2
            while wanted in taken:
                wanted, n = f"{base}-{n}", n + 1
            taken.add(wanted)
            out[run_id] = wanted
        kept.add(wanted)
    return out


def upgrade() -> None:
    conn = op.get_bind()
    rows = [(i, label) for i, label in conn.execute(sa.select(runs.c.id, runs.c.label)) if label is not None]
    for run_id, label in new_labels(rows).items():
        conn.execute(runs.update().where(runs.c.id == run_id).values(label=label))
    # NULL labels stay many: SQLite and PostgreSQL both let a unique index hold several NULLs.
    op.create_index("uq_runs_label", "runs", ["label"], unique=True)


def downgrade() -> None:
    op.drop_index("uq_runs_label", "runs")
