"""Hosts inside this machine: network namespaces on one bridge, links that can be cut, slowed or frozen.

A `Network` owns a switch namespace holding a bridge and one namespace per host, each joined to
the bridge by a veth pair (`eth0` in the host, the host's name on the switch). Every address is
10.210.0.x on those veths, which exist only inside these namespaces: nothing here can reach the
machine's own network, nor the other way round. Damage is done on the switch or in the host:

- `partition(host)`: an nftables bridge rule on the switch drops every frame to or from the host's
  port. The link stays up, as when a cable is cut further along: TCP on both sides notices nothing
  and retransmits until the partition heals.
- `shape(host, delay_ms, loss)`: every packet the host sends or receives on its link is held for
  delay_ms and dropped with probability loss. This kernel is built without `tc netem`
  (CONFIG_NET_SCH_NETEM unset), so iptables NFQUEUE rules hand the packets to
  tests/support/netshape.py running in the host's namespace, which does what netem would.
- `freeze(host)` / `thaw(host)`: SIGSTOP / SIGCONT to every process in the host's namespace.

Names carry a token made of the owner's pid and a random suffix (`psn-<token>-<host>`), so a
leftover from a killed run never collides with a new one. `sweep_stale()` removes namespaces and
state directories whose owner is dead; a reaper process (`python -m tests.support.netns reap`)
tears the network down if its owner dies without doing it (SIGKILL, a crash), and `close()` does it
otherwise. Tearing down kills every process in the namespaces, deletes them (and with them the
bridge and the veths) and removes the state directory.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

PREFIX = "psn-"
STATE_ROOT = Path(os.environ.get("PACKSOLVE_CLUSTER_ROOT", "/tmp"))
SUBNET = "10.210.0"
ROOT = Path(__file__).resolve().parents[2]


class NetnsUnavailable(RuntimeError):
    """This machine cannot build the namespaces (not root, no `ip`, no namespaces)."""


def missing_tools() -> list[str]:
    """Return what this machine lacks to build a network: root, and the ip/nft/iptables tools."""
    missing = [tool for tool in ("ip", "nft", "iptables") if shutil.which(tool) is None]
    if os.geteuid() != 0:
        missing.insert(0, "root")
    return missing


def sh(argv: Sequence[str], check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run a command; raise RuntimeError with its output if check and it fails."""
    res = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
    if check and res.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({res.returncode}): {res.stderr.strip() or res.stdout}")
    return res


def _start_time(pid: int) -> str | None:
    """Return the kernel's start time of a process (to tell a reused pid apart), or None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def _owner_alive(state: Path) -> bool:
    """Return whether the process that made this state directory still runs."""
    try:
        pid_text, started = (state / "owner").read_text().split()
    except (OSError, ValueError):
        return False
    return _start_time(int(pid_text)) == started


def netns_list() -> list[str]:
    """Return the names of the network namespaces on this machine."""
    out = sh(["ip", "netns", "list"], check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def netns_pids(netns: str) -> list[int]:
    """Return the pids of every process in a namespace (empty if it is gone)."""
    res = sh(["ip", "netns", "pids", netns], check=False)
    return [int(p) for p in res.stdout.split()] if res.returncode == 0 else []


def teardown(token: str) -> None:
    """Kill every process in the token's namespaces, delete the namespaces, remove its state directory."""
    mine = [n for n in netns_list() if n.startswith(f"{PREFIX}{token}-")]
    for _ in range(50):
        pids = [p for n in mine for p in netns_pids(n)]
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)  # a stopped (frozen) process dies of SIGKILL too
        time.sleep(0.1)
    for name in mine:
        sh(["ip", "netns", "del", name], check=False)
    state = STATE_ROOT / f"{PREFIX}{token}"
    if os.environ.get("PACKSOLVE_CLUSTER_KEEP"):
        print(f"cluster state kept in {state} (PACKSOLVE_CLUSTER_KEEP)", file=sys.stderr)
        return
    shutil.rmtree(state, ignore_errors=True)


def sweep_stale() -> list[str]:
    """Tear down every network whose owner is dead (a run killed before its teardown); return their tokens."""
    tokens = {n[len(PREFIX) :].rsplit("-", 1)[0] for n in netns_list() if n.startswith(PREFIX)}
    tokens |= {p.name[len(PREFIX) :] for p in STATE_ROOT.glob(f"{PREFIX}*") if p.is_dir()}
    stale = sorted(t for t in tokens if not _owner_alive(STATE_ROOT / f"{PREFIX}{t}"))
    for token in stale:
        teardown(token)
    return stale


@dataclass
class Host:
    """One namespace on the switch: its name, its address, the processes started in it."""

    name: str
    netns: str
    address: str
    shaper: subprocess.Popen | None = None
    procs: list[subprocess.Popen] = field(default_factory=list)

    def argv(self, argv: Sequence[str], user: str | None = None) -> list[str]:
        """Return argv run inside this host (as user, if given)."""
        prefix = ["ip", "netns", "exec", self.netns]
        if user:
            prefix += ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups"]
        return prefix + list(argv)

    def run(
        self, argv: Sequence[str], check: bool = True, timeout: float = 60, **kw
    ) -> subprocess.CompletedProcess:
        """Run a command inside this host and wait for it."""
        res = subprocess.run(self.argv(argv), capture_output=True, text=True, timeout=timeout, **kw)
        if check and res.returncode != 0:
            raise RuntimeError(
                f"[{self.name}] {' '.join(argv)} failed ({res.returncode}): {res.stderr.strip()}"
            )
        return res

    def popen(self, argv: Sequence[str], log: Path, user: str | None = None, **kw) -> subprocess.Popen:
        """Start a long-lived process inside this host, its output to log; it dies with the host."""
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                self.argv(argv, user),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                **kw,
            )
        self.procs.append(proc)
        return proc

    def pids(self) -> list[int]:
        return netns_pids(self.netns)


class Network:
    """A switch namespace with a bridge, and hosts joined to it; see the module docstring."""

    def __init__(self) -> None:
        missing = missing_tools()
        if missing:
            raise NetnsUnavailable(f"cannot build network namespaces: missing {', '.join(missing)}")
        sweep_stale()
        self.token = f"{os.getpid()}{secrets.token_hex(2)}"
        self.state = STATE_ROOT / f"{PREFIX}{self.token}"
        # Made under another name, then renamed: a sweep running meanwhile never sees it ownerless.
        making = STATE_ROOT / f".{PREFIX}{self.token}"
        making.mkdir(mode=0o755)
        (making / "owner").write_text(f"{os.getpid()} {_start_time(os.getpid())}")
        making.rename(self.state)
        self.hosts: dict[str, Host] = {}
        self.cut: set[str] = set()
        self.frozen: set[str] = set()
        self._reaper = subprocess.Popen(
            [sys.executable, "-m", "tests.support.netns", "reap", "--owner", str(os.getpid()), self.token],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            self.switch = self._netns("switch")
            sh(["ip", "-n", self.switch, "link", "add", "br0", "type", "bridge"])
            sh(["ip", "-n", self.switch, "link", "set", "br0", "up"])
            # Partitions: one bridge table whose forward chain drops the ports of the cut hosts.
            sh(
                [
                    "ip",
                    "netns",
                    "exec",
                    self.switch,
                    "nft",
                    "add table bridge cluster; "
                    "add chain bridge cluster cut { type filter hook forward priority 0; }",
                ]
            )
        except BaseException:
            self.close()
            raise

    def _netns(self, name: str) -> str:
        netns = f"{PREFIX}{self.token}-{name}"
        sh(["ip", "netns", "add", netns])
        sh(["ip", "-n", netns, "link", "set", "lo", "up"])
        return netns

    def add_host(self, name: str) -> Host:
        """Create a host on the switch with the next address (server first: 10.210.0.1)."""
        if not name.isalnum() or len(name) > 15 or name in self.hosts or name in ("br0", "switch"):
            raise ValueError(f"bad host name {name!r}")
        netns = self._netns(name)
        address = f"{SUBNET}.{len(self.hosts) + 1}"
        sh(
            [
                "ip",
                "-n",
                self.switch,
                "link",
                "add",
                name,
                "type",
                "veth",
                "peer",
                "name",
                "eth0",
                "netns",
                netns,
            ]
        )
        sh(["ip", "-n", self.switch, "link", "set", name, "master", "br0", "up"])
        sh(["ip", "-n", netns, "addr", "add", f"{address}/24", "dev", "eth0"])
        sh(["ip", "-n", netns, "link", "set", "eth0", "up"])
        host = self.hosts[name] = Host(name, netns, address)
        return host

    def wait_linked(self, timeout: float = 10) -> None:
        """Wait until every host's link has carrier (a veth takes a moment to come up)."""
        deadline = time.monotonic() + timeout
        for host in self.hosts.values():
            while "LOWER_UP" not in sh(["ip", "-n", host.netns, "link", "show", "eth0"]).stdout:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"link of {host.name} not up after {timeout} s")
                time.sleep(0.05)

    # --- damage -------------------------------------------------------------------------------

    def partition(self, name: str) -> None:
        """Drop every frame to or from the host on the switch, until heal(name)."""
        if name in self.cut:
            return
        self.hosts[name]  # noqa: B018 (KeyError for an unknown host)
        sh(
            [
                "ip",
                "netns",
                "exec",
                self.switch,
                "nft",
                f"add rule bridge cluster cut iifname {name} drop; "
                f"add rule bridge cluster cut oifname {name} drop",
            ]
        )
        self.cut.add(name)

    def heal(self, name: str) -> None:
        """Let the host's frames through again (undo partition)."""
        if name not in self.cut:
            return
        rules = sh(
            ["ip", "netns", "exec", self.switch, "nft", "-a", "list", "chain", "bridge", "cluster", "cut"]
        )
        for line in rules.stdout.splitlines():
            if f'"{name}"' in line and "# handle" in line:
                handle = line.rsplit("# handle", 1)[1].strip()
                sh(
                    [
                        "ip",
                        "netns",
                        "exec",
                        self.switch,
                        "nft",
                        "delete",
                        "rule",
                        "bridge",
                        "cluster",
                        "cut",
                        "handle",
                        handle,
                    ]
                )
        self.cut.discard(name)

    def shape(self, name: str, delay_ms: float, loss: float, seed: int = 0) -> None:
        """Delay every packet the host sends or receives on its link by delay_ms, dropping a share loss."""
        host = self.hosts[name]
        if host.shaper is not None:
            self.unshape(name)
        log = self.state / f"shaper-{name}.log"
        argv = [
            sys.executable,
            "-m",
            "tests.support.netshape",
            "--delay-ms",
            str(delay_ms),
            "--loss",
            str(loss),
            "--seed",
            str(seed),
        ]
        host.shaper = host.popen(argv, log, cwd=ROOT)
        deadline = time.monotonic() + 20
        while "ready" not in log.read_text():
            if host.shaper.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"packet shaper of {name} did not start: {log.read_text()}")
            time.sleep(0.05)
        # Bound before the rules: a queue nobody listens on drops its packets.
        host.run(["iptables", "-A", "OUTPUT", "-o", "eth0", "-j", "NFQUEUE", "--queue-num", "0"])
        host.run(["iptables", "-A", "INPUT", "-i", "eth0", "-j", "NFQUEUE", "--queue-num", "1"])

    def unshape(self, name: str) -> str:
        """Remove the host's shaping; return the shaper's count of packets passed and dropped."""
        host = self.hosts[name]
        if host.shaper is None:
            return ""
        host.run(["iptables", "-F", "OUTPUT"])
        host.run(["iptables", "-F", "INPUT"])
        host.shaper.terminate()  # releases what it still holds, then exits
        host.shaper.wait(10)
        host.shaper = None
        lines = (self.state / f"shaper-{name}.log").read_text().strip().splitlines()
        return lines[-1] if lines else ""

    def freeze(self, name: str) -> list[int]:
        """SIGSTOP every process in the host (its whole process tree); return their pids."""
        pids = self.hosts[name].pids()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
        self.frozen.add(name)
        return pids

    def thaw(self, name: str) -> None:
        """SIGCONT every process in the host."""
        for pid in self.hosts[name].pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        self.frozen.discard(name)

    def close(self) -> None:
        """Tear everything down (processes, namespaces, links, state) and stop the reaper."""
        # Our own processes first, by their sessions: one still in `ip netns exec`, not yet in its
        # namespace, is not among the namespace's pids, and would outlive the teardown below.
        for host in self.hosts.values():
            for proc in host.procs:
                if proc.poll() is not None:
                    continue  # reaped: its pid may be another's by now; what it left is in the namespace
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
        teardown(self.token)
        if self._reaper.poll() is None:
            self._reaper.kill()
            self._reaper.wait(10)


@contextlib.contextmanager
def network() -> Iterator[Network]:
    """Yield a Network, torn down at the end whatever happens (SIGTERM included)."""
    net = Network()
    previous = signal.getsignal(signal.SIGTERM)

    owner = os.getpid()

    def on_term(signum: int, frame: object) -> None:
        if os.getpid() != owner:
            # A process forked inside the block (a test's multiprocessing pool) inherited this
            # handler: it must die of SIGTERM as it would have, not unwind while holding a lock.
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        raise KeyboardInterrupt("SIGTERM")  # unwinds through the finally below

    # pytest dies of SIGTERM without running teardowns; as an exception it unwinds through them.
    if threading.current_thread() is threading.main_thread() and previous == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, on_term)
    try:
        yield net
    finally:
        net.close()
        signal.signal(signal.SIGTERM, previous)


def _reap(owner: int, token: str) -> None:
    """Wait for the owner to die, then tear its network down (its own teardown stops us first)."""
    started = _start_time(owner)
    while _start_time(owner) == started and started is not None:
        time.sleep(0.5)
    teardown(token)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Clean up network namespaces made by the test cluster.")
    sub = parser.add_subparsers(dest="command", required=True)
    reap = sub.add_parser("reap", help="tear a network down once its owner process dies")
    reap.add_argument("--owner", type=int, required=True)
    reap.add_argument("token")
    sub.add_parser("sweep", help="tear down every network whose owner is dead")
    args = parser.parse_args(argv)
    if args.command == "reap":
        _reap(args.owner, args.token)
    else:
        for token in sweep_stale():
            print(f"removed stale cluster {token}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
