"""Alembic environment: uses the connection packsolve hands over, or the configured URL."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, create_engine

from packsolve.db.migrate import include_object
from packsolve.db.models import Base

config = context.config
target_metadata = Base.metadata


def _configure(conn: Connection) -> None:
    """Configure the context on conn, comparing (alembic check) only what the models say is there."""
    context.configure(
        connection=conn,
        target_metadata=target_metadata,
        render_as_batch=True,
        include_object=include_object(conn.dialect.name),
    )


def run() -> None:
    """Run the migrations on the connection packsolve handed over, else on the configured URL."""
    conn = config.attributes.get("connection")
    if conn is not None:
        _configure(conn)
        with context.begin_transaction():
            context.run_migrations()
        return
    url = config.get_main_option("sqlalchemy.url")
    if not url:
        raise RuntimeError("no database URL: run migrations through `packsolve db upgrade`")
    engine = create_engine(url)
    with engine.begin() as conn:
        _configure(conn)
        with context.begin_transaction():
            context.run_migrations()


if context.is_offline_mode():
    context.configure(url=config.get_main_option("sqlalchemy.url"), target_metadata=target_metadata)
    with context.begin_transaction():
        context.run_migrations()
else:
    run()
