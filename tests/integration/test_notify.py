"""--notify COMMAND gets the run's summary JSON on stdin when the run ends; --notify-url gets it POSTed.

The URL is a tiny HTTP server of the test's own on loopback that fails the first request: the POST is retried.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

from tests.support.inprocess import invoke

PACK = Path(__file__).resolve().parents[2] / "examples" / "packs" / "coins"


class Hook(BaseHTTPRequestHandler):
    received: list[dict] = []
    calls = 0

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        Hook.calls += 1
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if Hook.calls == 1:  # a chat server's bad moment: the POST must be retried
            self.send_response(503)
            self.end_headers()
            return
        Hook.received.append({"type": self.headers["Content-Type"], "body": json.loads(body)})
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_notify_runs_a_command_with_the_summary_and_posts_it_to_a_url_retrying(sqlite_url, tmp_path):
    server = HTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        out = tmp_path / "summary.json"
        res = invoke(
            "solve",
            str(PACK),
            "-q",
            "--notify",
            f"sh -c 'cat > {out}'",
            "--notify-url",
            f"http://127.0.0.1:{server.server_port}/hook",
            env={"PACKSOLVE_DATABASE_URL": sqlite_url},
        )
    finally:
        server.shutdown()
    assert res.returncode == 0, res.stderr
    summary = json.loads(out.read_text())
    assert (summary["run"], summary["total"], summary["state"]) == (1, 5, "finished")
    assert Hook.calls == 2 and Hook.received[0]["body"] == summary
    assert Hook.received[0]["type"] == "application/json"


def test_a_notification_that_fails_is_a_warning_not_a_failed_run(sqlite_url, tmp_path):
    res = invoke(
        "solve",
        str(PACK),
        "-q",
        "--notify",
        "false",
        "--notify-url",
        "http://127.0.0.1:9/nothing-here",
        env={"PACKSOLVE_DATABASE_URL": sqlite_url},
    )
    assert res.returncode == 0 and "Traceback" not in res.stderr
    assert "--notify: the command exited 1" in res.stderr and "--notify-url" in res.stderr


def _notified(out: Path) -> dict:
    return json.loads(out.read_text())


def test_a_local_rerun_and_a_resume_notify_when_they_end(sqlite_url, tmp_path):
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    assert invoke("solve", str(PACK), "-q", "--label", "first", env=env).returncode == 0
    out = tmp_path / "rerun.json"
    res = invoke(
        "rerun",
        "first",
        "--status",
        "solved,no_solution",
        "--local",
        "-q",
        "--notify",
        f"sh -c 'cat > {out}'",
        env=env,
    )
    assert res.returncode == 0, res.stderr
    child = _notified(out)
    assert (child["run"], child["state"], child["total"]) == (2, "finished", 5)
    # Two levels left without a result, as a Ctrl-C leaves them (cancelled before they ran): resumed.
    from packsolve.db.models import Attempt
    from packsolve.db.session import get_engine, session_scope

    with session_scope(get_engine(sqlite_url)) as session:
        for attempt in session.query(Attempt).filter_by(run_id=2).limit(2):
            attempt.status, attempt.solution, attempt.wall_s = "cancelled", None, None
    resumed_out = tmp_path / "resume.json"
    res = invoke("resume", "2", "-q", "--notify", f"sh -c 'cat > {resumed_out}'", env=env)
    assert res.returncode == 0, res.stderr
    resumed = _notified(resumed_out)
    assert (resumed["run"], resumed["state"], resumed["counts"].get("cancelled", 0)) == (2, "finished", 0)


def test_submit_with_notify_waits_for_the_workers_then_notifies(tmp_path, broker, start_worker, sqlite_url):
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": broker}
    start_worker(broker, sqlite_url, "w1@test")
    out = tmp_path / "submit.json"
    res = invoke("submit", str(PACK), "--notify", f"sh -c 'cat > {out}'", env=env)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "1"  # the run id, as without --notify
    assert "waiting for run 1 to end, to notify" in res.stderr
    summary = _notified(out)
    assert (summary["run"], summary["state"], summary["total"]) == (1, "finished", 5)


def test_bad_notify_options_are_refused_at_the_start_not_after_the_run(sqlite_url, tmp_path):
    """A mistyped --notify-url or --notify program is one line, exit 2, before anything is created."""
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    cases = [
        (["--notify-url", "notaurl"], "'--notify-url': 'notaurl' is not an http:// or https:// URL"),
        (["--notify-url", "ftp://example.org/x"], "is not an http:// or https:// URL"),
        (["--notify", "no-such-notifier --to me"], "'no-such-notifier' is not an executable program"),
        (["--notify", "sh -c 'unclosed"], "cannot be split as a shell would"),
    ]
    for command in (["solve", str(PACK)], ["submit", str(PACK)], ["rerun", "1"], ["resume", "1"]):
        for option, message in cases:
            res = invoke(*command, *option, env=env, cwd=tmp_path)
            assert res.returncode == 2, (command, option, res.stderr)
            assert res.stderr.count("\n") == 1 and message in res.stderr, (command, option, res.stderr)
    assert not list(tmp_path.iterdir())  # no database, nothing else


def test_notify_test_sends_a_test_notification_and_runs_nothing(sqlite_url, tmp_path):
    Hook.calls, Hook.received = 1, []  # past the hook's failing first call
    server = HTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    out = tmp_path / "test.json"
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    try:
        url = f"http://127.0.0.1:{server.server_port}/hook"
        res = invoke(
            "solve",
            str(PACK),
            "--notify",
            f"sh -c 'cat > {out}'",
            "--notify-url",
            url,
            "--notify-test",
            env=env,
            cwd=tmp_path,
        )
    finally:
        server.shutdown()
    assert res.returncode == 0, res.stderr
    assert "test notification sent" in res.stderr
    assert json.loads(out.read_text())["test"] is True and Hook.received[0]["body"]["test"] is True
    assert not (tmp_path / "packsolve.db").exists() and "run 1" not in res.stderr
    failed = invoke("submit", str(PACK), "--notify", "false", "--notify-test", env=env, cwd=tmp_path)
    assert failed.returncode == 1 and "--notify: the command exited 1" in failed.stderr
