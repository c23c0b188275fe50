"""Engines and sessions: the URL the settings give, SQLite tuned for concurrency, auto-migration."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError
from sqlalchemy.orm import Session, sessionmaker

from packsolve.errors import DatabaseUrlError, NoDatabase
from packsolve.masking import mask_url

DEFAULT_DB_FILE = "packsolve.db"
# The databases packsolve's queries are written and tested for.
BACKENDS = ("sqlite", "postgresql")
WHAT_WORKS = "write sqlite:///PATH/results.db (a file) or postgresql://USER@HOST/DATABASE"
FROM_WHERE = "--database-url or PACKSOLVE_DATABASE_URL"


def database_url(url: str | None = None) -> str:
    """Return the database URL to connect to: url (the settings' database_url), else ./packsolve.db.

    The caller gives the value its Settings resolved (flag, PACKSOLVE_DATABASE_URL,
    ./packsolve.toml): nothing here reads the environment.
    """
    if not url:
        return f"sqlite:///{Path.cwd() / DEFAULT_DB_FILE}"
    # Plain postgresql:// URLs get the psycopg 3 driver we depend on (SQLAlchemy defaults to psycopg2).
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        url = "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


def shown_database(url: str | URL) -> str:
    """Return how to name a database to a user: an SQLite file's path, else the URL without password."""
    text = url.render_as_string(hide_password=False) if isinstance(url, URL) else url
    try:
        path = sqlite_file(text)
    except ArgumentError:
        return "<unparseable database URL>"
    return str(path) if path is not None else mask_url(text)


def checked_url(url: str) -> URL:
    """Return url parsed; raise DatabaseUrlError saying what would work if it names no usable database."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        shown = url if "@" not in url else "…@" + url.rsplit("@", 1)[1]
        raise DatabaseUrlError(f"{shown!r} is not a database URL ({FROM_WHERE}): {WHAT_WORKS}") from None
    backend = parsed.get_backend_name()
    if backend not in BACKENDS:
        raise DatabaseUrlError(
            f"{mask_url(url)}: packsolve keeps results in SQLite or PostgreSQL, not {backend!r} "
            f"({FROM_WHERE}): {WHAT_WORKS}"
        )
    return parsed


def sqlite_file(url: str) -> Path | None:
    """Return the file of an SQLite URL (None for another database or an in-memory one)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(parsed.database)


_engines: dict[tuple[int, str, bool, bool, bool], Engine] = {}
# The execution option marking an engine opened read-only (read_only() tells it to the cache writers).
READ_ONLY = "packsolve_read_only"


def get_engine(
    url: str | None = None,
    migrate: bool = True,
    pre_ping: bool = True,
    create: bool = True,
    service: bool = False,
    read_only: bool = False,
) -> Engine:
    """Return this process's engine for url (None: ./packsolve.db; one per process: engines must not
    cross a fork).

    pre_ping=False is for callers that retry a transaction on a dropped connection
    themselves (the worker): it saves a round trip per transaction. service=True
    (the scheduler; the worker's engines always) bounds on PostgreSQL how long a
    session may sit idle inside a transaction or wait for a lock (SERVICE_*).
    create=False is for commands that must find the database: they raise NoDatabase
    rather than create an SQLite file (or its directories) that does not exist.
    read_only=True (implies create=False, no migration) is for commands that only
    read: SQLite is opened with mode=ro, PostgreSQL sessions are read-only; a database
    without packsolve's tables raises NoDatabase, one of an older release is upgraded first.
    A URL that cannot work raises DatabaseUrlError.
    """
    url = database_url(url)
    checked_url(url)
    path = sqlite_file(url)
    if (read_only or not create) and path is not None and not path.is_file():
        raise NoDatabase(
            f"no database at {path}: nothing has been solved with it yet; run `packsolve solve PACK` "
            f"here first, or point {FROM_WHERE} at your results"
        )
    service = service or not pre_ping
    key = (os.getpid(), url, pre_ping, service, read_only)
    engine = _engines.get(key)
    if engine is None:
        engine = make_engine(url, pre_ping, service, read_only)
        if read_only:
            _check_schema(engine, url, pre_ping, service)
        elif migrate:
            from packsolve.db.migrate import upgrade

            upgrade(engine)
        _engines[key] = engine
    return engine


def read_only(db: Session | Connection | Engine) -> bool:
    """Return True if db was opened read-only (get_engine(read_only=True)): nothing may be written."""
    bind = db.get_bind() if isinstance(db, Session) else db
    return bool(bind.get_execution_options().get(READ_ONLY))


def _check_schema(engine: Engine, url: str, pre_ping: bool, service: bool) -> None:
    """Raise NoDatabase if engine's database has no packsolve schema; upgrade an older one first.

    The upgrade is the one write a read-only command makes, as every command makes it on
    first use after a new release: through an engine of its own, closed after.
    """
    from packsolve.db.migrate import current_revision, head_revision, upgrade

    current = current_revision(engine)
    if current == head_revision(engine):
        return
    if current is None:
        raise NoDatabase(
            f"no packsolve database at {shown_database(engine.url)}: run `packsolve solve PACK` first, "
            f"or point {FROM_WHERE} at your results"
        )
    writer = make_engine(url, pre_ping, service)
    try:
        upgrade(writer)
    finally:
        writer.dispose()


def forget_engines() -> None:
    """Drop this process's engines without closing them: for a forked child, whose pooled
    connections belong to its parent and must never be used (or closed) from here."""
    _engines.clear()


# Workers and schedulers never pause inside a transaction (each is a few statements sent back to
# back). One frozen (SIGSTOP) or cut off between a statement and COMMIT would hold its rows locked,
# and another scheduler (which skips locked rows) could not take them back: the server ends such a
# session after this long instead, and a statement of theirs waits at most this long for a lock.
SERVICE_IDLE_IN_TRANSACTION_MS = 5000
SERVICE_LOCK_TIMEOUT_MS = 5000
# Every connection to PostgreSQL has TCP keepalives: a peer gone without a word (a machine lost, a
# cable cut) is noticed in about idle + interval × count seconds, not the system's two hours.
KEEPALIVES = {"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5, "keepalives_count": 3}


def make_engine(url: str, pre_ping: bool = True, service: bool = False, read_only: bool = False) -> Engine:
    """Return a new engine; SQLite gets WAL and a busy timeout so several writers can share it.

    service: bound idle transactions and lock waits on PostgreSQL (see get_engine). read_only:
    an SQLite file opened with mode=ro (nothing created), read-only PostgreSQL sessions.
    Raise DatabaseUrlError for a URL that cannot work (no scheme, another database, a driver not installed).
    """
    parsed = checked_url(url)
    marked = {"execution_options": {READ_ONLY: True}} if read_only else {}
    if parsed.get_backend_name() == "sqlite":
        db = parsed.database
        options: dict[str, object] = {"connect_args": {"timeout": 60}}
        if read_only and db and db != ":memory:":
            uri = f"{Path(db).resolve().as_uri()}?mode=ro"
            options = {"creator": lambda: sqlite3.connect(uri, uri=True, timeout=60, check_same_thread=False)}
        elif db and db != ":memory:":
            Path(db).parent.mkdir(parents=True, exist_ok=True)
        engine = _create(url, **options, **marked)

        @event.listens_for(engine, "connect")
        def _tune(dbapi_conn, _record):  # type: ignore[no-untyped-def]
            cur = dbapi_conn.cursor()
            if not read_only:  # a read-only connection cannot change the journal; a writer set it
                cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA busy_timeout=60000")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        return engine
    # pre_ping replaces connections the server dropped (restarts, pg_terminate_backend).
    connect_args: dict[str, object] = dict(KEEPALIVES)
    settings = []
    if service:
        settings += [
            f"-c idle_in_transaction_session_timeout={SERVICE_IDLE_IN_TRANSACTION_MS}",
            f"-c lock_timeout={SERVICE_LOCK_TIMEOUT_MS}",
        ]
    if read_only:
        settings.append("-c default_transaction_read_only=on")
    if settings:
        connect_args["options"] = " ".join(settings)
    return _create(
        url,
        pool_pre_ping=pre_ping,
        pool_size=5,
        max_overflow=5,
        pool_recycle=1800,
        connect_args=connect_args,
        **marked,
    )


def _create(url: str, **options: object) -> Engine:
    """Return create_engine(url); raise DatabaseUrlError if its driver is not installed."""
    try:
        return create_engine(url, **options)  # type: ignore[arg-type]
    except (ModuleNotFoundError, NoSuchModuleError) as exc:
        driver = make_url(url).get_driver_name()
        hint = "postgresql://USER@HOST/DATABASE (psycopg 3, installed with packsolve)"
        if make_url(url).get_backend_name() == "sqlite":
            hint = "sqlite:///PATH/results.db"
        raise DatabaseUrlError(
            f"{mask_url(url)}: its driver {driver!r} is not installed ({exc}); write {hint}"
        ) from None


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
