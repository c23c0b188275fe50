"""Cooperative search limits: a monotonic wall-clock deadline, a CPU-time allowance and a node cap."""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import time
from typing import Any

# Reading the clock costs far more than counting; look at it once per this many nodes.
_CLOCK_EVERY = 256


class BudgetExhausted(Exception):
    """Raised by Budget.charge when the deadline, the CPU allowance or the node cap is reached."""


# What SharedBound.best holds while no part has an answer: longer than any answer.
NO_BEST = (1 << 62) - 1


class _Cell:
    """A process-local stand-in for a locked multiprocessing.Value of one int64 (value, get_lock, get_obj)."""

    def __init__(self, value: int) -> None:
        self._obj = ctypes.c_int64(value)

    @property
    def value(self) -> int:
        return int(self._obj.value)

    @value.setter
    def value(self, value: int) -> None:
        self._obj.value = value

    def get_lock(self) -> contextlib.nullcontext[None]:
        return contextlib.nullcontext()

    def get_obj(self) -> ctypes.c_int64:
        return self._obj


class _Slot:
    """One int64 of a shared array, with the lock of the whole array: the cell of one of many bounds made
    at once (SharedBound.many), as a locked multiprocessing.Value is of one (value, get_lock, get_obj)."""

    def __init__(self, array: Any, index: int, lock: Any) -> None:
        self._array, self._index, self._lock = array, index, lock

    @property
    def value(self) -> int:
        return int(self._array[self._index])

    @value.setter
    def value(self, value: int) -> None:
        self._array[self._index] = value

    def get_lock(self) -> Any:
        return self._lock

    def get_obj(self) -> ctypes.c_int64:
        return ctypes.c_int64.from_buffer(self._array, self._index * ctypes.sizeof(ctypes.c_int64))


class SharedBound:
    """The bound the parts of a split level share in a best-of-all (optimal) search.

    ``best()``: the length of the shortest answer of the whole level any part has found (None
    before one), shared between processes (made before a pool forks, or passed to its
    initializer): a part wants only shorter answers, so it prunes with it. ``offer(length)``
    lowers it. ``buffer``: the same value as one writable int64 for native searches, which read it
    while they run.

    The window and resume are this process's own: the runner sets ``window = (lo, hi)`` before it
    runs a part, asking for the iterations of an iterative-deepening search whose bound (a length
    of the whole level) lies in it; a search that stops at ``hi`` with nothing found sets
    ``resume`` to the first bound it has not searched (the runner runs it again from there in a
    later round) and leaves it None when the part is searched to the end. A search that knows no
    iterations ignores both and searches its part whole.
    """

    def __init__(self, shared: bool = True, context: Any = None) -> None:
        # One int64 in shared memory; the lock orders offers from several processes. Not shared (one
        # part searched alone in a solver child): a plain int64, no semaphore, which a child that
        # closed its inherited descriptors could not register with multiprocessing's tracker.
        # context: the multiprocessing context of the processes that share it (theirs must make it).
        maker = context or multiprocessing
        self._cell: Any = maker.Value("q", NO_BEST, lock=True) if shared else _Cell(NO_BEST)
        self.window: tuple[int, int] | None = None
        self.resume: int | None = None

    @classmethod
    def many(cls, count: int, context: Any = None) -> list[SharedBound]:
        """Return count bounds shared between processes as one array in shared memory and one lock (a
        run may share thousands: one Value and semaphore each would cost seconds to make and to hand
        to each process). context: the multiprocessing context of the processes that share them."""
        if count < 1:
            return []  # nothing made: no shared memory, no semaphore (nor the tracker that minds them)
        maker = context or multiprocessing
        array = maker.RawArray(ctypes.c_int64, [NO_BEST] * count)
        lock = maker.Lock()
        bounds = []
        for i in range(count):
            bound = cls(shared=False)
            bound._cell = _Slot(array, i, lock)
            bounds.append(bound)
        return bounds

    def best(self) -> int | None:
        value = int(self._cell.value)
        return None if value == NO_BEST else value

    def offer(self, length: int) -> bool:
        """Make length the best if it is shorter than the best so far; return whether it was."""
        with self._cell.get_lock():
            if length < self._cell.value:
                self._cell.value = length
                return True
        return False

    @property
    def buffer(self) -> memoryview:
        return memoryview(self._cell.get_obj())  # type: ignore[attr-defined]


class Budget:
    """Counts expanded nodes and raises BudgetExhausted once a limit is passed.

    Solvers call ``charge()`` once per expanded state (or ``charge(k)`` for k at
    once), so node counts are comparable across heuristics of one kind.

    The CPU limit counts this process's CPU time (every thread's, ``time.process_time``)
    since the budget was made: in a solver child, the job's own CPU.

    ``bound``: None, or the SharedBound of a best-of-all split level whose part this budget
    searches; a solver that can prune with it does (one that cannot ignores it).
    """

    __slots__ = (
        "nodes",
        "node_limit",
        "time_limit",
        "deadline",
        "cpu_limit",
        "cpu_by",
        "_next_clock",
        "bound",
    )

    def __init__(
        self, time_limit: float | None = None, node_limit: int | None = None, cpu_limit: float | None = None
    ) -> None:
        if time_limit is not None and time_limit <= 0:
            raise ValueError("time_limit must be positive")
        if node_limit is not None and node_limit <= 0:
            raise ValueError("node_limit must be positive")
        if cpu_limit is not None and cpu_limit <= 0:
            raise ValueError("cpu_limit must be positive")
        self.nodes = 0
        self.time_limit = time_limit
        self.node_limit = node_limit
        self.cpu_limit = cpu_limit
        self.deadline = None if time_limit is None else time.monotonic() + time_limit
        self.cpu_by = None if cpu_limit is None else time.process_time() + cpu_limit
        self._next_clock = _CLOCK_EVERY
        self.bound: SharedBound | None = None

    def charge(self, n: int = 1) -> None:
        """Count n expanded nodes; raise BudgetExhausted when a limit is passed."""
        self.nodes += n
        if self.node_limit is not None and self.nodes > self.node_limit:
            raise BudgetExhausted(f"node limit {self.node_limit} reached")
        if self.nodes >= self._next_clock:
            self._next_clock = self.nodes + _CLOCK_EVERY
            self.check_clock()

    def check_clock(self) -> None:
        """Raise BudgetExhausted if the deadline or the CPU allowance has passed (for long steps too)."""
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise BudgetExhausted(self.wall_message())
        if self.cpu_by is not None and time.process_time() >= self.cpu_by:
            raise BudgetExhausted(f"CPU time limit {self.cpu_limit:g} s reached")

    def wall_message(self) -> str:
        """Return the message of a search stopped at the wall deadline (a native search that reached it)."""
        return f"wall time limit {self.time_limit:g} s reached"

    def remaining(self) -> float | None:
        """Wall seconds left before the deadline, or None without a wall limit.

        Only the wall clock: a native search (C) or a library given this as its own deadline stops
        on the wall clock; the CPU limit of such a step is kept by the solver child's RLIMIT_CPU.
        """
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - time.monotonic())
