"""A run's attempts page by page: every sort column, both directions, filters, against one unpaged read."""

from __future__ import annotations

from sqlalchemy import delete, or_, select, update
from sqlalchemy import text as sa_text

from packsolve.db.models import Attempt
from packsolve.db.session import get_engine, session_scope
from packsolve.report.attempts_page import COLUMNS, AttemptQuery, attempts_page
from tests.support.report_runs import Planned, build_run, strip_level

# Ties (equal times, statuses) and NULLs (queued attempts) in every sorted column.
RUN = [
    Planned(strip_level(i), status, wall, wall, int(wall * 100), f"message {i % 3}")
    for i, (status, wall) in enumerate(
        [
            ("solved", 0.5),
            ("timeout", 2.0),
            ("solved", 0.5),
            (None, 0.0),
            ("error", 0.1),
            ("solved", 1.5),
            ("timeout", 2.0),
            (None, 0.0),
            ("no_solution", 0.7),
            ("solved", 0.5),
            ("memout", 3.0),
        ]
    )
]


def test_pages_sorted_by_any_column_either_way_make_up_the_whole_sorted_run(db_url: str) -> None:
    """Pages of 3, concatenated, list the same levels in the same order as one read of the run
    sorted by that column then id (the database's own place for NULLs), filtered or not."""
    run_id = build_run(db_url, RUN)
    with session_scope(get_engine(db_url)) as session:
        for sort, column in COLUMNS.items():
            for descending in (False, True):
                for status in (None, "solved"):
                    order = [column.desc(), Attempt.id.desc()] if descending else [column, Attempt.id]
                    where = [Attempt.run_id == run_id] + ([Attempt.status == status] if status else [])
                    whole = list(session.scalars(select(Attempt.name).where(*where).order_by(*order)))
                    paged: list[str] = []
                    page = 1
                    while True:
                        q = AttemptQuery(
                            status=status, sort=sort, descending=descending, page=page, per_page=3
                        )
                        got = attempts_page(session, run_id, q)
                        paged += [r["level"] for r in got["rows"]]
                        if page >= got["pages"]:
                            break
                        page += 1
                    assert paged == whole, (sort, descending, status)


# Names and messages for the text search: case, LIKE's wildcards, quotes, accents, short texts.
TEXTS = [
    ("Strip-North", "took 100% of the time"),
    ("strip_south", 'said "no way"'),
    ("stripe-été", "ÉTÉ was hot"),
    ("plain", "strip nothing"),
    ("other", None),
]
QUERIES = ["strip", "STRIP", "ip-", "100%", "p_s", '"no', "été", "ÉTÉ", "st", "%", "_", "zzz", "t"]


def test_the_text_search_finds_what_like_finds_and_sqlite_reads_its_trigram_index(db_url: str) -> None:
    run_id = build_run(
        db_url,
        [Planned(strip_level(i, name), "error", 0.1, message=m or "") for i, (name, m) in enumerate(TEXTS)],
    )
    other = build_run(db_url, [Planned(strip_level(9, "strip-elsewhere"), "solved", 0.1)])
    engine = get_engine(db_url)
    with session_scope(engine) as session:
        # A message changed after the fact, and a run deleted: the index follows both.
        session.execute(
            update(Attempt)
            .where(Attempt.run_id == run_id, Attempt.name == "other")
            .values(message="strip later")
        )
        session.execute(delete(Attempt).where(Attempt.run_id == other))
    with session_scope(engine) as session:
        for text in QUERIES:
            pattern = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            matches = or_(Attempt.name.like(pattern, escape="\\"), Attempt.message.like(pattern, escape="\\"))
            expected = list(
                session.scalars(
                    select(Attempt.name).where(Attempt.run_id == run_id, matches).order_by(Attempt.seq)
                )
            )
            got = attempts_page(session, run_id, AttemptQuery(text=text, per_page=500))
            assert [r["level"] for r in got["rows"]] == expected, text
            assert got["matching"] == len(expected), text
        assert "other" in [
            r["level"] for r in attempts_page(session, run_id, AttemptQuery(text="later"))["rows"]
        ]
        if engine.dialect.name == "sqlite":
            plan = session.execute(
                sa_text(
                    "EXPLAIN QUERY PLAN SELECT rowid FROM attempts_text WHERE attempts_text MATCH '\"strip\"'"
                )
            ).all()
            assert any("VIRTUAL TABLE INDEX" in str(row[-1]) for row in plan), plan
            indexed = session.execute(
                sa_text("SELECT count(*) FROM attempts_text WHERE attempts_text MATCH '\"strip\"'")
            )
            # Strip-North, strip_south, stripe-été, "strip nothing", "strip later"; not the deleted run's.
            assert indexed.scalar() == 5


def test_the_text_search_finds_a_text_in_what_a_solver_printed_read_only_where_output_was_kept(
    db_url: str,
) -> None:
    names = ["crashed", "chatty", "quiet"]
    run_id = build_run(
        db_url, [Planned(strip_level(i, n), "error", 0.1, message="boom") for i, n in enumerate(names)]
    )
    engine = get_engine(db_url)
    printed = {
        "crashed": ("Traceback\nZeroDivisionError: division by zero\n", None),
        "chatty": (None, "100% done"),
    }
    with session_scope(engine) as session:
        for name, (stderr, stdout) in printed.items():
            session.execute(
                update(Attempt)
                .where(Attempt.run_id == run_id, Attempt.name == name)
                .values(stderr=stderr, stdout=stdout)
            )
    with session_scope(engine) as session:
        for text, expected in [
            ("ZeroDivision", ["crashed"]),
            ("100%", ["chatty"]),
            ("boom", names),  # the message still
            ("quiet", ["quiet"]),  # and the name
            ("Traceback", ["crashed"]),
            ("nowhere", []),
        ]:
            got = attempts_page(session, run_id, AttemptQuery(text=text))
            assert [r["level"] for r in got["rows"]] == expected and got["matching"] == len(expected), text
        if engine.dialect.name == "sqlite":
            plan = session.execute(
                sa_text(
                    "EXPLAIN QUERY PLAN SELECT id FROM attempts WHERE run_id = 1 "
                    "AND (stderr IS NOT NULL OR stdout IS NOT NULL)"
                )
            ).all()
            assert any("ix_attempts_run_output" in str(row[-1]) for row in plan), plan
