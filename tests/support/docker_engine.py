"""The tests' own Docker engine: dockerd started as root for the compose tests, and all it leaves removed.

No registry is reachable here, so the base images are built locally: `debootstrap --variant=minbase`
of Debian from the mirror apt already uses, imported with `docker import`, and CI-only stand-ins for
python:3.11-slim, redis:7-alpine and postgres:16-alpine on top (tests/compose/). The engine keeps
its image store under $PACKSOLVE_CI_CACHE (/var/cache/packsolve-ci), images tagged with a hash of
their inputs, so a second run reuses them. On the way out: every container, network and volume is
removed, dockerd stopped by its PID, and the links, iptables rules and chains, FORWARD policy and
ip_forward it changed are put back; rules others added meanwhile are left alone.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.services import ROOT, unavailable

CACHE = Path(os.environ.get("PACKSOLVE_CI_CACHE", "/var/cache/packsolve-ci"))
RUN_DIR = Path("/run/packsolve-ci")
STANDINS = ROOT / "tests" / "compose"
TOOLS = ("dockerd", "docker", "docker-compose", "debootstrap", "iptables", "ip")
# Off the default 172.17/16 and the namespace tests' 10.210.0/24.
BRIDGE_IP = "10.213.0.1/24"
ADDRESS_POOL = "base=10.214.0.0/16,size=24"
TABLES = ("filter", "nat")
TRUST_KEY = Path("/etc/docker/key.json")
HOST_CA = Path("/etc/ssl/certs/ca-certificates.crt")


@dataclass
class Engine:
    """A running dockerd: its socket, and the stand-in images built for it."""

    host: str
    images: dict[str, str] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        return {"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"), "DOCKER_HOST": self.host}

    def docker(
        self, *args: str, timeout: float = 120, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        res = subprocess.run(
            ["docker", *args], capture_output=True, text=True, env=self.env(), timeout=timeout, check=False
        )
        if check and res.returncode != 0:
            raise AssertionError(f"docker {' '.join(args)} failed ({res.returncode}): {res.stderr.strip()}")
        return res


def debian_mirror() -> str:
    """Return the Debian mirror apt uses on this machine (deb822 `URIs:` or a `deb` line)."""
    sources = [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]
    for path in sources:
        if not path.is_file() or not (path.suffix in (".list", ".sources") or path.name == "sources.list"):
            continue
        for line in path.read_text().splitlines():
            m = re.match(r"\s*(?:URIs:\s*|deb\s+(?:\[[^]]*\]\s+)?)(\S+/debian)/?\s*", line)
            if m:
                return m.group(1)
    return "http://deb.debian.org/debian"


def _digest(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode() if isinstance(p, str) else p)
        h.update(b"\0")
    return h.hexdigest()[:16]


def _has_image(engine: Engine, tag: str) -> bool:
    return engine.docker("image", "inspect", tag, check=False).returncode == 0


def build_base(engine: Engine) -> str:
    """Return the tag of a minimal Debian bookworm image, made with debootstrap if not cached."""
    mirror = debian_mirror()
    tag = f"packsolve-ci/debian:{_digest('bookworm minbase', mirror)}"
    if _has_image(engine, tag):
        return tag
    start = time.monotonic()
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        root = Path(tmp) / "root"
        res = subprocess.run(
            ["debootstrap", "--variant=minbase", "bookworm", str(root), mirror],
            capture_output=True,
            text=True,
            timeout=900,
        )
        if res.returncode != 0:
            raise AssertionError(f"debootstrap failed: {res.stderr[-2000:]}")
        # As in Debian's official images: packages never start services during a build.
        policy = root / "usr/sbin/policy-rc.d"
        policy.write_text("#!/bin/sh\nexit 101\n")
        policy.chmod(0o755)
        (root / "etc/apt/apt.conf.d/99packsolve-ci").write_text('APT::Install-Recommends "false";\n')
        shutil.rmtree(root / "var/cache/apt/archives", ignore_errors=True)
        (root / "var/cache/apt/archives/partial").mkdir(parents=True)
        tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
        imp = subprocess.run(
            ["docker", "import", "-", tag], stdin=tar.stdout, capture_output=True, text=True, env=engine.env()
        )
        tar.wait()
        if imp.returncode != 0 or tar.returncode != 0:
            raise AssertionError(f"docker import failed: {imp.stderr}")
    engine.timings["debootstrap+import"] = time.monotonic() - start
    return tag


def build_standins(engine: Engine) -> dict[str, str]:
    """Build (or reuse) the stand-in images; return the compose variables that select them."""
    base = build_base(engine)
    extra = {"python": {"host-ca.crt": HOST_CA.read_bytes()}, "postgres": {}, "redis": {}, "prometheus": {}}
    if (STANDINS / "postgres-entrypoint.sh").exists():
        extra["postgres"]["postgres-entrypoint.sh"] = (STANDINS / "postgres-entrypoint.sh").read_bytes()
    images = {}
    for name, files in extra.items():
        dockerfile = (STANDINS / f"{name}.Dockerfile").read_bytes()
        tag = f"packsolve-ci/{name}:{_digest(base, dockerfile, *sorted(files), *files.values())}"
        if not _has_image(engine, tag):
            start = time.monotonic()
            with tempfile.TemporaryDirectory(dir=CACHE) as ctx:
                (Path(ctx) / "Dockerfile").write_bytes(dockerfile)
                for fname, data in files.items():
                    (Path(ctx) / fname).write_bytes(data)
                    (Path(ctx) / fname).chmod(0o755)
                engine.docker("build", "-q", "--build-arg", f"BASE={base}", "-t", tag, ctx, timeout=900)
            engine.timings[f"stand-in {name}"] = time.monotonic() - start
        images[name] = tag
    engine.images = images
    return {
        "PYTHON_IMAGE": images["python"],
        "REDIS_IMAGE": images["redis"],
        "POSTGRES_IMAGE": images["postgres"],
        "PROMETHEUS_IMAGE": images["prometheus"],
    }


def _rules(table: str) -> list[str]:
    res = subprocess.run(["iptables", "-t", table, "-S"], capture_output=True, text=True, check=False)
    return res.stdout.splitlines() if res.returncode == 0 else []


def _links() -> set[str]:
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, check=True).stdout
    return {line.split(":")[1].strip().split("@")[0] for line in out.splitlines()}


def _nft_tables() -> set[str]:
    if shutil.which("nft") is None:
        return set()
    out = subprocess.run(["nft", "list", "tables"], capture_output=True, text=True, check=False).stdout
    return {line.strip() for line in out.splitlines()}


@dataclass
class _HostState:
    """What dockerd changes on the host, recorded before it starts."""

    ip_forward: str
    rules: dict[str, list[str]]
    links: set[str]
    nft_tables: set[str]
    trust_key: bool  # dockerd 20.10 writes /etc/docker/key.json on its first start

    @classmethod
    def now(cls) -> _HostState:
        return cls(
            ip_forward=Path("/proc/sys/net/ipv4/ip_forward").read_text().strip(),
            rules={t: _rules(t) for t in TABLES},
            links=_links(),
            nft_tables=_nft_tables(),
            trust_key=TRUST_KEY.exists(),
        )

    def restore(self) -> list[str]:
        """Undo dockerd's changes; return what could not be undone."""
        problems = []
        for name in sorted(_links() - self.links):
            if name == "docker0" or name.startswith(("br-", "veth")):
                subprocess.run(["ip", "link", "delete", name], capture_output=True, check=False)
        for table in TABLES:
            before = set(self.rules[table])
            after = _rules(table)
            # Rules first (they reference the chains), then the chains dockerd created.
            for rule in after:
                if rule.startswith("-A ") and rule not in before and re.search(r"DOCKER|docker0|br-", rule):
                    args = shlex.split(rule)
                    args[0] = "-D"
                    subprocess.run(["iptables", "-t", table, *args], capture_output=True, check=False)
            new_chains = [r.split()[1] for r in after if r.startswith("-N ") and r not in before]
            for chain in new_chains:
                subprocess.run(["iptables", "-t", table, "-F", chain], capture_output=True, check=False)
            for chain in new_chains:
                subprocess.run(["iptables", "-t", table, "-X", chain], capture_output=True, check=False)
            for rule in self.rules[table]:
                if rule.startswith("-P "):
                    _, chain, policy = rule.split()
                    subprocess.run(
                        ["iptables", "-t", table, "-P", chain, policy], capture_output=True, check=False
                    )
            left = [r for r in _rules(table) if r not in before]
            if left:
                problems.append(f"iptables -t {table}: {left}")
            elif f"table ip {table}" not in self.nft_tables and f"table ip {table}" in _nft_tables():
                # iptables-nft made the table for dockerd; it is empty again.
                subprocess.run(["nft", "delete", "table", "ip", table], capture_output=True, check=False)
        Path("/proc/sys/net/ipv4/ip_forward").write_text(self.ip_forward + "\n")
        if not self.trust_key:
            TRUST_KEY.unlink(missing_ok=True)
        left_links = {n for n in _links() - self.links if n == "docker0" or n.startswith(("br-", "veth"))}
        if left_links:
            problems.append(f"links left: {sorted(left_links)}")
        return problems


def _sweep_stale() -> None:
    """Stop a dockerd of an earlier run that died without cleaning up (its pidfile is still there).

    Under the lock nobody else runs one, so the bridge, links and DOCKER chains left are its own.
    """
    pidfile = RUN_DIR / "dockerd.pid"
    if not pidfile.exists():
        return
    with contextlib.suppress(ValueError, ProcessLookupError, OSError):
        pid = int(pidfile.read_text().strip())
        if Path(f"/proc/{pid}/comm").read_text().strip() != "dockerd":
            raise ProcessLookupError(pid)  # the pid was reused: nothing of ours to stop
        os.kill(pid, signal.SIGTERM)
        for _ in range(300):
            os.kill(pid, 0)  # ProcessLookupError once it is gone
            time.sleep(0.2)
    shutil.rmtree(RUN_DIR / "exec", ignore_errors=True)
    pidfile.unlink(missing_ok=True)
    for name in _links():
        if name == "docker0" or name.startswith(("br-", "veth")):
            subprocess.run(["ip", "link", "delete", name], capture_output=True, check=False)
    for table in TABLES:
        for rule in _rules(table):
            if rule.startswith("-A ") and re.search(r"DOCKER|docker0|br-", rule):
                args = shlex.split(rule)
                args[0] = "-D"
                subprocess.run(["iptables", "-t", table, *args], capture_output=True, check=False)
        chains = [r.split()[1] for r in _rules(table) if r.startswith("-N DOCKER")]
        for flag in ("-F", "-X"):
            for chain in chains:
                subprocess.run(["iptables", "-t", table, flag, chain], capture_output=True, check=False)


def _missing_tools() -> list[str]:
    return [t for t in TOOLS if shutil.which(t) is None]


def _stop(proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    """Stop dockerd by its PID: SIGTERM (it stops its containerd), SIGKILL if it hangs."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextmanager
def docker_engine() -> Iterator[Engine]:
    """Start dockerd (root) with its own socket and cached image store; stop it and clean up after."""
    missing = _missing_tools()
    if missing:
        unavailable(
            "docker",
            f"{', '.join(missing)} not installed (apt-get install docker.io docker-compose "
            "debootstrap iptables)",
        )
    if os.geteuid() != 0:
        unavailable("docker", "dockerd needs root")
    CACHE.mkdir(parents=True, exist_ok=True)
    RUN_DIR.mkdir(parents=True, exist_ok=True)
    # One engine per machine: the bridge, the chains and the cache are shared names.
    with open(CACHE / "engine.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _sweep_stale()
        state = _HostState.now()
        # Forwarding on before dockerd starts, so it leaves the FORWARD policy as it is.
        Path("/proc/sys/net/ipv4/ip_forward").write_text("1\n")
        sock = RUN_DIR / "docker.sock"
        log = (CACHE / "dockerd.log").open("w")  # noqa: SIM115  (dockerd writes it until the end)
        proc = subprocess.Popen(
            [
                "dockerd",
                "--host",
                f"unix://{sock}",
                "--data-root",
                str(CACHE / "docker"),
                "--exec-root",
                str(RUN_DIR / "exec"),
                "--pidfile",
                str(RUN_DIR / "dockerd.pid"),
                "--bip",
                BRIDGE_IP,
                "--default-address-pool",
                ADDRESS_POOL,
                "--storage-driver",
                "overlay2",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        engine = Engine(host=f"unix://{sock}")
        try:
            deadline = time.monotonic() + 60
            while engine.docker("info", check=False, timeout=10).returncode != 0:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(
                        f"dockerd did not start: {(CACHE / 'dockerd.log').read_text()[-2000:]}"
                    )
                time.sleep(0.3)
            yield engine
        finally:
            ids = engine.docker("ps", "-aq", check=False).stdout.split()
            if ids:
                engine.docker("rm", "-f", "-v", *ids, check=False, timeout=120)
            engine.docker("network", "prune", "-f", check=False)
            engine.docker("volume", "prune", "-f", check=False)
            _stop(proc)
            log.close()
            shutil.rmtree(RUN_DIR, ignore_errors=True)
            problems = state.restore()
            if problems:
                raise AssertionError(f"dockerd left: {problems}")
