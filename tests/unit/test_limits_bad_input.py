"""Bad input: a generated corpus of 1,000+ malformed level files; every level is invalid with a message.

The corpus is written from a seed into a temporary directory (tests/support/malformed.py).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from packsolve.levels import DEFAULT_MAX_BYTES, read_levels
from tests.support.inprocess import invoke
from tests.support.malformed import write_corpus


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Counter[str]]:
    directory = tmp_path_factory.mktemp("malformed")
    return directory, write_corpus(directory, seed=9, big_mb=50)


def test_every_level_of_a_thousand_malformed_files_is_invalid_with_a_message(corpus):
    directory, families = corpus
    files = sorted(p for p in directory.iterdir())
    assert len(files) >= 1000 and len(families) >= 10
    skipped: list = []
    levels = list(read_levels([directory], skipped=skipped))
    assert [lv.name for lv in levels if lv.valid] == []
    assert all(lv.error and len(lv.error) > len(lv.name) + 5 for lv in levels)
    named = {lv.name.rsplit(":", 1)[0] if not Path(lv.name).exists() else lv.name for lv in levels}
    # Every file yields at least one (invalid) level, or is listed as skipped for being empty.
    assert {s.reason for s in skipped} <= {"empty"}
    assert {str(f) for f in files} <= named | {s.path for s in skipped}
    big = [lv for lv in levels if lv.name.endswith("huge_50mb.json")]
    assert len(big) == 1 and f"above the {DEFAULT_MAX_BYTES}-byte cap" in big[0].error


def test_the_size_cap_is_configurable_and_a_file_read_under_it_is_still_judged(corpus, tmp_path):
    directory, _ = corpus
    (big,) = read_levels([directory / "huge_50mb.json"], max_bytes=60 * 2**20)
    assert not big.valid and "81" in big.error  # read in full, then refused by the sudoku parser
    small = tmp_path / "fine.json"
    small.write_text(json.dumps({"kind": "coins", "notes": [1, 2], "target": 3, "pad": "x" * 5000}))
    (capped,) = read_levels([small], max_bytes=1024)
    assert not capped.valid and "1024-byte cap" in capped.error
    (ok,) = read_levels([small])
    assert ok.valid


def test_solve_over_the_whole_corpus_completes_and_records_each_level_invalid(corpus, tmp_path):
    directory, _ = corpus
    env = {"PACKSOLVE_DATABASE_URL": f"sqlite:///{tmp_path / 'bad.db'}"}
    res = invoke("solve", str(directory), "-q", "--format", "json", "--max-file-mb", "1", env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "Traceback" not in res.stderr
    records = [json.loads(line) for line in invoke("export", "latest", env=env).stdout.splitlines()]
    # Identical malformed files are one level (by content), attempted once per run.
    assert len(records) == len({lv.hash for lv in read_levels([directory], max_bytes=2**20)}) > 900
    assert {r["status"] for r in records} == {"invalid"}
    assert all(r["message"] for r in records)
