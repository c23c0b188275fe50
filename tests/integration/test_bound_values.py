"""Every value a user hands packsolve reaches the database as a bound parameter, never inside the SQL.

A listener on every engine (SQLAlchemy's before_cursor_execute) looks at each statement sent while
representative commands run in this process with hostile values: a label, level file names and
level contents, kind, status and message filters, a worker's name, the dashboard's search fields,
each carrying MARKER and quotes. A statement whose SQL text holds MARKER (quoted, escaped or not)
fails the test; the same values must be seen among the statements' parameters, so the test cannot
pass by never sending them. On SQLite and on PostgreSQL.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode

import pytest
from click.testing import CliRunner
from sqlalchemy import Engine, event, text

from packsolve import settings
from packsolve.cli import cli

MARKER = "Qz7Kw"  # in every hostile value; in no SQL packsolve writes itself
LABEL = f"""{MARKER}'s "night"; DROP TABLE runs; --"""
RELABEL = f"{MARKER} o'clock \\ %_"
NAMES = [f"""{MARKER}'s "first".json""", f"{MARKER} 100% _x_ `b`.json"]
VERTEX = f"{MARKER}'a"
WORKER = f"""w-{MARKER}'"@host"""


@dataclass
class Sent:
    """What the listener saw: statements whose text held MARKER, and how many carried it as a parameter."""

    inlined: list[str] = field(default_factory=list)
    bound: int = 0
    statements: int = 0


@contextmanager
def watched() -> Iterator[Sent]:
    """Watch every statement of every engine (those the commands make too) while the block runs."""
    sent = Sent()

    def check(conn, cursor, statement, parameters, context, executemany) -> None:  # noqa: ANN001
        sent.statements += 1
        if MARKER in statement:
            sent.inlined.append(statement)
        if MARKER in repr(parameters):
            sent.bound += 1

    event.listen(Engine, "before_cursor_execute", check)
    try:
        yield sent
    finally:
        event.remove(Engine, "before_cursor_execute", check)


@pytest.fixture
def url(db_url: str, clean_cwd: Path) -> str:
    """The test's own database (db_url), its own working directory and the settings' variables unset."""
    return db_url


def invoke(url: str, *args: str) -> tuple[int, str]:
    """Run the CLI here on url; return (exit code, stdout + stderr); a bug's exception propagates."""
    res = CliRunner().invoke(cli, list(args), env={"PACKSOLVE_DATABASE_URL": url, "COLUMNS": "200"})
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    return res.exit_code, res.stdout + res.stderr


def write_pack(folder: Path) -> Path:
    """Write levels whose file names and contents carry MARKER and quotes; return the pack's folder."""
    folder.mkdir()
    (folder / NAMES[0]).write_text(json.dumps({"kind": "coins", "notes": [1, 2, 5], "target": 7}))
    (folder / NAMES[1]).write_text(json.dumps({"kind": "euler", "edges": [[VERTEX, "b"], ["b", "c"]]}))
    return folder


def test_the_watch_catches_a_value_written_into_the_sql(url: str) -> None:
    """The check itself: a value in the statement's text is seen, one bound is not taken for it."""
    from packsolve.db.session import get_engine

    engine = get_engine(url)
    with watched() as sent, engine.connect() as conn:
        conn.execute(text("SELECT :v"), {"v": LABEL})
        assert (sent.inlined, sent.bound) == ([], 1)
        conn.execute(text(f"SELECT '{MARKER}'"))  # what this file exists to refuse
    assert len(sent.inlined) == 1


def test_commands_the_dashboard_and_a_worker_bind_every_value_the_user_gave(url: str, tmp_path: Path) -> None:
    pack = write_pack(tmp_path / "pack")
    with watched() as sent:
        code, out = invoke(url, "solve", str(pack), "-q", "-j", "1", "--label", LABEL)
        assert code == 0, out
        ran = _cli_reads_and_edits(url, pack)
        _dashboard(url)
        _worker(url)
    assert sent.inlined == [], sent.inlined[:3]
    assert ran >= 15 and sent.bound >= ran, (ran, sent.bound, sent.statements)


def _cli_reads_and_edits(url: str, pack: Path) -> int:
    """Run the reading and editing commands with hostile names and filters; return how many ran."""
    level = str(pack / NAMES[0])
    calls: list[tuple[tuple[str, ...], tuple[int, ...]]] = [
        (("status", LABEL, "--format", "json"), (0,)),
        (("runs", "--format", "json"), (0,)),
        (("report", "summary", LABEL, "--format", "json"), (0,)),
        (("report", "hardest", "--run", LABEL, "--kind", LABEL, "--format", "json"), (0,)),
        (("report", "failures", LABEL, "--format", "json"), (0,)),
        (("report", "curve", LABEL, "--kind", LABEL, "--format", "json"), (0,)),
        (("export", LABEL, "--format", "json", "--output", "-"), (0,)),
        (("show", level, "--format", "json"), (0,)),
        (("show", f"{MARKER}'; --", "--format", "json"), (2,)),
        (("status", f"{MARKER}' OR '1'='1"), (2,)),
        (("rerun", LABEL, "--status", "solved", "--kind", LABEL, "--local", "-q"), (2,)),
        (("rerun", LABEL, "--status", "solved", "--message", f"{MARKER}%'", "--local", "-q"), (2,)),
        (("rerun", LABEL, "--status", "solved", "--local", "-q", "-j", "1", "--label", RELABEL), (0,)),
        (("report", "compare", LABEL, RELABEL, "--kind", LABEL, "--format", "json"), (0,)),
        (("runs", "label", LABEL, f"{RELABEL}-2"), (0,)),
        (("cancel", f"{RELABEL}-2"), (0,)),
        (("runs", "delete", RELABEL, "--yes"), (0,)),
    ]
    for args, codes in calls:
        code, out = invoke(url, *args)
        assert code in codes, (args, code, out)
    code, out = invoke(url, "export", f"{RELABEL}-2", "--format", "json", "--output", "-")
    assert code == 0 and {r["level"] for r in json.loads(out)} == {str(pack / n) for n in NAMES}, out
    return len(calls) + 1


def _dashboard(url: str) -> None:
    """The run page's attempt filters and search, and the hardest page, with hostile query values."""
    from packsolve.db.session import get_engine
    from packsolve.web import pages
    from packsolve.web.app import create_app
    from packsolve.web.security import Guard
    from tests.support.dashboard import handled

    app = create_app(settings.Settings(database_url=url), Guard(), engine=get_engine(url))
    hostile = {"q": f"{MARKER}' OR 1=1 --", "kind": LABEL, "worker": WORKER, "heuristic": LABEL}

    ref = f"{RELABEL}-2"
    page = handled(app, pages.run_page, f"/runs/{ref}", urlencode(hostile).encode(), run=ref)
    assert page.status_code == 200
    page = handled(app, pages.hardest_page, "/hardest", urlencode({"run": ref, "kind": LABEL}).encode())
    assert page.status_code == 200


def _worker(url: str) -> None:
    """A worker named with quotes claims, runs and records a distributed run's attempts."""
    from packsolve.db.runs import PlannedAttempt, RunOptions, create_run
    from packsolve.db.session import get_engine, session_scope
    from packsolve.execution import AttemptSpec, Limits
    from packsolve.levels import make_level
    from packsolve.queue.consumer import WorkerProcess
    from packsolve.queue.protocol import PendingAttempt, decode, encode
    from packsolve.settings import resolve

    levels = [
        make_level(f"{MARKER}'{i}", {"kind": "coins", "notes": [1, 2, 5], "target": 7 + i}) for i in range(3)
    ]
    with session_scope(get_engine(url)) as s:
        planned = [PlannedAttempt(level, "dp", i) for i, level in enumerate(levels)]
        run_id = create_run(s, planned, RunOptions(mode="distributed", time_limit=5, label=f"{LABEL} dist"))
    items = [PendingAttempt(lv.hash, AttemptSpec("coins", "dp", lv.data, Limits(5))) for lv in levels]
    process = WorkerProcess(resolve({"database_url": url}), WORKER)
    try:
        process.run_task(decode(encode(run_id, items, 3)))
    finally:
        process.stop()
    code, out = invoke(url, "export", f"{LABEL} dist", "--format", "json", "--output", "-")
    assert code == 0 and {r["worker"] for r in json.loads(out)} == {WORKER}, out
