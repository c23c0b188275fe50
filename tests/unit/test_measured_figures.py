"""A figure added to SearchStats flows from every measurement to the Outcome without other code changes.

Issue 35: the solver child, a program's run and a dead child's last job all measure through
rlimits.usage/unreported; the child sends the stats whole and the parent reads them back whole.
Here a wider SearchStats (one more field, read from rusage in rlimits._counted) stands in for
the next figure: it must reach the Outcome with nothing else taught about it.
"""

from __future__ import annotations

import resource
import sys
from dataclasses import asdict, make_dataclass
from types import SimpleNamespace

import pytest

from packsolve.execution import attempts, child, rlimits, spawn, supervisor
from packsolve.execution.answer import outcome_of
from packsolve.execution.spec import Limits
from packsolve.outcome import Outcome, SearchStats, Status

# The next figure: voluntary context switches, as the trial measured them.
Wider = make_dataclass("Wider", [("vcsw", int, 0)], bases=(SearchStats,), frozen=True)


@pytest.fixture
def wider(monkeypatch):
    """Teach rlimits (every measurement) and the supervisor (the parent's reading) the wider stats."""
    counted = rlimits._counted
    monkeypatch.setattr(rlimits, "_counted", lambda r: {**counted(r), "vcsw": r.ru_nvcsw})
    monkeypatch.setattr(rlimits, "SearchStats", Wider)
    monkeypatch.setattr(supervisor, "SearchStats", Wider)


def test_every_field_the_child_measured_reaches_the_outcome(wider, monkeypatch):
    # In this process, not a forked child: leave the test process's limits and peak-RSS mark alone.
    monkeypatch.setattr(child, "set_rlimits", lambda limits: None)
    monkeypatch.setattr(child, "reset_peak_rss", lambda: None)

    def work(budget):
        budget.charge(5)
        return Outcome(Status.SOLVED, [1])

    limits = Limits()
    payload = child.run_job(work, limits)
    sent = dict(payload["_usage"])
    assert set(sent) == {"nodes", "wall_s", "cpu_s", "peak_rss_mb", "vcsw"}
    result = supervisor._decode(child.encode(payload, limits))
    kind = SimpleNamespace(verify=lambda level, solution: None)
    out = attempts._finish(attempts._Prepared(kind, {}, work), result)  # type: ignore[arg-type]
    assert out.status is Status.SOLVED and out.solution == [1]
    assert asdict(out.stats) == {**sent, "nodes": 5}


def test_a_dead_childs_last_job_gets_every_counted_figure_its_others_did_not_report(wider):
    total = resource.getrusage(resource.RUSAGE_SELF)
    reported = rlimits.added(Wider(cpu_s=0.0, vcsw=1), Wider(cpu_s=0.0, vcsw=2))
    stats = rlimits.unreported(total, reported, 1.5, 20.0)
    assert isinstance(stats, Wider)
    assert stats.vcsw == max(0, total.ru_nvcsw - 3)
    assert (stats.wall_s, stats.peak_rss_mb) == (1.5, 20.0)


def test_a_programs_run_carries_every_figure_into_its_outcome(wider):
    raw = spawn.run(
        spawn.Command([sys.executable, "-c", 'print(\'{"status": "no_solution", "nodes": 2}\')'], ".", {}),
        Limits(5),
    )
    assert isinstance(raw.stats, Wider)
    out = outcome_of(raw, Limits(5))
    assert out.status is Status.NO_SOLUTION
    assert asdict(out.stats) == {**asdict(raw.stats), "nodes": 2}


def test_every_stats_field_has_its_attempts_column_its_export_field_and_its_history_entry():
    from packsolve.db.models import Attempt
    from packsolve.figures.measures import MEASURED, measured_shown
    from packsolve.report.export import FIELDS

    names = [f for f in asdict(SearchStats())]
    assert list(MEASURED) == names
    assert set(names) <= set(Attempt.__table__.columns.keys())
    assert [f for f in FIELDS if f in names] == names
    row = SimpleNamespace(nodes=7, wall_s=1.234567, cpu_s=None, peak_rss_mb=12.345)
    assert measured_shown(row) == {"nodes": 7, "wall_s": 1.2346, "cpu_s": None, "peak_rss_mb": 12.3}
