"""Engines and sessions: settings from the environment, SQLite tuned for concurrency, auto-migration."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

DEFAULT_DB_FILE = "packsolve.db"


def database_url(url: str | None = None) -> str:
    """Return the database URL: the argument, else PACKSOLVE_DATABASE_URL, else ./packsolve.db."""
    url = url or os.environ.get("PACKSOLVE_DATABASE_URL")
    if not url:
        return f"sqlite:///{Path.cwd() / DEFAULT_DB_FILE}"
    # Plain postgresql:// URLs get the psycopg 3 driver we depend on (SQLAlchemy defaults to psycopg2).
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        url = "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


def safe_url(url: str) -> str:
    """Return url with any password masked, for logs and reports."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "<unparseable database URL>"


_SECRET_IN_URL = re.compile(r"(\b[a-zA-Z][\w+.-]*://[^:/@\s]*:)\S+@")


def redact(text: str) -> str:
    """Return text with the password of every URL in it masked (for argv stored on a run, logs)."""
    return _SECRET_IN_URL.sub(r"\1***@", text)


_engines: dict[tuple[int, str, bool], Engine] = {}


def get_engine(url: str | None = None, migrate: bool = True, pre_ping: bool = True) -> Engine:
    """Return this process's engine for url (one per process: engines must not cross a fork).

    pre_ping=False is for callers that retry a transaction on a dropped connection
    themselves (the worker): it saves a round trip per transaction.
    """
    url = database_url(url)
    key = (os.getpid(), url, pre_ping)
    engine = _engines.get(key)
    if engine is None:
        engine = make_engine(url, pre_ping)
        if migrate:
            from packsolve.db.migrate import upgrade

            upgrade(engine)
        _engines[key] = engine
    return engine


def forget_engines() -> None:
    """Drop this process's engines without closing them: for a forked child, whose pooled
    connections belong to its parent and must never be used (or closed) from here."""
    _engines.clear()


def make_engine(url: str, pre_ping: bool = True) -> Engine:
    """Return a new engine; SQLite gets WAL and a busy timeout so several writers can share it."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        db = parsed.database
        if db and db != ":memory:":
            Path(db).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"timeout": 60})

        @event.listens_for(engine, "connect")
        def _tune(dbapi_conn, _record):  # type: ignore[no-untyped-def]
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA busy_timeout=60000")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        return engine
    # pre_ping replaces connections the server dropped (restarts, pg_terminate_backend).
    return create_engine(url, pool_pre_ping=pre_ping, pool_size=5, max_overflow=5, pool_recycle=1800)


@contextmanager
def session_scope(engine: Engine) -> Iterator[Session]:
    """Yield a session that commits on success and rolls back on any exception."""
    factory = sessionmaker(engine, expire_on_commit=False)
    session = factory()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()
