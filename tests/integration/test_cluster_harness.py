"""The in-machine cluster itself: links cut, slowed and frozen as asked, nothing left behind.

The scenarios (test_cluster_scenarios.py) are only as good as the damage they do: these tests
check each kind of damage on real connections between the hosts, and that a cluster is gone
after its owner, whether it ended normally, failed or was killed.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.netns import PREFIX, STATE_ROOT, SUBNET, missing_tools, netns_list, network, sweep_stale
from tests.support.waiting import wait_until

pytestmark = pytest.mark.netns

# Connects to a TCP port from inside a host; prints the milliseconds it took, or "fail".
CONNECT = textwrap.dedent(
    """
    import socket, sys, time
    times = []
    for _ in range(int(sys.argv[3])):
        t = time.monotonic()
        try:
            socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=float(sys.argv[4])).close()
        except OSError:
            print("fail"); sys.exit()
        times.append((time.monotonic() - t) * 1000)
    print(sorted(times)[len(times) // 2])
    """
)


def connect_ms(host, address: str, port: int, count: int = 1, timeout: float = 3.0) -> float | None:
    """Return the median milliseconds a TCP connect from host takes (None if one failed)."""
    out = host.run([sys.executable, "-c", CONNECT, address, str(port), str(count), str(timeout)], timeout=120)
    value = out.stdout.strip()
    return None if value == "fail" else float(value)


@pytest.fixture(autouse=True)
def _needs_netns() -> None:
    missing = missing_tools()
    if missing:
        from tests.support.services import unavailable

        unavailable("network namespaces", f"missing {', '.join(missing)}")


def test_a_partitioned_worker_host_reaches_nothing_until_healed_while_the_others_still_do(netns_cluster):
    c = netns_cluster
    server = c.server.address
    w1, w2 = c.worker_hosts[0], c.worker_hosts[1]
    assert connect_ms(w1, server, 6379) is not None
    c.net.partition(w1.name)
    try:
        assert connect_ms(w1, server, 6379) is None
        assert connect_ms(w2, server, 6379) is not None
        assert connect_ms(c.client, w1.address, 22, timeout=1.0) is None  # nor can anyone reach it
    finally:
        c.net.heal(w1.name)
    assert connect_ms(w1, server, 6379) is not None


def test_a_shaped_link_delays_every_packet_both_ways_and_drops_about_its_share(netns_cluster):
    c = netns_cluster
    w1 = c.worker_hosts[0]
    plain = connect_ms(w1, c.server.address, 5432, count=5)
    assert plain is not None and plain < 50
    c.net.shape(w1.name, delay_ms=100, loss=0.2, seed=1)
    try:
        # A connect is one round trip (SYN out, SYN-ACK in): the delay is paid once each way.
        slowed = connect_ms(w1, c.server.address, 5432, count=40, timeout=20)
    finally:
        counts = c.net.unshape(w1.name)
    assert slowed is not None and slowed >= 200
    passed, dropped = int(counts.split()[1]), int(counts.split()[3])
    assert passed + dropped >= 150
    assert 0.1 <= dropped / (passed + dropped) <= 0.3, counts
    assert connect_ms(w1, c.server.address, 5432, count=5) < 50  # removed without a trace


def test_freeze_stops_every_process_of_a_host_and_thaw_resumes_them(netns_cluster, tmp_path):
    c = netns_cluster
    w2 = c.worker_hosts[1]
    proc = w2.popen(["sh", "-c", "sleep 300 & sleep 300 & wait"], tmp_path / "sleepers.log")
    try:
        assert wait_until(lambda: len(w2.pids()) >= 3, 10)

        def states() -> set[str]:
            return {Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] for pid in w2.pids()}

        # A signal takes effect when its process next runs: on a loaded machine, not at once.
        c.net.freeze(w2.name)
        assert wait_until(lambda: states() == {"T"}, 10), states()
        c.net.thaw(w2.name)
        assert wait_until(lambda: "T" not in states(), 10), states()
    finally:
        c.net.thaw(w2.name)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def test_the_cluster_is_sealed_off_from_the_machine_and_the_machine_from_it(netns_cluster):
    c = netns_cluster
    # The server's own services answer the hosts over the links...
    for port in (6379, 5432, 5672):
        assert connect_ms(c.client, c.server.address, port) is not None
    # ...and a host's loopback is its own: the machine's services on 127.0.0.1 are not there.
    assert connect_ms(c.client, "127.0.0.1", 6379, timeout=1.0) is None
    # The cluster's addresses exist only inside its namespaces: none is on the machine's own interfaces
    # (looked up, never probed: from the machine, such an address would go out of its default route).
    own = subprocess.run(["ip", "-o", "addr", "show"], capture_output=True, text=True, check=True).stdout
    assert f"{SUBNET}." not in own


def _sleep_when_set(running: Any) -> None:
    running.set()
    time.sleep(60)


def test_a_process_forked_inside_the_cluster_block_still_dies_of_sigterm(netns_cluster):
    # The block turns SIGTERM into an exception for its own teardown; a forked child (a later
    # test's multiprocessing pool, whose terminate() sends SIGTERM) must not inherit that, or a
    # child unwinding while it holds the pool's queue lock hangs the test that made the pool.
    assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_IGN, signal.SIG_DFL)  # the block's own
    ctx = multiprocessing.get_context("fork")
    running = ctx.Event()
    child = ctx.Process(target=_sleep_when_set, args=(running,))
    child.start()
    try:
        # Python drops a signal its handler caught before the child's after-fork reset: wait past it.
        assert running.wait(10)
        child.terminate()
        child.join(30)
        assert child.exitcode == -signal.SIGTERM, _signal_state(child.pid)
    finally:
        if child.exitcode is None:
            child.kill()
            child.join(10)


def _signal_state(pid: int | None) -> str:
    """Return what the kernel says of pid's state and signal dispositions (why it did not die)."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError as exc:
        return f"no /proc entry for {pid}: {exc}"
    return "; ".join(line for line in lines if line.split(":")[0] in {"State", "SigBlk", "SigIgn", "SigCgt"})


def test_a_network_is_torn_down_even_when_its_block_fails(tmp_path):
    log = tmp_path / "sleep.log"  # outside the network's state, which the teardown removes
    with pytest.raises(RuntimeError, match="boom"), network() as net:
        host = net.add_host("lone")
        proc = host.popen(["sleep", "300"], log)
        token, state = net.token, net.state
        raise RuntimeError("boom")
    left = [n for n in netns_list() if token in n]
    assert not left, left
    assert not state.exists(), sorted(state.iterdir())
    code = proc.wait(10)
    assert code == -signal.SIGKILL, f"exit {code}: {log.read_text()}"


def test_a_killed_owner_s_network_is_torn_down_by_its_reaper(tmp_path):
    script = textwrap.dedent(
        """
        import sys, time
        from tests.support.netns import Network
        net = Network()
        net.add_host("orphan").popen(["sleep", "300"], net.state / "sleep.log")
        print(net.token, flush=True)
        time.sleep(300)
        """
    )
    root = Path(__file__).resolve().parents[2]
    owner = subprocess.Popen([sys.executable, "-c", script], cwd=root, stdout=subprocess.PIPE, text=True)
    assert owner.stdout is not None
    token = owner.stdout.readline().strip()
    assert token and [n for n in netns_list() if token in n]
    owner.kill()  # no teardown runs in the owner
    owner.wait(10)
    assert wait_until(lambda: not [n for n in netns_list() if token in n], 20)
    assert wait_until(lambda: not (STATE_ROOT / f"{PREFIX}{token}").exists(), 10)


def test_sweep_removes_the_leftovers_of_an_owner_that_is_gone():
    token = f"{os.getpid()}dead"
    state = STATE_ROOT / f"{PREFIX}{token}"
    state.mkdir()
    (state / "owner").write_text("999999999 0")  # no such process
    name = f"{PREFIX}{token}-left"
    subprocess.run(["ip", "netns", "add", name], check=True)
    subprocess.run(["ip", "-n", name, "addr", "add", f"{SUBNET}.9/24", "dev", "lo"], check=True)
    try:
        assert token in sweep_stale()
        assert name not in netns_list()
        assert not state.exists()
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)
