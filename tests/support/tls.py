"""Servers that speak only TLS, with certificates from a CA the test makes: Redis, RabbitMQ, PostgreSQL.

Each listens on 127.0.0.1 at a free port, keeps its state in the test's directory and is its own
instance (never the machine's services, never reconfigured): a redis-server with only a TLS
port, a RabbitMQ node of its own name, cookie, mnesia and ports with only an SSL listener, a
PostgreSQL cluster of its own (initdb) that accepts only TLS connections (``hostssl``).
The certificates come from the ``openssl`` command.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.support.cluster_servers import PG_BIN, RABBITMQ_SBIN, _wait, rabbit_env

HOST = "127.0.0.1"


@dataclass(frozen=True)
class Certificates:
    """A test CA and a server certificate it signed for 127.0.0.1 and localhost."""

    ca: Path
    cert: Path
    key: Path


def make_certificates(directory: Path, name: str = "packsolve test CA") -> Certificates:
    """Write a CA and a server key and certificate signed by it into directory; return their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key, ca, key, csr, cert = (
        directory / f for f in ("ca.key", "ca.pem", "server.key", "server.csr", "server.pem")
    )
    ext = directory / "server.ext"
    ext.write_text("subjectAltName = IP:127.0.0.1, DNS:localhost\nextendedKeyUsage = serverAuth\n")

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)

    openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        str(ca_key),
        "-out",
        str(ca),
        "-days",
        "2",
        "-subj",
        f"/CN={name}",
    )
    openssl(
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        str(key),
        "-out",
        str(csr),
        "-subj",
        "/CN=localhost",
    )
    openssl(
        "x509",
        "-req",
        "-in",
        str(csr),
        "-CA",
        str(ca),
        "-CAkey",
        str(ca_key),
        "-CAcreateserial",
        "-out",
        str(cert),
        "-days",
        "2",
        "-extfile",
        str(ext),
    )
    return Certificates(ca, cert, key)


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _tls_accepts(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=1):
            return True
    except OSError:
        return False


class TlsRedis:
    """A redis-server with only a TLS port (no plain one), clients not asked for certificates."""

    def __init__(self, state: Path, certs: Certificates) -> None:
        self.dir = state / "redis-tls"
        self.dir.mkdir(parents=True)
        self.port = free_port()
        log = self.dir / "redis.log"
        argv = [
            shutil.which("redis-server") or "redis-server",
            "--bind",
            HOST,
            "--port",
            "0",
            "--tls-port",
            str(self.port),
            "--tls-cert-file",
            str(certs.cert),
            "--tls-key-file",
            str(certs.key),
            "--tls-ca-cert-file",
            str(certs.ca),
            "--tls-auth-clients",
            "no",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(self.dir),
            "--maxmemory-policy",
            "noeviction",
            "--logfile",
            str(log),
        ]
        self.proc = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True
        )
        _wait(lambda: _tls_accepts(self.port), "redis-server (TLS)", 20, self.proc, log)

    def url(self, ca: Path, database: int = 0) -> str:
        return f"rediss://{HOST}:{self.port}/{database}?ssl_ca_certs={ca}"  # certificate checked by default

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait(20)


class TlsRabbit:
    """A RabbitMQ node of the test's own (name, cookie, mnesia, ports) with only an SSL listener."""

    def __init__(self, state: Path, certs: Certificates) -> None:
        self.dir = state / "rabbitmq-tls"
        (self.dir / "mnesia").mkdir(parents=True)
        (self.dir / "log").mkdir()
        self.port = free_port()
        self.node = f"pstls{os.getpid()}@localhost"
        (self.dir / "rabbitmq.conf").write_text(
            "listeners.tcp = none\n"
            f"listeners.ssl.default = {self.port}\n"
            f"ssl_options.cacertfile = {certs.ca}\n"
            f"ssl_options.certfile = {certs.cert}\n"
            f"ssl_options.keyfile = {certs.key}\n"
            "ssl_options.verify = verify_none\n"
            "ssl_options.fail_if_no_peer_cert = false\n"
            "disk_free_limit.absolute = 1MB\n"
        )
        self.env = {**rabbit_env(self.dir, self.node), "RABBITMQ_DIST_PORT": str(free_port())}
        log = self.dir / "server.log"
        with open(log, "w") as out:
            self.proc = subprocess.Popen(
                [str(RABBITMQ_SBIN / "rabbitmq-server")],
                env=self.env,
                cwd=self.dir,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

        def started() -> bool:
            res = subprocess.run(
                [str(RABBITMQ_SBIN / "rabbitmqctl"), "-n", self.node, "await_startup"],
                env=self.env,
                cwd=self.dir,
                capture_output=True,
                timeout=90,
            )
            return res.returncode == 0

        _wait(started, "rabbitmq-server (TLS)", 150, self.proc, log)

    def url(self, ca: Path) -> str:
        # guest may log in from the loopback interface, which is where the test connects from.
        return f"amqps://guest:guest@{HOST}:{self.port}//?ssl_ca_certs={ca}"

    def stop(self) -> None:
        subprocess.run(
            [str(RABBITMQ_SBIN / "rabbitmqctl"), "-n", self.node, "shutdown"],
            env=self.env,
            cwd=self.dir,
            capture_output=True,
            timeout=60,
        )
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, 9)
        self.proc.wait(30)


class TlsPostgres:
    """A PostgreSQL cluster of the test's own with ssl=on that takes TCP connections only over TLS."""

    def __init__(self, certs: Certificates) -> None:
        # Under /tmp, not the test's own directory: the postgres user must reach it.
        self.dir = Path(tempfile.mkdtemp(prefix="packsolve-pg-tls-"))
        self.data = self.dir / "data"
        self.sockets = self.dir / "sock"
        self.sockets.mkdir()
        self.port = free_port()
        # The server's key must be the postgres user's own, unreadable by others.
        key = self.dir / "server.key"
        shutil.copy(certs.key, key)
        shutil.copy(certs.cert, self.dir / "server.pem")
        os.chmod(key, 0o600)
        for path in (self.dir, self.sockets, key, self.dir / "server.pem"):
            shutil.chown(path, "postgres", "postgres")
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
        as_postgres = ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups"]
        res = subprocess.run([*as_postgres, *initdb], capture_output=True, text=True, timeout=120)
        if res.returncode != 0:
            raise RuntimeError(f"initdb failed: {res.stderr}")
        # TCP only over TLS; the Unix socket (local) stays for nothing here but pg_isready.
        (self.data / "pg_hba.conf").write_text(
            "local all all trust\nhostssl all all 127.0.0.1/32 trust\nhostnossl all all 0.0.0.0/0 reject\n"
        )
        log = self.dir / "postgres.log"
        argv = [
            str(PG_BIN / "postgres"),
            "-D",
            str(self.data),
            "-c",
            f"listen_addresses={HOST}",
            "-c",
            f"port={self.port}",
            "-c",
            f"unix_socket_directories={self.sockets}",
            "-c",
            "fsync=off",
            "-c",
            "ssl=on",
            "-c",
            f"ssl_cert_file={self.dir / 'server.pem'}",
            "-c",
            f"ssl_key_file={key}",
            "-c",
            "max_connections=100",
        ]
        with open(log, "w") as out:
            shutil.chown(log, "postgres", "postgres")
            self.proc = subprocess.Popen(
                [*as_postgres, *argv], stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )

        def ready() -> bool:
            probe = [
                str(PG_BIN / "pg_isready"),
                "-q",
                "-h",
                str(self.sockets),
                "-p",
                str(self.port),
                "-U",
                "postgres",
            ]
            return subprocess.run(probe, capture_output=True).returncode == 0

        _wait(ready, "postgres (TLS)", 60, self.proc, log)

    def url(self, ca: Path, database: str = "postgres", sslmode: str = "verify-full") -> str:
        return (
            f"postgresql+psycopg://postgres@{HOST}:{self.port}/{database}?sslmode={sslmode}&sslrootcert={ca}"
        )

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)  # fast shutdown: clients still connected are cut off
        self.proc.wait(60)
        shutil.rmtree(self.dir, ignore_errors=True)
