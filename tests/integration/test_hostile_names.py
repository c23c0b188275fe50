"""A pack's file names reach the operator's terminal as text: their control characters made visible."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.inprocess import invoke

# Clear the screen and set the window title; recolour; hide the rest of the line.
NAMES = {
    "ok\x1b[2J\x1b]0;pwned\x07.json": '{"kind": "coins", "notes": [1, 2, 5], "target": 7}',
    "bad\x1b[31mred\x1b[0m.json": '{"kind": "coins", "notes":',
    "none\x1b[8mhidden\u202e.json": '{"kind": "coins", "notes": [4, 6], "target": 7}',
}


def test_check_solve_and_every_report_print_control_characters_of_names_visibly(tmp_path: Path) -> None:
    pack = tmp_path / "pack"
    pack.mkdir()
    for name, text in NAMES.items():
        (pack / name).write_text(text)
    env = {"PACKSOLVE_DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite'}"}
    solved = invoke("solve", str(pack), "-q", env=env)
    assert solved.returncode in (0, 1), solved.stderr
    shown = {}
    for args in (
        ["check", str(pack)],
        ["report", "failures"],
        ["report", "failures", "--format", "csv"],
        ["report", "hardest"],
        ["report", "hardest", "--format", "csv"],
        ["report", "summary"],
    ):
        res = invoke(*args, env={**env, "COLUMNS": "200"})
        assert res.returncode == 0, (args, res.stderr)
        text = res.stdout + res.stderr
        assert not any(c in text for c in "\x1b\x07\u202e"), (args, text)
        shown[" ".join(args)] = text
    assert "bad\\x1b[31mred\\x1b[0m.json" in shown[f"check {pack}"]
    assert "bad\\x1b[31mred\\x1b[0m.json" in shown["report failures --format csv"]
    assert "hidden\\u202e.json" in shown["report hardest --format csv"]
    # JSON keeps names exact (escaped by JSON itself): a script reads the real file name.
    res = invoke("report", "hardest", "--format", "json", env=env)
    assert any(r["level"].endswith("ok\x1b[2J\x1b]0;pwned\x07.json") for r in json.loads(res.stdout))
