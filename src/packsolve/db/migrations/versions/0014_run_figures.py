"""A run's figures kept as its attempts change, so that a run's page never counts a million attempts.

run_figures counts a run's attempts per (kind, heuristic, status) with the sums `report summary`
needs (times, nodes, how many have a time). Triggers on attempts keep it, in the transaction that
changes the attempts, whatever the code path (a worker's results, the local pool, resume, rerun,
cancel, delete):

- on SQLite, one row per group, updated in place (SQLite has one writer at a time);
- on PostgreSQL, each statement on attempts adds one signed row per group it changed, never updating
  a row another transaction may hold: workers writing results of the same run at once would
  otherwise lock the same few rows in different orders and deadlock. Readers add a run's rows up;
  `db.figures.fold` replaces them by their sums now and then.

run_final keeps a finished run's medians and peak memory (a median cannot be kept up as attempts
change, nor a maximum taken back), written when the run is stamped finished.

run_figures is filled here for the runs already in the database; run_final was filled here too,
until 0021 replaced it by run_snapshots, made lazily (an old migration calls no live code).

On SQLite, attempts_text (an FTS5 trigram index of names and messages, kept by triggers) finds the
attempts holding a text, as PostgreSQL's pg_trgm indexes do since 0013.

A later migration that rebuilds attempts on SQLite (batch mode: a copy, then a drop) drops these
triggers with the old table: it must create them again (tests/integration/test_run_figures.py fails
if they are gone).

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

KEY = ("run_id", "kind", "heuristic", "status")
# Each figure of an attempt row X (SQLite's NEW/OLD, or a PostgreSQL transition table's row).
FIGURES = {
    "attempts": "1",
    "wall_n": "CASE WHEN {x}wall_s IS NULL THEN 0 ELSE 1 END",
    "wall_sum": "coalesce({x}wall_s, 0.0)",
    "cpu_n": "CASE WHEN {x}cpu_s IS NULL THEN 0 ELSE 1 END",
    "cpu_sum": "coalesce({x}cpu_s, 0.0)",
    "nodes_sum": "coalesce({x}nodes, 0)",
}
WATCHED = ("run_id", "kind", "heuristic", "status", "wall_s", "cpu_s", "nodes")
# The per-kind medians and maxima read a kind's times in order; the makespan its earliest start.
INDEXES = {
    "ix_attempts_kind_wall": ["run_id", "kind", "wall_s"],
    "ix_attempts_kind_cpu": ["run_id", "kind", "cpu_s"],
    "ix_attempts_run_started": ["run_id", "started_at"],
}


def _columns() -> list[sa.Column]:
    return [
        sa.Column("run_id", sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("heuristic", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("wall_n", sa.Integer(), nullable=False),
        sa.Column("wall_sum", sa.Float(), nullable=False),
        sa.Column("cpu_n", sa.Integer(), nullable=False),
        sa.Column("cpu_sum", sa.Float(), nullable=False),
        sa.Column("nodes_sum", sa.BigInteger(), nullable=False),
    ]


def _sqlite_triggers() -> list[str]:
    def add(x: str) -> str:
        values = ", ".join([f"{x}.{k}" for k in KEY] + [f.format(x=f"{x}.") for f in FIGURES.values()])
        sums = ", ".join(f"{f} = {f} + excluded.{f}" for f in FIGURES)
        return (
            f"INSERT INTO run_figures ({', '.join(KEY + tuple(FIGURES))}) VALUES ({values}) "
            f"ON CONFLICT ({', '.join(KEY)}) DO UPDATE SET {sums};"
        )

    def remove(x: str) -> str:
        where = " AND ".join(f"{k} = {x}.{k}" for k in KEY)
        less = ", ".join(f"{f} = {f} - {e.format(x=f'{x}.')}" for f, e in FIGURES.items())
        empty = f"DELETE FROM run_figures WHERE {where} AND attempts = 0;"
        return f"UPDATE run_figures SET {less} WHERE {where}; {empty}"

    changed = " OR ".join(f"OLD.{c} IS NOT NEW.{c}" for c in WATCHED)
    return [
        f"CREATE TRIGGER run_figures_insert AFTER INSERT ON attempts BEGIN {add('NEW')} END",
        f"CREATE TRIGGER run_figures_delete AFTER DELETE ON attempts BEGIN {remove('OLD')} END",
        f"CREATE TRIGGER run_figures_update AFTER UPDATE OF {', '.join(WATCHED)} ON attempts "
        f"WHEN {changed} BEGIN {remove('OLD')} {add('NEW')} END",
    ]


def _pg_signed(table: str, sign: str) -> str:
    figures = ", ".join(f"{sign}{e.format(x='')} AS {f}" for f, e in FIGURES.items())
    return f"SELECT {', '.join(KEY)}, {figures} FROM {table}"


def _pg_statements() -> list[str]:
    key = ", ".join(KEY)
    sums = ", ".join(f"sum({f})" for f in FIGURES)
    nonzero = " OR ".join(f"sum({f}) <> 0" for f in FIGURES)
    insert = f"INSERT INTO run_figures ({key}, {', '.join(FIGURES)})"

    def delta(source: str) -> str:
        return f"{insert} SELECT {key}, {sums} FROM ({source}) d GROUP BY {key} HAVING {nonzero};"

    function = f"""
CREATE FUNCTION run_figures_delta() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    {delta(_pg_signed("new_rows", ""))}
  ELSIF TG_OP = 'DELETE' THEN
    {delta(_pg_signed("old_rows", "-"))}
  ELSE
    {delta(_pg_signed("new_rows", "") + " UNION ALL " + _pg_signed("old_rows", "-"))}
  END IF;
  RETURN NULL;
END $$"""
    each = "FOR EACH STATEMENT EXECUTE FUNCTION run_figures_delta()"
    on = {
        "insert": "INSERT ON attempts REFERENCING NEW TABLE AS new_rows",
        "delete": "DELETE ON attempts REFERENCING OLD TABLE AS old_rows",
        "update": "UPDATE ON attempts REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows",
    }
    return [function] + [
        f"CREATE TRIGGER run_figures_{op_name} AFTER {what} {each}" for op_name, what in on.items()
    ]


# An external-content FTS5 table: it indexes attempts' name and message without a copy of them.
_FTS_ADD = "INSERT INTO attempts_text(rowid, name, message) VALUES (NEW.id, NEW.name, NEW.message);"
_FTS_DROP = (
    "INSERT INTO attempts_text(attempts_text, rowid, name, message) "
    "VALUES ('delete', OLD.id, OLD.name, OLD.message);"
)
FTS = [
    "CREATE VIRTUAL TABLE attempts_text USING fts5(name, message, content='attempts', "
    "content_rowid='id', tokenize='trigram')",
    f"CREATE TRIGGER attempts_text_insert AFTER INSERT ON attempts BEGIN {_FTS_ADD} END",
    f"CREATE TRIGGER attempts_text_delete AFTER DELETE ON attempts BEGIN {_FTS_DROP} END",
    "CREATE TRIGGER attempts_text_update AFTER UPDATE OF name, message ON attempts "
    f"WHEN OLD.name IS NOT NEW.name OR OLD.message IS NOT NEW.message BEGIN {_FTS_DROP} {_FTS_ADD} END",
    "INSERT INTO attempts_text(attempts_text) VALUES ('rebuild')",
]


def upgrade() -> None:
    postgresql = op.get_bind().dialect.name == "postgresql"
    op.create_table("run_figures", *_columns())
    # Unique on SQLite (one row per group); on PostgreSQL a group has as many rows as changes unfolded.
    op.create_index("ix_run_figures_key", "run_figures", list(KEY), unique=not postgresql)
    op.create_table(
        "run_final",
        sa.Column("run_id", sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("kind", sa.String(64), primary_key=True),
        sa.Column("heuristic", sa.String(64), primary_key=True),
        sa.Column("wall_median", sa.Float()),
        sa.Column("cpu_median", sa.Float()),
        sa.Column("peak_rss_mb", sa.Float()),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=False),
    )
    for name, columns in INDEXES.items():
        op.create_index(name, "attempts", columns)
    # A failing status's example message: found at once, even when none of its many attempts has one.
    said = sa.text("message IS NOT NULL")
    op.create_index(
        "ix_attempts_run_said", "attempts", ["run_id", "status"], sqlite_where=said, postgresql_where=said
    )
    op.execute(_backfill())
    for statement in _pg_statements() if postgresql else _sqlite_triggers():
        op.execute(statement)
    if not postgresql:
        for statement in FTS:
            op.execute(statement)
        op.execute("ANALYZE")  # see 0011: new indexes without statistics mislead SQLite's planner


def _backfill() -> str:
    """Return the statement that fills run_figures from the attempts already there (names only, no values)."""
    figures = ", ".join(f"sum({e.format(x='')})" for e in FIGURES.values())
    key = ", ".join(KEY)
    into = f"INSERT INTO run_figures ({key}, {', '.join(FIGURES)})"
    return f"{into} SELECT {key}, {figures} FROM attempts GROUP BY {key}"


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER run_figures_insert ON attempts")
        op.execute("DROP TRIGGER run_figures_delete ON attempts")
        op.execute("DROP TRIGGER run_figures_update ON attempts")
        op.execute("DROP FUNCTION run_figures_delta()")
    else:
        for statement in (
            "DROP TRIGGER run_figures_insert",
            "DROP TRIGGER run_figures_delete",
            "DROP TRIGGER run_figures_update",
            "DROP TRIGGER attempts_text_insert",
            "DROP TRIGGER attempts_text_delete",
            "DROP TRIGGER attempts_text_update",
            "DROP TABLE attempts_text",
        ):
            op.execute(statement)
    for name in (*INDEXES, "ix_attempts_run_said"):
        op.drop_index(name, "attempts")
    op.drop_table("run_final")
    op.drop_table("run_figures")
