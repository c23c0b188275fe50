"""A worker process's results: the shared ResultSink, writing through fencing and stamping runs after."""

from __future__ import annotations

import functools
import logging

from sqlalchemy import Connection, Engine

from packsolve.attempt import Result
from packsolve.db import counters
from packsolve.db.attempts import record, stale_of
from packsolve.db.retry import in_transaction
from packsolve.db.runs import finish_run_if_done
from packsolve.db.sink import FlushPolicy, ResultSink
from packsolve.settings import Settings

log = logging.getLogger("packsolve.worker")


def worker_sink(engine: Engine, settings: Settings) -> ResultSink:
    """Return a worker process's result sink: written in its timer thread by the worker's FlushPolicy.

    A batch goes in one transaction, retried for up to the db_patience setting on a lost connection
    (then the results stay buffered for the next flush); then the runs it touched are
    checked for their end, each in a fresh transaction. At process exit the owner flushes.
    """
    return ResultSink(
        functools.partial(_write, engine, settings.db_patience),
        FlushPolicy.worker(settings),
        background=True,
        after=functools.partial(_finish_runs, engine, settings.db_patience),
    )


def _write(engine: Engine, patience_s: float, results: list[Result]) -> None:
    in_transaction(engine, functools.partial(_record, results=results), patience_s)


def _finish_runs(engine: Engine, patience_s: float, results: list[Result]) -> None:
    """Stamp the runs finished whose last results were just written, each in a fresh transaction.

    Fresh: two workers committing a run's last results at once each see the other's
    row still pending inside their own, and neither would stamp the run.
    """
    for run_id in sorted({r.run_id for r in results}):
        try:
            in_transaction(engine, functools.partial(finish_run_if_done, run_id=run_id), patience_s)
        except Exception:  # the scheduler stamps it on its next pass
            log.exception("checking whether run %s is finished failed", run_id)


def _record(connection: Connection, results: list[Result]) -> int:
    written = record(connection, results, finish=False)
    if written < len(results):
        # Fencing at work: a result whose claim was taken back (this process was frozen or cut
        # off past its lease) is refused; the attempt's current holder reports it.
        stale = stale_of(connection, results)
        for r, why in stale:
            log.warning("stale result refused: run %s level %s: %s", r.run_id, r.level_hash[:12], why)
        if stale:  # counted in the same transaction: /metrics shows what was refused, exactly
            counters.add(connection, counters.STALE_RESULTS, by=len(stale))
    return written
