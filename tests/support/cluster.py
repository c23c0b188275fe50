"""A packsolve cluster inside this machine: a server host, worker hosts and a client host on one switch.

    with cluster() as c:                              # namespaces, servers: about 10 s
        with c.deployment("redis", "demo") as d:      # a fresh database (+ audit) and queue or vhost
            d.start_workers()                         # `packsolve worker` on every worker host
            d.start_scheduler(grace_s=3)              # `packsolve scheduler` on the server host
            run_id = d.submit(pack, "--time-limit", "5")   # from the client host
            c.net.partition("w2"); ...; c.net.heal("w2")
            d.wait_finished(run_id)

The server host runs its own redis-server, PostgreSQL and RabbitMQ node (tests/support/cluster_servers.py);
every packsolve process reaches them over the veths (tests/support/netns.py), so a partition, a
slow link or a frozen host acts on real connections. The test process stays outside the
namespaces and watches through Unix sockets. The pytest fixture `netns_cluster` (marker `netns`)
builds one cluster per session, on first use; each test takes a deployment of its own, whose end stops its
processes and undoes every damage. Everything is torn down even if the test process is killed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine

from tests.support.cluster_audit import install_audit
from tests.support.cluster_servers import PG_BIN, PostgresServer, RabbitNode, RedisServer
from tests.support.kinds import chaos_kind
from tests.support.netns import Host, Network, network
from tests.support.services import ROOT, child_env, unavailable
from tests.support.waiting import wait_until

BROKERS = ("redis", "rabbitmq")


class HostWorker:
    """A real `packsolve worker` running inside a worker host."""

    def __init__(self, host: Host, env: dict[str, str], log: Path, concurrency: int) -> None:
        self.host = host
        self.hostname = f"{host.name}@cluster"
        self.log_path = log
        argv = [
            sys.executable,
            "-m",
            "packsolve",
            "worker",
            "-c",
            str(concurrency),
            "-n",
            self.hostname,
            "-l",
            "INFO",
        ]
        self.proc = host.popen(argv, log, env=env, cwd=ROOT)

    def ready(self) -> bool:
        if self.proc.poll() is not None:
            raise RuntimeError(f"worker {self.hostname} exited early:\n{self.log()[-3000:]}")
        return " ready." in self.log()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


class Deployment:
    """One test's packsolve on the cluster: its database, its queue or vhost, its processes."""

    def __init__(self, cluster: Cluster, broker: str, name: str) -> None:
        if broker not in BROKERS:
            raise ValueError(f"broker must be one of {BROKERS}")
        self.cluster = cluster
        self.broker = broker
        self.name = f"{name}-{broker}-{uuid.uuid4().hex[:6]}"
        self.logs = cluster.net.state / "logs" / self.name
        self.logs.mkdir(parents=True)
        pg = cluster.pg
        self.database = "ps_" + uuid.uuid4().hex[:12]
        pg.admin(f'CREATE DATABASE "{self.database}"')
        self.observer_url = pg.observer_url(self.database)
        self.engine = create_engine(self.observer_url, pool_pre_ping=True)
        self.vhost: str | None = None
        if broker == "rabbitmq":
            self.vhost = "ps-" + uuid.uuid4().hex[:10]
            broker_url = cluster.rabbit.add_vhost(self.vhost)
        else:
            broker_url = cluster.redis.url
        self.queue = "packsolve-" + uuid.uuid4().hex[:8]
        self.env = {
            "PACKSOLVE_DATABASE_URL": pg.url(self.database),
            "PACKSOLVE_BROKER_URL": broker_url,
            "PACKSOLVE_QUEUE": self.queue,
            "PACKSOLVE_EXTRA_KINDS": chaos_kind.ENV,
        }
        self.workers: list[HostWorker] = []
        self.scheduler: subprocess.Popen | None = None
        res = self.cli("db", "upgrade")
        if res.returncode != 0:
            raise RuntimeError(f"db upgrade failed: {res.stderr}")
        install_audit(self.observer_url)

    def host_env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        return child_env({**self.env, **(extra or {})})

    def cli(
        self, *args: str, host: Host | None = None, timeout: float = 120, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess:
        """Run `packsolve ARGS` on a host (default the client) and wait for it."""
        host = host or self.cluster.client
        argv = [sys.executable, "-m", "packsolve", *args]
        return host.run(argv, check=False, timeout=timeout, env=self.host_env(env), cwd=ROOT)

    def start_workers(
        self, concurrency: int = 2, env: dict[str, str] | None = None, timeout: float = 90
    ) -> None:
        """Start one `packsolve worker` on every worker host; wait until all are ready."""
        for host in self.cluster.worker_hosts:
            log = self.logs / f"{host.name}.log"
            self.workers.append(HostWorker(host, self.host_env(env), log, concurrency))
        for w in self.workers:
            if not wait_until(w.ready, timeout):
                raise TimeoutError(f"worker {w.hostname} not ready after {timeout} s:\n{w.log()[-3000:]}")

    def worker(self, hostname: str) -> HostWorker:
        return next(w for w in self.workers if w.hostname == hostname)

    def start_scheduler(
        self, grace_s: float, interval_s: float = 1.0, env: dict[str, str] | None = None
    ) -> None:
        """Run `packsolve scheduler` on the server host for the rest of the deployment."""
        argv = [
            sys.executable,
            "-m",
            "packsolve",
            "scheduler",
            "--grace",
            str(grace_s),
            "--interval",
            str(interval_s),
        ]
        self.scheduler = self.cluster.server.popen(
            argv, self.logs / "scheduler.log", env=self.host_env(env), cwd=ROOT
        )

    def submit(self, pack: Path, *args: str, timeout: float = 120) -> int:
        """Submit a pack from the client host; return the run id (RuntimeError if submit failed)."""
        res = self.cli("submit", str(pack), *args, timeout=timeout)
        if res.returncode != 0:
            raise RuntimeError(f"submit failed ({res.returncode}): {res.stderr[-3000:]}")
        return int(res.stdout.strip().splitlines()[-1])

    def finished(self, run_id: int) -> bool:
        from sqlalchemy import text

        try:
            with self.engine.connect() as conn:
                return conn.execute(
                    text("SELECT finished_at IS NOT NULL FROM runs WHERE id = :r"), {"r": run_id}
                ).scalar_one()
        except Exception:  # the database is down for the moment
            return False

    def wait_finished(self, run_id: int, timeout: float) -> bool:
        """Wait until the run is stamped finished; return whether it was within timeout."""
        return wait_until(lambda: self.finished(run_id), timeout, every=0.25)

    def logs_text(self) -> dict[str, str]:
        return {p.name: p.read_text(errors="replace") for p in sorted(self.logs.glob("*.log"))}

    def close(self) -> None:
        """Undo every damage, stop this deployment's processes, drop its database, queue or vhost."""
        net = self.cluster.net
        for name in list(net.frozen):
            net.thaw(name)
        for name in list(net.cut):
            net.heal(name)
        for host in self.cluster.worker_hosts + [self.cluster.client]:
            net.unshape(host.name)
        if self.scheduler is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.scheduler.pid, signal.SIGKILL)
            self.scheduler.wait(10)
        for host in self.cluster.worker_hosts + [self.cluster.client]:
            # Whatever this test started there (workers, their pools and solver children).
            for pid in host.pids():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            wait_until(lambda host=host: not host.pids(), 20, every=0.1)
        self.engine.dispose()
        if self.cluster.pg.proc.poll() is not None:
            self.cluster.pg.start()
        self.cluster.pg.admin(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')
        if self.vhost is not None:
            self.cluster.rabbit.delete_vhost(self.vhost)
        else:
            self.cluster.redis.client().flushall()  # our own Redis: the next deployment starts empty


class Cluster:
    """The hosts and the server's services; see the module docstring."""

    def __init__(self, net: Network, worker_hosts: int = 3) -> None:
        self.net = net
        self.server = net.add_host("server")
        self.worker_hosts = [net.add_host(f"w{i + 1}") for i in range(worker_hosts)]
        self.client = net.add_host("client")
        net.wait_linked()
        self.redis = RedisServer(self.server, net.state)
        self.pg = PostgresServer(self.server, net.state)
        self.rabbit = RabbitNode(self.server, net.state)

    @contextlib.contextmanager
    def deployment(self, broker: str, name: str) -> Iterator[Deployment]:
        d = Deployment(self, broker, name)
        try:
            yield d
        finally:
            d.close()


@contextlib.contextmanager
def cluster(worker_hosts: int = 3) -> Iterator[Cluster]:
    """Yield a Cluster; everything it made is gone afterwards, even if the block fails."""
    started = time.monotonic()
    with network() as net:
        c = Cluster(net, worker_hosts)
        c.built_s = time.monotonic() - started  # type: ignore[attr-defined]
        yield c


@pytest.fixture(scope="session")
def _netns_cluster_session() -> Iterator[Cluster]:
    """Build the cluster once per session (on first use); a machine that cannot fails under CI, else skips."""
    from tests.support.netns import NetnsUnavailable

    missing = [b for b in ("redis-server", "rabbitmq-server") if shutil.which(b) is None]
    if not (PG_BIN / "initdb").exists():
        missing.append(str(PG_BIN / "initdb"))
    if missing:
        unavailable("the network cluster", f"missing {', '.join(missing)}")
    try:
        with cluster() as c:
            yield c
    except NetnsUnavailable as exc:
        unavailable("the network cluster", str(exc))


@pytest.fixture
def netns_cluster(_netns_cluster_session: Cluster, request: pytest.FixtureRequest) -> Cluster:
    """The session's cluster of network namespaces (a test using it must be marked netns)."""
    if request.node.get_closest_marker("netns") is None:
        pytest.fail(
            f"{request.node.nodeid} uses the network cluster but is not marked 'netns'", pytrace=False
        )
    return _netns_cluster_session
