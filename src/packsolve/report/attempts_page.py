"""A run's attempts one page at a time: sorted by any column, filtered, counted in the database."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import Integer, and_, func, or_, select, text
from sqlalchemy import column as sql_column
from sqlalchemy.orm import Session

from packsolve.db.models import RUN_FIGURES, Attempt
from packsolve.errors import ReportError
from packsolve.outcome import Status
from packsolve.report.export import iso
from packsolve.report.metrics import rounded

# The columns a page shows and may be sorted by (the user's name -> the column).
COLUMNS = {
    "seq": Attempt.seq,
    "level": Attempt.name,
    "kind": Attempt.kind,
    "heuristic": Attempt.heuristic,
    "status": Attempt.status,
    "wall_s": Attempt.wall_s,
    "cpu_s": Attempt.cpu_s,
    "nodes": Attempt.nodes,
    "peak_rss_mb": Attempt.peak_rss_mb,
    "length": Attempt.length,
    "worker": Attempt.worker,
    "tries": Attempt.tries,
    "finished_at": Attempt.finished_at,
}
PER_PAGE = 50
MAX_PER_PAGE = 500


@dataclass(frozen=True)
class AttemptQuery:
    """What a page of attempts asks for: filters (None: any), the sort column and direction, the page."""

    kind: str | None = None
    status: str | None = None
    heuristic: str | None = None
    worker: str | None = None
    text: str | None = None  # held in the level name, the message or the kept output
    sort: str = "seq"
    descending: bool = False
    page: int = 1
    per_page: int = PER_PAGE

    def check(self) -> AttemptQuery:
        """Return self; raise ReportError saying what would work for a bad sort column, page or size."""
        if self.sort not in COLUMNS:
            raise ReportError(f"cannot sort by {self.sort!r}: sort by one of {', '.join(COLUMNS)}")
        if self.status is not None and self.status not in STATUS_VALUES:
            raise ReportError(f"no status {self.status!r}: filter by one of {', '.join(STATUS_VALUES)}")
        if self.page < 1:
            raise ReportError(f"page {self.page} does not exist: pages count from 1")
        if not 1 <= self.per_page <= MAX_PER_PAGE:
            raise ReportError(f"{self.per_page} rows per page: ask for 1 to {MAX_PER_PAGE}")
        return self


STATUS_VALUES = tuple(s.value for s in Status)

# SQLite's trigram index (attempts_text, migration 0014) finds texts of three characters or more.
TRIGRAM = 3


def _where(session: Session, run_id: int, q: AttemptQuery) -> list[Any]:
    where: list[Any] = [Attempt.run_id == run_id]
    for column, value in (
        (Attempt.kind, q.kind),
        (Attempt.status, q.status),
        (Attempt.heuristic, q.heuristic),
        (Attempt.worker, q.worker),
    ):
        if value:
            where.append(column == value)
    if q.text:
        where.append(_holding(session, run_id, q.text))
    return where


def _holding(session: Session, run_id: int, needle: str) -> Any:
    """Return the condition of an attempt holding needle in its level name, its message or its kept output.

    Names and messages are found by their trigram indexes; output, which no text index covers (it
    would weigh several times the output), is read in the run's attempts that kept some
    (ix_attempts_run_output).
    """
    # LIKE's wildcards in the user's text are matched as themselves.
    pattern = "%" + needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    said = or_(Attempt.name.like(pattern, escape="\\"), Attempt.message.like(pattern, escape="\\"))
    kept = or_(Attempt.stderr.is_not(None), Attempt.stdout.is_not(None))  # as ix_attempts_run_output's
    printed = and_(
        kept,
        or_(Attempt.stderr.like(pattern, escape="\\"), Attempt.stdout.like(pattern, escape="\\")),
    )
    if len(needle) < TRIGRAM or session.get_bind().dialect.name != "sqlite":
        return or_(said, printed)
    # SQLite: the FTS index narrows the run to the attempts whose name or message holds the text's
    # trigrams (ignoring case as LIKE does), the partial index to those that kept output; LIKE keeps
    # its exact meaning.
    phrase = '"' + needle.replace('"', '""') + '"'
    held = text("SELECT rowid FROM attempts_text WHERE attempts_text MATCH :phrase").bindparams(phrase=phrase)
    with_output = select(Attempt.id).where(Attempt.run_id == run_id, kept)
    return or_(
        and_(said, Attempt.id.in_(held.columns(sql_column("rowid", Integer)))),
        and_(printed, Attempt.id.in_(with_output)),
    )


def count_matching(session: Session, run_id: int, q: AttemptQuery) -> int:
    """Return how many of the run's attempts pass q's filters.

    Filters on kind, status and heuristic alone are counted in run_figures (a few rows per run);
    a worker or a text, over the run's attempts.
    """
    if not q.worker and not q.text:
        f = RUN_FIGURES.c
        where = [f.run_id == run_id]
        where += [
            column == value
            for column, value in ((f.kind, q.kind), (f.status, q.status), (f.heuristic, q.heuristic))
            if value
        ]
        return int(session.execute(select(func.coalesce(func.sum(f.attempts), 0)).where(*where)).scalar_one())
    return int(
        session.execute(
            select(func.count()).select_from(Attempt).where(*_where(session, run_id, q))
        ).scalar_one()
    )


def attempts_page(
    session: Session, run_id: int, q: AttemptQuery, matching: int | None = None
) -> dict[str, Any]:
    """Return {rows, matching, page, pages, asked} of the run's attempts: a page past the last gives
    the last page, asked then the page asked for (else None). A link to page 2 made while a run had
    100 queued attempts outlives them: the list shrank, the link still answers.

    Only the page's rows leave the database: sorting, filtering and counting
    happen there, on the run's indexes. matching, if known (a finished run's
    count, kept), saves the count.
    """
    q.check()
    where = _where(session, run_id, q)
    if matching is None:
        matching = count_matching(session, run_id, q)
    pages = max(1, -(-matching // q.per_page))
    asked = None
    if q.page > pages:
        asked, q = q.page, replace(q, page=pages)
    column = COLUMNS[q.sort]
    # Each database's own place for NULLs (first going up in SQLite, last in PostgreSQL), so the
    # order is its index's, read forwards or backwards; ties in the order the attempts were made.
    order: list[Any] = (
        [column.desc(), Attempt.id.desc()] if q.descending else [column.asc(), Attempt.id.asc()]
    )
    shown = (
        Attempt.seq,
        Attempt.name,
        Attempt.level_hash,
        Attempt.kind,
        Attempt.heuristic,
        Attempt.status,
        Attempt.wall_s,
        Attempt.cpu_s,
        Attempt.nodes,
        Attempt.peak_rss_mb,
        Attempt.length,
        Attempt.worker,
        Attempt.tries,
        Attempt.finished_at,
        Attempt.message,
    )
    # The page's ids first, then its rows: skipping to a far page walks the sort's index only
    # (run, column, id), never the rows it skips.
    ids = (
        select(Attempt.id).where(*where).order_by(*order).limit(q.per_page).offset((q.page - 1) * q.per_page)
    )
    result = session.execute(select(*shown).where(Attempt.id.in_(ids.scalar_subquery())).order_by(*order))
    rows = []
    for r in result:
        row = dict(r._mapping)
        row["level"] = row.pop("name")
        for key in ("wall_s", "cpu_s"):
            row[key] = rounded(row[key])
        row["peak_rss_mb"] = rounded(row["peak_rss_mb"], 1)
        row["finished_at"] = iso(row["finished_at"])
        rows.append(row)
    return {"rows": rows, "matching": matching, "page": q.page, "pages": pages, "asked": asked}
