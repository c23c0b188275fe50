"""A `packsolve worker` whose pool processes time where a level's cost goes (issue 19's cost table).

    COST_HOOKS_DIR=costs python benchmarks/cost_hooks.py CONCURRENCY   # env as for packsolve worker

The timing lives here, in the benchmark, not in the product: before the worker
starts, functions of packsolve's task path are wrapped by name (queue.consumer,
execution.attempts), and every pool process writes its totals to COST_HOOKS_DIR/PID.json
every half second. What each wrapper measures is in STAGES; pipeline.py turns the
totals into milliseconds per level. A name the code no longer has is left out (and
said in the totals), so the script outlives a refactoring of the consumer.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# (module, function, stage): the wall seconds spent inside each function, per stage.
STAGES = [
    ("packsolve.queue.consumer", "WorkerProcess.run_task", "task"),  # the whole task in the pool process
    ("packsolve.queue.claiming", "claim_many", "claim"),  # claim statements (a lone tiny level: none)
    ("packsolve.execution.attempts", "_prepare", "parse"),  # the level parsed, the solver looked up
    ("packsolve.execution.attempts", "run_batch", "child"),  # the kept solver child: send, solve, read back
    ("packsolve.execution.attempts", "_finish", "verify"),  # the kind's verify, the Outcome made
    ("packsolve.queue.results", "_record", "write"),  # results written (buffered, a timer thread)
    ("packsolve.queue.results", "finish_run_if_done", "write"),  # is the run finished now?
]

_lock = threading.Lock()
_totals: dict[str, list[float]] = {}  # stage -> [seconds, calls]
_span: list[float] = []  # first task start, last task end (monotonic)
_missing: list[str] = []


def _add(stage: str, seconds: float) -> None:
    with _lock:
        entry = _totals.setdefault(stage, [0.0, 0])
        entry[0] += seconds
        entry[1] += 1


def _timed(stage: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _start_dumper()
        start = time.monotonic()
        try:
            return fn(*args, **kwargs)
        finally:
            end = time.monotonic()
            _add(stage, end - start)
            if stage == "task":
                _span[:] = [_span[0] if _span else start, end]

    return wrapper


def _timed_generator(stage: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a generator function: the time of each step counts, not the time between them."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.monotonic()
        inner = fn(*args, **kwargs)
        _add(stage, time.monotonic() - start)

        class Timed:
            def __iter__(self) -> Timed:
                return self

            def __next__(self) -> Any:
                t = time.monotonic()
                try:
                    return next(inner)
                finally:
                    _add(stage, time.monotonic() - t)

            def close(self) -> None:
                t = time.monotonic()
                try:
                    inner.close()
                finally:
                    _add(stage, time.monotonic() - t)

            def throw(self, *exc: Any) -> Any:
                return inner.throw(*exc)

        return Timed()

    return wrapper


_dumper: dict[int, threading.Thread] = {}


def _start_dumper() -> None:
    """Start this process's thread writing its totals every half second (once per process)."""
    if os.getpid() in _dumper:
        return
    out = Path(os.environ["COST_HOOKS_DIR"]) / f"{os.getpid()}.json"

    def dump() -> None:
        while True:
            time.sleep(0.5)
            with _lock:
                data = {"totals": _totals, "span": _span, "missing": _missing}
                text = json.dumps(data)
            out.write_text(text)

    _totals.clear()  # what a parent counted before the fork is not this process's
    _span.clear()
    thread = threading.Thread(target=dump, daemon=True)
    _dumper[os.getpid()] = thread
    thread.start()


def install() -> None:
    """Wrap every function (or Class.method) of STAGES that exists, where it is looked up at call time."""
    import importlib
    import inspect

    for module_name, name, stage in STAGES:
        owner: Any = importlib.import_module(module_name)
        *classes, attribute = name.split(".")
        for part in classes:
            owner = getattr(owner, part, None)
        fn = getattr(owner, attribute, None)
        if fn is None:
            _missing.append(f"{module_name}.{name}")
            continue
        wrap = _timed_generator if inspect.isgeneratorfunction(fn) else _timed
        setattr(owner, attribute, wrap(stage, fn))


def main(concurrency: int) -> None:
    install()
    from packsolve.settings import resolve
    from packsolve.worker import start_worker

    start_worker(resolve({"concurrency": concurrency}), f"costs-{os.getpid()}@bench", "WARNING")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
