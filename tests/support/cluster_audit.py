"""What the cluster scenarios assert on: an audit trigger on `attempts` and `runs`, and a deadline watch.

The trigger records every UPDATE that changes an attempt, in the database's own clock, with the
row before and after (as JSON, so columns added later are kept too), classified as:

- ``claim``: the attempt became running, or changed holder or try;
- ``requeue``: running to queued (the scheduler took it back from its holder);
- ``final``: a pending attempt got its final result;
- ``foreign_final``: a final result written over an attempt running under *another* worker: a
  stale worker's result overwriting the current claim;
- ``overwrite``: any change to an attempt that was already final: a second final result.

A second trigger stamps the moment a run is marked finished with the number of its attempts that
were not final then. `DeadlineWatch` polls, during the run, for attempts still `running` past
their deadline plus the scheduler's grace. All of it reads through the observer's Unix socket.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import create_engine, text

FINAL = ("solved", "no_solution", "timeout", "memout", "error", "invalid", "wrong", "lost", "cancelled")

AUDIT_SQL = f"""
CREATE TABLE cluster_audit (
    id bigserial PRIMARY KEY,
    at timestamptz NOT NULL DEFAULT clock_timestamp(),
    attempt_id integer NOT NULL,
    run_id integer NOT NULL,
    level_hash text NOT NULL,
    event text NOT NULL,
    old_status text, new_status text,
    old_worker text, new_worker text,
    old_row jsonb, new_row jsonb
);
CREATE TABLE cluster_run_audit (
    id bigserial PRIMARY KEY,
    at timestamptz NOT NULL DEFAULT clock_timestamp(),
    run_id integer NOT NULL,
    pending integer NOT NULL
);
CREATE FUNCTION cluster_audit_attempt() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    finals text[] := ARRAY[{", ".join(f"'{s}'" for s in FINAL)}];
    ev text;
BEGIN
    IF OLD.status = ANY(finals) THEN
        ev := 'overwrite';
    ELSIF NEW.status = ANY(finals) THEN
        IF OLD.status = 'running' AND NEW.worker IS DISTINCT FROM OLD.worker THEN
            ev := 'foreign_final';
        ELSE
            ev := 'final';
        END IF;
    ELSIF NEW.status = 'queued' AND OLD.status = 'running' THEN
        ev := 'requeue';
    ELSIF NEW.status = 'running' AND (OLD.status <> 'running' OR NEW.worker IS DISTINCT FROM OLD.worker
                                      OR NEW.claims <> OLD.claims) THEN
        ev := 'claim';
    ELSE
        ev := 'other';
    END IF;
    INSERT INTO cluster_audit (attempt_id, run_id, level_hash, event, old_status, new_status,
                               old_worker, new_worker, old_row, new_row)
    VALUES (NEW.id, NEW.run_id, NEW.level_hash, ev, OLD.status, NEW.status, OLD.worker, NEW.worker,
            to_jsonb(OLD), to_jsonb(NEW));
    RETURN NULL;
END $$;
CREATE TRIGGER cluster_audit_attempt AFTER UPDATE ON attempts
    FOR EACH ROW WHEN (OLD.* IS DISTINCT FROM NEW.*) EXECUTE FUNCTION cluster_audit_attempt();
CREATE FUNCTION cluster_audit_run() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.finished_at IS NULL AND NEW.finished_at IS NOT NULL THEN
        INSERT INTO cluster_run_audit (run_id, pending)
        SELECT NEW.id, count(*) FROM attempts WHERE run_id = NEW.id AND status IN ('queued', 'running');
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER cluster_audit_run AFTER UPDATE ON runs FOR EACH ROW EXECUTE FUNCTION cluster_audit_run();
"""


def install_audit(observer_url: str) -> None:
    """Install the audit tables and triggers (after the schema exists)."""
    engine = create_engine(observer_url)
    with engine.begin() as conn:
        conn.exec_driver_sql(AUDIT_SQL)
    engine.dispose()


@dataclass(frozen=True)
class Event:
    """One audited change of an attempt."""

    at: float  # epoch seconds, the database's clock
    attempt_id: int
    level_hash: str
    event: str
    old_status: str
    new_status: str
    old_worker: str | None
    new_worker: str | None


def events(engine: Any, run_id: int) -> list[Event]:
    """Return the run's audited attempt changes in order."""
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT extract(epoch FROM at), attempt_id, level_hash, event, old_status, new_status, "
                "old_worker, new_worker FROM cluster_audit WHERE run_id = :r ORDER BY id"
            ),
            {"r": run_id},
        ).all()
    return [Event(float(r[0]), *r[1:]) for r in rows]


def run_finishes(engine: Any, run_id: int) -> list[tuple[float, int]]:
    """Return (epoch, attempts not final then) for each time the run was stamped finished."""
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT extract(epoch FROM at), pending FROM cluster_run_audit WHERE run_id = :r ORDER BY id"
            ),
            {"r": run_id},
        ).all()
    return [(float(at), int(pending)) for at, pending in rows]


def running(engine: Any, run_id: int) -> list[tuple[int, str | None]]:
    """Return (attempt id, worker) of the run's attempts running now."""
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT id, worker FROM attempts WHERE run_id = :r AND status = 'running' ORDER BY id"),
            {"r": run_id},
        ).all()
    return [(int(i), w) for i, w in rows]


def final_count(engine: Any, run_id: int) -> int:
    with engine.connect() as conn:
        return int(
            conn.execute(
                text(
                    "SELECT count(*) FROM attempts WHERE run_id = :r AND status NOT IN ('queued', 'running')"
                ),
                {"r": run_id},
            ).scalar_one()
        )


class DeadlineWatch:
    """Poll for attempts `running` past their deadline plus grace (plus slack for the poll and one pass).

    The deadline is the attempt's own (`deadline`), or for one without, started_at plus the hard
    limit (none in a run without a time limit: nothing to check). A poll that fails (the database is
    down) is skipped. Sessions of the hosts found idle in a transaction at a violation are kept.
    """

    def __init__(
        self, engine: Any, run_id: int, grace_s: float, slack_s: float, hard_s: float | None
    ) -> None:
        self.engine = engine
        self.run_id = run_id
        self.allowed_s = grace_s + slack_s
        self.hard_s = hard_s
        self.worst_s = 0.0  # how far past its deadline the worst running attempt was seen
        self.violations: dict[int, tuple[str | None, float]] = {}
        self.polls = 0
        # Sessions holding a transaction open while an attempt was overdue (a frozen or cut-off
        # worker's lock keeps the scheduler's SKIP LOCKED away from the row): (client, state, seconds).
        self.blockers: set[tuple[str, str]] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> DeadlineWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)

    def _loop(self) -> None:
        query = text(
            "SELECT id, worker, extract(epoch FROM now() - coalesce(deadline, started_at + make_interval("
            "secs => :hard))) FROM attempts WHERE run_id = :r AND status = 'running'"
        )
        while not self._stop.wait(0.5):
            try:
                with self.engine.connect() as conn:
                    rows = conn.execute(query, {"r": self.run_id, "hard": self.hard_s}).all()
            except Exception:  # the database is down (a scenario restarts it): nothing to see now
                continue
            self.polls += 1
            for attempt_id, worker, past in rows:
                past = float(past or 0.0)
                self.worst_s = max(self.worst_s, past)
                if past > self.allowed_s:
                    self.violations[int(attempt_id)] = (worker, round(past, 1))
                    self._blockers()

    def _blockers(self) -> None:
        query = text(
            "SELECT host(client_addr), state FROM pg_stat_activity WHERE datname = current_database() "
            "AND client_addr IS NOT NULL AND state LIKE 'idle in transaction%'"
        )
        try:
            with self.engine.connect() as conn:
                self.blockers.update((str(a), str(s)) for a, s in conn.execute(query).all())
        except Exception:
            pass


STALE_WORDS = ("stale",)  # a worker's log line saying it refused its own stale result contains this


def stale_refusals(log_text: str) -> int:
    """Return how many of a worker log's lines report a stale result refused (the word 'stale')."""
    return sum(1 for line in log_text.splitlines() if any(w in line.lower() for w in STALE_WORDS))


@dataclass
class Figures:
    """One scenario on one broker: the closing table's row, and the invariants it broke."""

    scenario: str
    broker: str
    levels: int
    damage: str = ""
    lost: int = 0
    duplicated: int = 0
    stale_accepted: int = 0
    stale_refused: int = 0
    recover_s: float | None = None
    lease_bound_s: float | None = None
    run_s: float | None = None
    statuses: dict[str, int] = field(default_factory=dict)
    worst_past_deadline_s: float = 0.0
    violations: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def row(self) -> list[str]:
        def num(x: float | None) -> str:
            return "-" if x is None else f"{x:.1f}"

        verdict = "ok" if not self.violations else f"FAIL ({len(self.violations)})"
        return [
            self.scenario,
            self.broker,
            str(self.levels),
            self.damage,
            str(self.lost),
            str(self.duplicated),
            str(self.stale_accepted),
            str(self.stale_refused),
            num(self.recover_s),
            num(self.lease_bound_s),
            num(self.run_s),
            verdict,
        ]


COLUMNS = [
    "scenario",
    "broker",
    "levels",
    "damage",
    "lost",
    "duplicated",
    "stale accepted",
    "stale refused",
    "recover s",
    "lease bound s",
    "run s",
    "verdict",
]


def table(rows: list[Figures]) -> str:
    """Return the figures as a Markdown table, then each failed row's violations."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(f.row()) + " |" for f in rows]
    for f in rows:
        for v in f.violations:
            lines.append(f"- {f.scenario} / {f.broker}: {v}")
    return "\n".join(lines)


def judge(
    f: Figures,
    records: list[dict[str, Any]],
    evts: list[Event],
    finishes: list[tuple[float, int]],
    watch: DeadlineWatch,
) -> None:
    """Fill f's lost, duplicated and stale figures from the export and the audit; list broken invariants."""
    statuses = Counter(r["status"] for r in records)
    f.statuses = dict(statuses)
    f.lost = statuses.get("lost", 0)
    per_level = Counter(r["level_hash"] for r in records)
    overwritten = {e.attempt_id for e in evts if e.event == "overwrite"}
    f.duplicated = len(overwritten) + sum(n - 1 for n in per_level.values() if n > 1)
    f.stale_accepted = sum(1 for e in evts if e.event == "foreign_final")
    f.worst_past_deadline_s = round(watch.worst_s, 1)
    finals = sum(1 for r in records if r["status"] in FINAL)
    if len(records) != f.levels or finals != f.levels:
        f.violations.append(
            f"{finals} final results for {f.levels} levels ({len(records)} records): {f.statuses}"
        )
    if f.lost:
        f.violations.append(f"{f.lost} levels lost")
    unsolved = {s: n for s, n in statuses.items() if s != "solved"}
    if unsolved:
        f.violations.append(f"levels solvable well within the limit ended {unsolved}")
    if f.duplicated:
        f.violations.append(f"{f.duplicated} levels got a second final result (a final row changed)")
    if f.stale_accepted:
        who = sorted({f"{e.new_worker} over {e.old_worker}" for e in evts if e.event == "foreign_final"})
        f.violations.append(f"{f.stale_accepted} results written over another worker's claim: {who}")
    if not finishes:
        f.violations.append("the run was never stamped finished")
    else:
        at, pending = finishes[0]
        if pending:
            f.violations.append(f"the run was stamped finished with {pending} attempts not final")
        late = [e for e in evts if e.event in ("final", "foreign_final", "overwrite") and e.at > at]
        if late:
            f.violations.append(f"{len(late)} results were written after the run was stamped finished")
    if watch.violations:
        f.violations.append(
            f"{len(watch.violations)} attempts seen running more than {watch.allowed_s:.1f} s past their "
            f"deadline: {dict(list(watch.violations.items())[:5])}"
        )


def taken_from(evts: list[Event], held: list[int], victim: str, since: float) -> dict[int, float]:
    """Return {attempt: seconds after since} for each held attempt taken from victim since then.

    Taken: requeued, marked lost, or claimed or finished by another worker.
    """
    taken: dict[int, float] = {}
    for e in evts:
        if e.attempt_id not in held or e.attempt_id in taken or e.at < since or e.old_worker != victim:
            continue
        moved = e.new_worker is not None and e.new_worker != victim
        if e.event == "requeue" or e.new_status == "lost" or moved:
            taken[e.attempt_id] = e.at - since
    return taken


def lease_bound(evts: list[Event], held: list[int], victim: str, since: float) -> float | None:
    """Return the seconds from a worker's death (since) until the last of its attempts was taken, or None."""
    taken = taken_from(evts, held, victim, since)
    return round(max(taken.values()), 1) if taken else None


def epoch(dt: datetime | None) -> float | None:
    return None if dt is None else dt.timestamp()
