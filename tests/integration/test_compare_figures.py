"""Compare's footer from one SQL aggregate equals the footer over the rows; a finished pair's is kept."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select, update

from packsolve.db.catalog import delete_run
from packsolve.db.models import Attempt, Run, RunSnapshot
from packsolve.db.runs import finish_run_if_done
from packsolve.db.session import get_engine, session_scope
from packsolve.db.workers import now_sql
from packsolve.figures import compare_pairs
from packsolve.figures.compare_pairs import _kept, read_figures
from packsolve.figures.finished import catch_up
from packsolve.levels import make_level
from packsolve.outcome import SUCCESS_VALUES
from packsolve.report.compare import Slice, compare_page, compare_runs, limits_differ, page_of
from packsolve.web import pages
from packsolve.web.cache import Caches, FinishedRuns, Recent
from tests.support.report_runs import Planned, build_run, strip_level

STRIPS = [strip_level(i) for i in range(8)]
SUDOKUS = [make_level(f"s{i}", {"kind": "sudoku", "grid": str(i + 1) + "." * 80}) for i in range(3)]
RUN_A = [
    Planned(STRIPS[0], "solved", 0.5, 0.4, 100),
    Planned(STRIPS[1], "solved", 2.5, 2.4, 900),
    Planned(STRIPS[2], "timeout", 10.2, 10.0, 5000),
    Planned(STRIPS[3], "no_solution", 1.5, 1.5, 300),
    Planned(STRIPS[4], "error", 0.1, 0.1, 3),
    Planned(STRIPS[5], "memout", 4.0, 3.9, 4000),
    Planned(STRIPS[6], None),  # queued: no PAR-2
    Planned(SUDOKUS[0], "no_solution", 0.75, 0.7, 10),
    Planned(SUDOKUS[1], "timeout", 10.0, 10.0, 10),
]
RUN_B = [
    Planned(STRIPS[0], "solved", 0.25, 0.2, 50),
    Planned(STRIPS[1], "timeout", 5.1, 5.0, 9000),
    Planned(STRIPS[2], "solved", 1.0, 1.0, 400),
    Planned(STRIPS[3], "no_solution", 0.5, 0.5, 100),
    Planned(STRIPS[5], "wrong", 0.2, 0.2, 10),
    Planned(STRIPS[7], "solved", 0.7, 0.6, 70),
    Planned(SUDOKUS[0], "no_solution", 0.25, 0.2, 10),
    Planned(SUDOKUS[2], "error", 0.1, 0.1, 1),
]
RUN_C = [
    Planned(STRIPS[0], "solved", 0.3, 0.3, 60),
    Planned(STRIPS[2], "solved", 3.0, 3.0, 60),
    Planned(STRIPS[7], "timeout", 10.5, 10.0, 60),
    Planned(SUDOKUS[1], "no_solution", 2.0, 2.0, 60),
]


def _decided(c: Any) -> bool:
    return c is not None and c["status"] in SUCCESS_VALUES


def _score(c: Any) -> float | None:
    return None if c is None else c["par2_s"]


def python_footer(rows: list[Any], col: int, runs: list[Run]) -> dict[str, Any]:
    """The footer as compare_runs computed it over its rows before the aggregate (the reference)."""
    cells = [c for r in rows if (c := r["results"][col]) is not None]
    both = [r["results"] for r in rows if _decided(r["results"][0]) and _decided(r["results"][col])]
    base_t, this_t = (sum(c[i]["wall_s"] or 0.0 for c in both) for i in (0, col))
    shared = [
        r["results"]
        for r in rows
        if _score(r["results"][0]) is not None and _score(r["results"][col]) is not None
    ]
    common = [r["results"] for r in rows if all(_score(c) is not None for c in r["results"])]
    comparable = limits_differ(runs[0], runs[col]) is None
    base_p, this_p = (sum(c[i]["par2_s"] for c in shared) for i in (0, col))
    common_base, common_this = (sum(c[i]["par2_s"] for c in common) for i in (0, col))
    return {
        "levels": len(cells),
        "solved": sum(c["status"] == "solved" for c in cells),
        "decided": sum(_decided(c) for c in cells),
        "par2_s": sum(c["par2_s"] for c in cells if c["par2_s"] is not None),
        "peak_rss_mb": max((c["peak_rss_mb"] for c in cells if c["peak_rss_mb"] is not None), default=None),
        "both_decided": len(both),
        "speedup": round(base_t / this_t, 3) if comparable and both and this_t > 0 else None,
        "par2_speedup": round(base_p / this_p, 3) if comparable and shared and this_p > 0 else None,
        "common_levels": len(common),
        "common_par2_s": common_this if common else None,  # no level every run scored: missing
        "common_speedup": round(common_base / common_this, 3)
        if comparable and common and common_this
        else None,
    }


@pytest.mark.parametrize("kind", [None, "sudoku"])
def test_the_sql_footer_equals_the_footer_over_the_rows(db_url: str, kind: str | None) -> None:
    a = build_run(db_url, RUN_A, time_limit=10.0)
    b = build_run(db_url, RUN_B, time_limit=5.0)  # other limits: no speedup, no PAR-2 ratios
    c = build_run(db_url, RUN_C, time_limit=10.0)
    with session_scope(get_engine(db_url)) as session:
        for ids in ([a, b], [a, c], [a, b, c], [c, a]):
            runs = [session.get(Run, i) for i in ids]
            data = compare_runs(session, runs, kind=kind)
            assert len({r["kind"] for r in data["rows"]}) == (1 if kind else 2)
            for col, foot in enumerate(data["footer"]):
                want = python_footer(data["rows"], col, runs)
                got = {k: foot[k] for k in want}  # type: ignore[literal-required]
                assert got == pytest.approx(want, abs=1e-3), (ids, col)
            if ids == [a, c] and kind is None:  # equal limits, both decided a level: a speedup
                assert data["footer"][1]["speedup"] == pytest.approx(0.5 / 0.3, abs=1e-3)


def test_pages_of_rows_follow_compare_runs_order_and_filters(db_url: str) -> None:
    a = build_run(db_url, RUN_A, time_limit=10.0)
    b = build_run(db_url, RUN_B, time_limit=10.0)
    with session_scope(get_engine(db_url)) as session:
        runs = [session.get(Run, a), session.get(Run, b)]
        for differs in (False, True):
            for kind in (None, "onestroke"):
                every = compare_runs(session, runs, differs=differs, kind=kind)["rows"]
                paged = []
                for offset in range(0, len(every) + 3, 3):
                    page = compare_page(session, runs, differs, kind, offset, 3)
                    assert (
                        page["matching"] == len(every)
                        and page["footer"] == compare_runs(session, runs, kind=kind)["footer"]
                    )
                    paged += page["rows"]
                assert paged == every


def _finish(url: str, run_id: int, when: str) -> None:
    with session_scope(get_engine(url)) as session:
        stamp = now_sql(session) if when == "now" else None
        session.execute(update(Run).where(Run.id == run_id).values(finished_at=stamp))


def _footer(url: str, ids: list[int]) -> list[Any]:
    with session_scope(get_engine(url)) as session:
        return compare_runs(session, [session.get(Run, i) for i in ids])["footer"]


def _kept_rows(url: str, a: int, b: int) -> int:
    """Return how many kinds' figures are kept for the pair (a, b), whether they still hold or not."""
    with session_scope(get_engine(url)) as session:
        where = (RunSnapshot.run_id == b, RunSnapshot.name.startswith(f"compare/{a}@"))
        return sum(len(payload) for payload in session.scalars(select(RunSnapshot.payload).where(*where)))


def _set_status(url: str, run_id: int, level_hash: str, status: str) -> None:
    with session_scope(get_engine(url)) as session:
        session.execute(
            update(Attempt)
            .where(Attempt.run_id == run_id, Attempt.level_hash == level_hash)
            .values(status=status)
        )


def test_a_finished_pair_is_kept_and_read_again_once_resumed_or_deleted(db_url: str) -> None:
    a = build_run(db_url, RUN_A, time_limit=10.0)
    b = build_run(db_url, RUN_B, time_limit=10.0)
    _finish(db_url, a, "now")
    _finish(db_url, b, "")  # b still going: its figures are read every time, never kept
    first = _footer(db_url, [a, b])
    assert _kept_rows(db_url, a, b) == 0
    _set_status(db_url, b, STRIPS[1].hash, "solved")
    assert _footer(db_url, [a, b])[1]["solved"] == first[1]["solved"] + 1
    _finish(db_url, b, "now")
    finished = _footer(db_url, [a, b])
    assert _kept_rows(db_url, a, b) == 2  # one row per kind
    # A finished run's attempts do not change; changed behind its back, the kept figures show.
    _set_status(db_url, b, STRIPS[0].hash, "error")
    assert _footer(db_url, [a, b]) == finished
    # Resumed and finished again (another finished_at): read again.
    _finish(db_url, b, "")
    _finish(db_url, b, "now")
    assert _footer(db_url, [a, b])[1]["solved"] == finished[1]["solved"] - 1
    with session_scope(get_engine(db_url)) as session:
        delete_run(session, b)
    assert _kept_rows(db_url, a, b) == 0


def _aggregates(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, ...]]:
    """Collect the runs of each read of compare figures (read_figures: the vectors' or SQL's aggregate).

    Only reads made through the module (compare_figures, keep_rerun_pairs), not the tests' own.
    """
    seen: list[tuple[int, ...]] = []
    real = compare_pairs.read_figures

    def spy(db: Any, runs: Any) -> Any:
        seen.append(tuple(r.id for r in runs))
        return real(db, runs)

    monkeypatch.setattr(compare_pairs, "read_figures", spy)
    return seen


def test_a_rerun_finished_has_its_compare_with_its_parent_kept_at_once(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rerun finished has its pair with its parent kept by the scheduler's pass: the first compare reads it.

    A parent resumed and finished again has its pair with its finished rerun kept again. The finish
    itself reads no pair.
    """
    a = build_run(db_url, RUN_B, time_limit=10.0)  # every attempt recorded: finished by record()
    b = build_run(db_url, RUN_C, time_limit=10.0, parent=a)
    assert _kept_rows(db_url, a, b) == 0  # the finish keeps nothing
    engine = get_engine(db_url)
    with session_scope(engine) as session:
        assert sorted(catch_up(session) + catch_up(session)) == [a, b]  # two scheduler passes, a run each
    assert _kept_rows(db_url, a, b) == 2  # both kinds' figures
    with session_scope(engine) as session:
        runs = [session.get(Run, a), session.get(Run, b)]
        assert all(r is not None and r.finished_at is not None for r in runs)
        assert _kept(session, *runs) == read_figures(session, runs)  # what a recount gives
    aggregates = _aggregates(monkeypatch)
    with session_scope(engine) as session:
        runs = [session.get(Run, a), session.get(Run, b)]
        data = compare_runs(session, runs)
        assert data["footer"][1]["speedup"] == pytest.approx(
            (0.25 + 1.0) / (0.3 + 3.0), abs=1e-3
        )  # strips 0 and 2
        assert aggregates == []  # the first compare of the pair read the kept figures
    _finish(db_url, a, "")  # the parent resumed: its pair no longer holds
    _set_status(db_url, a, STRIPS[0].hash, "error")
    with session_scope(engine) as session:
        assert finish_run_if_done(session, a)
    assert aggregates == []  # its finish reads no pair
    with session_scope(engine) as session:
        assert catch_up(session) == [a]
    assert len(aggregates) == 1  # the scheduler's pass read the pair again, once
    with session_scope(engine) as session:
        runs = [session.get(Run, a), session.get(Run, b)]
        kept = _kept(session, *runs)
        assert kept is not None and kept == read_figures(session, runs)
        assert compare_runs(session, runs)["footer"][0]["solved"] == 2  # strips 2 and 7 of RUN_B
    assert len(aggregates) == 1  # the compare read what the pass kept (the recount above is not counted)


def test_the_dashboard_reads_a_set_of_finished_runs_once_and_a_running_one_every_few_seconds(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A dashboard's caches, with a minute for its 5 s, so that a loaded machine does not see the
    # figures expire within the test.
    caches = Caches(FinishedRuns(), Recent(ttl=60.0))
    a = build_run(db_url, RUN_B, time_limit=10.0)
    b = build_run(db_url, RUN_C, time_limit=10.0)
    c = build_run(db_url, RUN_A, time_limit=10.0)  # a queued attempt: still going
    engine = get_engine(db_url)
    aggregates = _aggregates(monkeypatch)

    def dashboard(ids: list[int]) -> tuple[Any, float | None, Any]:
        """Return what the compare page reads three times over, its age, and a recount's figures."""
        for _ in range(3):
            with session_scope(engine) as session:
                runs = [session.get(Run, i) for i in ids]
                figures, age = pages._compare_figures(caches, session, runs)
        reads = len(aggregates)
        with session_scope(engine) as session:
            recount = read_figures(session, [session.get(Run, i) for i in ids])
        del aggregates[reads:]
        return figures, age, recount

    figures, age, recount = dashboard([a, b, c])
    assert figures == recount and age is not None and 0 <= age < 60
    assert len(aggregates) == 1  # three requests, one aggregate: the run going is read once a while
    _set_status(db_url, c, STRIPS[0].hash, "timeout")
    figures, age, recount = dashboard([a, b, c])
    assert figures != recount and len(aggregates) == 1  # a few seconds old, as the page says
    _finish(db_url, c, "now")
    figures, age, recount = dashboard([a, b, c])
    assert figures == recount and age is None  # finished: exact, kept
    assert len(aggregates) == 2
    figures, age, recount = dashboard([a, b, c])
    assert len(aggregates) == 2  # kept: no aggregate however often the page is asked
    with session_scope(engine) as session:
        runs = [session.get(Run, i) for i in (a, c)]
        figures, age = pages._compare_figures(caches, session, runs)
        page = page_of(session, runs, figures, Slice(False, None, 0, 5), age)
        assert page["footer"] == compare_runs(session, runs)["footer"] and page["figures_age_s"] is None
