"""`report curve`: per kind and level size, how many levels, how many decided, and their times and nodes,
as a table, one JSON document, CSV and a plot — from a real local solve."""

from __future__ import annotations

import csv
import io
import json

from tests.support.inprocess import invoke


def _solved_pack(tmp_path):
    pack = tmp_path / "pack.jsonl"
    pack.write_text(
        "\n".join(
            [
                '{"kind": "sliding", "tiles": [[3, 2], [1, 0]]}',
                '{"kind": "sliding", "tiles": [[0, 3], [2, 1]]}',
                '{"kind": "sliding", "tiles": [[1, 2, 5], [3, 4, 0], [6, 7, 8]]}',
                '{"kind": "knights_tour", "size": 5, "start": [0, 0]}',
                '{"kind": "sliding", "tiles": [[1, 2]]}',
            ]
        )
        + "\n"
    )
    env = {"PACKSOLVE_DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite'}"}
    res = invoke("solve", str(pack), "-q", env=env)
    assert res.returncode == 0, res.stderr
    return env


def test_the_curve_groups_the_attempts_that_ran_by_kind_and_size(tmp_path):
    env = _solved_pack(tmp_path)
    res = invoke("report", "curve", "--format", "json", env=env)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    rows = {(p["kind"], p["size"]): p for p in doc["points"]}
    # The invalid level never ran: it is in no point.
    assert sorted(rows) == [("knights_tour", 25), ("sliding", 4), ("sliding", 9)]
    two_by_two = rows[("sliding", 4)]
    assert (two_by_two["levels"], two_by_two["decided"]) == (2, 2)
    assert two_by_two["nodes_max"] >= two_by_two["nodes_median"] > 0
    assert two_by_two["wall_s_max"] >= two_by_two["wall_s_median"] >= 0

    only = json.loads(invoke("report", "curve", "--kind", "sliding", "--format", "json", env=env).stdout)
    assert {p["kind"] for p in only["points"]} == {"sliding"}
    rows_csv = list(csv.DictReader(io.StringIO(invoke("report", "curve", "--format", "csv", env=env).stdout)))
    assert [(r["kind"], r["size"]) for r in rows_csv] == [
        ("knights_tour", "25"),
        ("sliding", "4"),
        ("sliding", "9"),
    ]


def test_the_curve_prints_a_table_and_plots_each_kind(tmp_path):
    env = _solved_pack(tmp_path)
    plot = tmp_path / "curve.png"
    res = invoke("report", "curve", "latest", "-o", str(plot), env={**env, "COLUMNS": "160"})
    assert res.returncode == 0, res.stderr
    assert "max nodes" in res.stdout and "knights_tour" in res.stdout
    assert f"size curve plotted to {plot}" in res.stderr
    assert plot.read_bytes().startswith(b"\x89PNG")


def test_a_plot_file_of_no_plot_format_is_refused_in_one_line(tmp_path):
    env = _solved_pack(tmp_path)
    res = invoke("report", "curve", "-o", str(tmp_path / "curve.txt"), env=env)
    assert res.returncode == 2
    assert res.stderr.strip().count("\n") == 0 and "a plot file ends in .png, .svg, .pdf" in res.stderr
