"""The server host's own services: redis-server, a PostgreSQL instance and a RabbitMQ node.

Each listens on the server host's address inside its namespace, where the ports (6379, 5432,
5672, epmd's 4369) are free whatever runs on the machine itself. The hosts reach them over their
veths; the test process, which stays outside every namespace, watches through Unix sockets in
the state directory (Redis, PostgreSQL) or `rabbitmqctl` run inside the server host, so what it
observes is never cut off by the damage it does.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from tests.support.netns import Host

PG_BIN = Path(os.environ.get("PACKSOLVE_PG_BIN", "/usr/lib/postgresql/15/bin"))
RABBITMQ_SBIN = Path("/usr/lib/rabbitmq/bin")


def _wait(check, what: str, timeout: float, proc: subprocess.Popen | None = None, log: Path | None = None):
    """Poll check() until it is true; raise RuntimeError naming what (with the log) on timeout or exit."""
    deadline = time.monotonic() + timeout
    while not check():
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what} exited ({proc.returncode}): {log.read_text()[-3000:] if log else ''}")
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"{what} not ready after {timeout} s: {log.read_text()[-3000:] if log else ''}"
            )
        time.sleep(0.1)


class RedisServer:
    """A redis-server on the host (no persistence: a restart forgets its queue, as in the chaos tests)."""

    def __init__(self, host: Host, state: Path) -> None:
        self.host = host
        self.dir = state / "redis"
        self.dir.mkdir()
        self.socket = self.dir / "redis.sock"
        self.url = f"redis://{host.address}:6379/0"
        self.observer_url = f"unix://{self.socket}?db=0"
        self.start()

    def start(self) -> None:
        binary = shutil.which("redis-server") or "redis-server"
        argv = [
            binary,
            "--bind",
            self.host.address,
            "--port",
            "6379",
            "--unixsocket",
            str(self.socket),
            "--unixsocketperm",
            "700",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(self.dir),
            "--maxmemory-policy",
            "noeviction",
            # Reached only from the cluster's own hosts, inside namespaces nothing else can enter.
            "--protected-mode",
            "no",
        ]
        self.proc = self.host.popen(argv, self.dir / "redis.log")
        _wait(self.ping, "redis-server", 20, self.proc, self.dir / "redis.log")

    def ping(self) -> bool:
        import redis

        try:
            return bool(redis.Redis.from_url(self.observer_url, socket_timeout=2).ping())
        except redis.RedisError:
            return False

    def client(self):
        import redis

        return redis.Redis.from_url(self.observer_url, socket_timeout=10)


class PostgresServer:
    """A PostgreSQL instance of our own (initdb, postgres), run as the postgres user inside the host."""

    def __init__(self, host: Host, state: Path) -> None:
        self.host = host
        self.dir = state / "pg"
        self.data = self.dir / "data"
        self.sockets = self.dir / "sock"
        self.sockets.mkdir(parents=True)
        self.log = self.dir / "postgres.log"
        shutil.chown(self.dir, "postgres", "postgres")
        shutil.chown(self.sockets, "postgres", "postgres")
        initdb = [
            str(PG_BIN / "initdb"),
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "-A",
            "trust",
            "--no-sync",
            "-E",
            "UTF8",
            "--locale",
            "C",
        ]
        res = subprocess.run(
            ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", *initdb],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if res.returncode != 0:
            raise RuntimeError(f"initdb failed: {res.stderr}")
        with open(self.data / "pg_hba.conf", "a") as hba:
            hba.write("host all all 10.210.0.0/24 trust\n")
        self.start()

    def url(self, database: str) -> str:
        """Return the URL the hosts use (over their links)."""
        return f"postgresql+psycopg://postgres@{self.host.address}:5432/{database}"

    def observer_url(self, database: str) -> str:
        """Return the URL the test process uses (the Unix socket: never cut by a partition)."""
        return f"postgresql+psycopg://postgres@/{database}?host={self.sockets}"

    def start(self) -> None:
        argv = [
            str(PG_BIN / "postgres"),
            "-D",
            str(self.data),
            "-c",
            f"listen_addresses={self.host.address}",
            "-c",
            f"unix_socket_directories={self.sockets}",
            "-c",
            "port=5432",
            "-c",
            "fsync=off",
            "-c",
            "max_connections=200",
            "-c",
            "shared_buffers=32MB",
        ]
        self.proc = self.host.popen(argv, self.log, user="postgres")
        _wait(self.ready, "postgres", 60, self.proc, self.log)

    def ready(self) -> bool:
        res = subprocess.run(
            [str(PG_BIN / "pg_isready"), "-q", "-h", str(self.sockets), "-p", "5432", "-U", "postgres"],
            capture_output=True,
        )
        return res.returncode == 0

    def stop(self, mode: str = "immediate") -> None:
        """Stop the server: immediate (SIGQUIT: a crash, recovered at the next start) or fast (SIGINT)."""
        sig = {"immediate": signal.SIGQUIT, "fast": signal.SIGINT, "smart": signal.SIGTERM}[mode]
        self.proc.send_signal(sig)
        self.proc.wait(60)

    def restart(self, mode: str = "immediate", down_s: float = 3.0) -> None:
        self.stop(mode)
        time.sleep(down_s)
        self.start()

    def admin(self, sql: str, database: str = "postgres") -> None:
        """Run statements as the superuser through the Unix socket (autocommit)."""
        import psycopg

        with psycopg.connect(
            host=str(self.sockets), dbname=database, user="postgres", autocommit=True
        ) as conn:
            conn.execute(sql)


def rabbit_env(directory: Path, node: str) -> dict[str, str]:
    """Return the environment of a RabbitMQ node of our own: its name, and everything under directory.

    Writes directory's empty rabbitmq-env.conf and enabled_plugins; rabbitmq.conf is the caller's.
    """
    (directory / "rabbitmq-env.conf").write_text("")
    (directory / "enabled_plugins").write_text("[].\n")
    return {
        "PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
        "HOME": str(directory),  # the Erlang cookie: ours, not the machine node's
        "LANG": "C.UTF-8",
        "RABBITMQ_CONF_ENV_FILE": str(directory / "rabbitmq-env.conf"),
        "RABBITMQ_CONFIG_FILE": str(directory / "rabbitmq.conf"),
        "RABBITMQ_NODENAME": node,
        "RABBITMQ_MNESIA_BASE": str(directory / "mnesia"),
        "RABBITMQ_LOG_BASE": str(directory / "log"),
        "RABBITMQ_ENABLED_PLUGINS_FILE": str(directory / "enabled_plugins"),
        "RABBITMQ_PID_FILE": str(directory / "rabbit.pid"),
    }


class RabbitNode:
    """A RabbitMQ node of our own: node name, mnesia, logs and Erlang cookie under the state directory.

    The machine's own node keeps running: ours is inside the server's namespace, so its epmd and
    ports do not meet the machine's. `loopback_users = none` lets guest in from the other hosts.
    """

    NODE = "psn@localhost"

    def __init__(self, host: Host, state: Path) -> None:
        self.host = host
        self.dir = state / "rabbitmq"
        (self.dir / "mnesia").mkdir(parents=True)
        (self.dir / "log").mkdir()
        (self.dir / "rabbitmq.conf").write_text(
            "loopback_users = none\nlisteners.tcp.default = 5672\n"
            # The disk is shared with the whole machine: do not stop publishers over its free space.
            "disk_free_limit.absolute = 1MB\n"
        )
        self.env = rabbit_env(self.dir, self.NODE)
        self.proc = host.popen(
            [str(RABBITMQ_SBIN / "rabbitmq-server")], self.dir / "server.log", env=self.env, cwd=self.dir
        )
        log = self.dir / "server.log"

        def started() -> bool:
            # await_startup fails at once until the node has registered with epmd: ask again.
            try:
                self.ctl("await_startup", timeout=60)
                return True
            except RuntimeError:
                return False

        _wait(started, "rabbitmq-server", 120, self.proc, log)

    def ctl(self, *args: str, timeout: float = 60) -> str:
        """Run rabbitmqctl against this node (inside the server host); return its output."""
        argv = [str(RABBITMQ_SBIN / "rabbitmqctl"), "-n", self.NODE, *args]
        res = self.host.run(argv, check=False, timeout=timeout, env=self.env, cwd=self.dir)
        if res.returncode != 0:
            raise RuntimeError(
                f"rabbitmqctl {' '.join(args)} failed: {res.stderr.strip()} {res.stdout.strip()}"
            )
        return res.stdout

    def add_vhost(self, vhost: str) -> str:
        """Create a vhost with guest's permissions; return the broker URL the hosts use."""
        self.ctl("add_vhost", vhost)
        self.ctl("set_permissions", "-p", vhost, "guest", ".*", ".*", ".*")
        return f"amqp://guest:guest@{self.host.address}:5672/{vhost}"

    def delete_vhost(self, vhost: str) -> None:
        self.ctl("delete_vhost", vhost)

    def queue_depths(self, vhost: str) -> dict[str, tuple[int, int]]:
        """Return {queue: (ready, unacknowledged)} in a vhost."""
        out = self.ctl(
            "list_queues",
            "-p",
            vhost,
            "-q",
            "--no-table-headers",
            "name",
            "messages_ready",
            "messages_unacknowledged",
        )
        depths = {}
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3:
                depths[parts[0]] = (int(parts[1]), int(parts[2]))
        return depths
