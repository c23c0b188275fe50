"""Whether multiprocessing.connection frames a solver child's batches as fast as execution/wire.py.

  python benchmarks/wire_framing.py                 # a table, and the ratio per batch size
  python benchmarks/wire_framing.py --rounds 5000

A forked child reads batches from a pipe and answers each with one line, as a kept solver child
does; the parent times round trips. Both sides pickle the same batch the same way
(pickle.HIGHEST_PROTOCOL): what differs is only the framing, wire.py's 8-byte length and
os.read/os.write loops against Connection.send_bytes/recv_bytes on the same pipe. Each size is
timed alternately --reps times and reported as the best; a ratio above 1 means
multiprocessing.connection is slower.
"""

from __future__ import annotations

import argparse
import os
import pickle
import platform
import time
from collections.abc import Callable
from multiprocessing.connection import Connection

from packsolve.execution import wire

# A batch as a parent sends one: chunks of jobs whose level JSON is a few hundred bytes to a big level.
SIZES = {"1 job, 300 B": (1, 300), "20 jobs, 300 B each": (20, 300), "1 job, 1 MB": (1, 1 << 20)}


def _batch(jobs: int, size: int) -> bytes:
    return pickle.dumps([{"level": "x" * size, "kind": "sudoku", "n": i} for i in range(jobs)], protocol=5)


def _serve(read: Callable[[], bytes | None], answer: int) -> None:
    """In the child: read batches until end of file, answer each with one line."""
    while (data := read()) is not None:
        pickle.loads(data)
        wire.write_all(answer, b'{"ok": true}\n')
    os._exit(0)


def _wire_read(fd: int) -> Callable[[], bytes | None]:
    def read() -> bytes | None:
        header = wire.read_exactly(fd, 8)
        return None if header is None else wire.read_exactly(fd, int.from_bytes(header, "big"))

    return read


def _connection_read(conn: Connection) -> Callable[[], bytes | None]:
    def read() -> bytes | None:
        try:
            return conn.recv_bytes()
        except EOFError:
            return None

    return read


def time_framing(framing: str, data: bytes, rounds: int) -> float:
    """Return the seconds per round trip of data through a forked child, framed by framing."""
    down_r, down_w = os.pipe()
    up_r, up_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(down_w)
        os.close(up_r)
        _serve(_wire_read(down_r) if framing == "wire" else _connection_read(Connection(down_r)), up_w)
    os.close(down_r)
    os.close(up_w)
    lines = wire.Lines(up_r)
    conn = Connection(down_w, readable=False) if framing != "wire" else None
    started = time.perf_counter()
    for _ in range(rounds):
        if conn is None:
            wire.write_all(down_w, len(data).to_bytes(8, "big") + data)
        else:
            conn.send_bytes(data)
        assert lines.next(10.0)
    elapsed = time.perf_counter() - started
    if conn is None:
        os.close(down_w)
    else:
        conn.close()
    os.waitpid(pid, 0)
    os.close(up_r)
    return elapsed / rounds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2000, help="round trips per timing (big batches: /50)")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    machine = f"{platform.node()}: {os.cpu_count()} cores, Python {platform.python_version()}"
    print(f"{machine}, load {os.getloadavg()[0]:.2f}")
    print(f"{'batch':<22} {'wire.py (us)':>13} {'connection (us)':>16} {'ratio':>6}")
    for name, (jobs, size) in SIZES.items():
        data = _batch(jobs, size)
        rounds = max(20, args.rounds // 50) if size > 1 << 16 else args.rounds
        best = {"wire": float("inf"), "connection": float("inf")}
        for _ in range(args.reps):
            for framing in best:
                best[framing] = min(best[framing], time_framing(framing, data, rounds))
        ratio = best["connection"] / best["wire"]
        print(f"{name:<22} {best['wire'] * 1e6:>13.1f} {best['connection'] * 1e6:>16.1f} {ratio:>6.2f}")


if __name__ == "__main__":
    main()
