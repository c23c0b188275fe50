"""refusals: one row per (run, level, heuristic, worker host), not per (run, level, host): a run may try a
level with several heuristics (0028), and a task every worker refuses for one of them (a program only
some machines have) must give up that attempt alone, not the level's other heuristics.

The rows there are take the heuristic of their attempt (every run before 0028 holds a level once).
PostgreSQL changes the primary key in place; SQLite, which cannot, makes the table again (Alembic's
batch mode copies the rows). Downgrading keeps one row per (run, level, host): the most recent.

Revision ID: 0029
Revises: 0028
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None

PK = "refusals_pkey"
OLD = ["run_id", "level_hash", "host"]
NEW = ["run_id", "level_hash", "heuristic", "host"]
OWN_HEURISTIC = sa.text(
    "UPDATE refusals SET heuristic = COALESCE((SELECT MIN(a.heuristic) FROM attempts a "
    "WHERE a.run_id = refusals.run_id AND a.level_hash = refusals.level_hash), '')"
)


def upgrade() -> None:
    # Added with a default for the rows there, which then take their attempt's; new rows always name one.
    op.add_column("refusals", sa.Column("heuristic", sa.String(64), nullable=False, server_default=""))
    op.execute(OWN_HEURISTIC)
    _primary_key(NEW, no_default=True)


def downgrade() -> None:
    # Keep the latest refusal of each (run, level, host); the others would collide.
    op.execute(
        sa.text(
            "DELETE FROM refusals WHERE EXISTS (SELECT 1 FROM refusals r WHERE r.run_id = refusals.run_id "
            "AND r.level_hash = refusals.level_hash AND r.host = refusals.host "
            "AND (r.last_at > refusals.last_at "
            "OR (r.last_at = refusals.last_at AND r.heuristic > refusals.heuristic)))"
        )
    )
    _primary_key(OLD)
    with op.batch_alter_table("refusals") as batch:
        batch.drop_column("heuristic")


def _primary_key(columns: list[str], no_default: bool = False) -> None:
    """Make columns the primary key of refusals (and, with no_default, drop heuristic's server default)."""
    if op.get_bind().dialect.name == "postgresql":
        op.drop_constraint(PK, "refusals", type_="primary")
        op.create_primary_key(PK, "refusals", columns)
        if no_default:
            op.alter_column("refusals", "heuristic", server_default=None)
        return
    # SQLite: the table made again with the new key (its primary key is unnamed in the old table).
    with op.batch_alter_table("refusals", recreate="always") as batch:
        batch.create_primary_key(PK, columns)
        if no_default:
            batch.alter_column("heuristic", server_default=None)
