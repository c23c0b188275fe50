"""What travels between the parent and a solver child: batches of jobs down, one line per job up.

Down (to a kept child only; a fresh child finds its first batch in its copy of the
parent's memory): each batch pickled, after its length in 8 bytes. Up, from a kept child, first
TAKEN once it holds the batch (or REFUSED when it could not unpickle it); then one JSON line per
job, in order.

The framing is this module's own, not multiprocessing.connection's: measured side by side
(benchmarks/wire_framing.py, docs/benchmarks.md), Connection was no faster on small batches and
about twice as slow on a batch carrying a big level.
"""

from __future__ import annotations

import os
import pickle
import select
import struct
import time
from collections.abc import Sequence
from typing import Literal, cast

from packsolve.execution.spec import Job

# The line a kept child writes once it holds a batch: until then its jobs have not begun, so a
# child that dies before it (killed while idle) cost nothing and the batch goes to a fresh one.
TAKEN = b'{"_taken": true}'
# The line a kept child writes instead when it cannot unpickle a batch.
REFUSED = b'{"_refused": true}'
_HEADER = struct.Struct("!Q")


class BatchRefused(Exception):
    """A batch arrived whole but could not be unpickled (e.g. its solver is newer than the child)."""


def send_batch(fd: int, jobs: Sequence[Job]) -> None:
    """Write jobs to a kept child's pipe; raise if they cannot be pickled or the child is gone."""
    data = pickle.dumps(list(jobs), protocol=pickle.HIGHEST_PROTOCOL)
    write_all(fd, _HEADER.pack(len(data)) + data)


def receive_batch(fd: int) -> list[Job] | None:
    """Return the next batch from the parent; None at end of file; raise BatchRefused if unreadable."""
    header = read_exactly(fd, _HEADER.size)
    if header is None:
        return None
    data = read_exactly(fd, _HEADER.unpack(header)[0])
    try:
        return cast(list[Job], pickle.loads(data or b""))
    except Exception as exc:  # a batch cut short fails here too
        raise BatchRefused from exc


def read_exactly(fd: int, size: int) -> bytes | None:
    """Return the next size bytes from fd; None if end of file comes first."""
    parts = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            return None
        parts.append(chunk)
        size -= len(chunk)
    return b"".join(parts)


def write_all(fd: int, data: bytes) -> None:
    """Write all of data to fd, however many writes the pipe takes."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class Lines:
    """Lines read from a child's pipe, each waited for at most a given time."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = b""

    def next(self, timeout: float | None) -> bytes | None | Literal[False]:
        """Return the next line (without its newline), None at end of file, False if timeout passed."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self.buffer:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self.fd], [], [], wait)
            if not ready:
                return False
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line
