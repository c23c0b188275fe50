"""Alembic migrations run from code: `packsolve db upgrade`, and automatically on first use."""

from __future__ import annotations

import fcntl
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, text

from packsolve.db.models import UNMODELLED, Base, dialect_of

MIGRATIONS = Path(__file__).with_name("migrations")
# Any constant works; it only has to be the same for every packsolve process.
_PG_LOCK_KEY = 0x7061636B


def alembic_config(engine: Engine) -> Config:
    """Return an Alembic config for engine's database with our migrations: no alembic.ini is read."""
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", engine.url.render_as_string(hide_password=False).replace("%", "%%"))
    return cfg


def head_revision(engine: Engine) -> str | None:
    """Return the newest revision the migrations define (None if they define none)."""
    return ScriptDirectory.from_config(alembic_config(engine)).get_current_head()


def current_revision(engine: Engine) -> str | None:
    """Return the revision the database is at; None for a database never migrated."""
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def upgrade(engine: Engine) -> bool:
    """Bring the schema to the newest revision; return True if anything was applied.

    Workers and CLIs may start together: a lock (a PostgreSQL advisory lock, a
    lock file beside an SQLite database) makes the second one wait and then
    find nothing to do.
    """
    head = head_revision(engine)
    if current_revision(engine) == head:
        return False
    with _sqlite_file_lock(engine), engine.connect() as conn, _sqlite_foreign_keys_off(conn):
        cfg = alembic_config(engine)
        with conn.begin():
            if conn.dialect.name == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_LOCK_KEY})
            if MigrationContext.configure(conn).get_current_revision() == head:
                return False
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")
    return True


def include_object(dialect: str) -> Callable[..., bool]:
    """Return Alembic's include_object for a database of dialect: what the models say is there.

    It leaves out the tables the models deliberately do not declare (models.UNMODELLED) and the
    indexes declared for another dialect (models.only_on), which Alembic's compare would otherwise
    report as drift.
    """
    unmodelled = {u.name for u in UNMODELLED if u.dialect == dialect and u.type == "table"}

    def include(item: Any, name: str | None, type_: str, reflected: bool, compare_to: Any) -> bool:
        if type_ == "table" and name in unmodelled:
            return False
        if reflected:  # what the database holds is always compared
            return True
        declared = dialect_of(item)
        return declared is None or declared == dialect

    return include


def drift(engine: Engine) -> list[Any]:
    """Return Alembic's differences between the models and engine's database: [] when they agree."""
    with engine.connect() as conn:
        context = MigrationContext.configure(
            conn, opts={"include_object": include_object(conn.dialect.name), "compare_type": True}
        )
        return compare_metadata(context, Base.metadata)  # type: ignore[no-any-return]


@contextmanager
def _sqlite_foreign_keys_off(conn: Connection) -> Iterator[None]:
    """Turn SQLite's foreign keys off on conn for the migrations, on again after; do nothing elsewhere.

    A table rebuilt in batch mode is dropped and copied: with foreign keys on, the drop would
    cascade into the rows that reference it. The pragma only works outside a transaction.
    """
    if conn.dialect.name != "sqlite":
        yield
        return
    conn.exec_driver_sql("PRAGMA foreign_keys=OFF")
    conn.commit()
    try:
        yield
    finally:
        conn.rollback()
        conn.exec_driver_sql("PRAGMA foreign_keys=ON")
        conn.commit()


@contextmanager
def _sqlite_file_lock(engine: Engine) -> Iterator[None]:
    """Hold an exclusive lock on DB.migrate-lock for an SQLite file database; do nothing otherwise.

    SQLite has no advisory locks, and two processes creating the schema at once
    would both find it missing and collide on CREATE TABLE.
    """
    db = engine.url.database
    if engine.dialect.name != "sqlite" or not db or db == ":memory:":
        yield
        return
    with open(f"{db}.migrate-lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
