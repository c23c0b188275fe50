"""--notify COMMAND gets the run's summary JSON on stdin when the run ends; --notify-url gets it POSTed.

The URL is a tiny HTTP server of the test's own on loopback that fails the first request: the POST is retried.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

from tests.support.services import run_cli

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
        res = run_cli(
            "solve", str(PACK), "-q", "--notify", f"sh -c 'cat > {out}'",
            "--notify-url", f"http://127.0.0.1:{server.server_port}/hook",
            env={"PACKSOLVE_DATABASE_URL": sqlite_url},
        )  # fmt: skip
    finally:
        server.shutdown()
    assert res.returncode == 0, res.stderr
    summary = json.loads(out.read_text())
    assert (summary["run"], summary["total"], summary["state"]) == (1, 5, "finished")
    assert Hook.calls == 2 and Hook.received[0]["body"] == summary
    assert Hook.received[0]["type"] == "application/json"


def test_a_notification_that_fails_is_a_warning_not_a_failed_run(sqlite_url, tmp_path):
    res = run_cli(
        "solve", str(PACK), "-q", "--notify", "false", "--notify-url", "http://127.0.0.1:9/nothing-here",
        env={"PACKSOLVE_DATABASE_URL": sqlite_url},
    )  # fmt: skip
    assert res.returncode == 0 and "Traceback" not in res.stderr
    assert "--notify: `false` exited 1" in res.stderr and "--notify-url" in res.stderr
