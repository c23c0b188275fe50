"""Floodfill kind: the write-up's paint-bucket sample, the fills against each other, verify, parsing."""

from __future__ import annotations

import random

import pytest

from packsolve.budget import Budget
from packsolve.levels import LevelError, make_level
from packsolve.outcome import Status
from packsolve.puzzles import floodfill, get_kind

KIND = get_kind("floodfill")
HEURISTICS = sorted(KIND.solvers)
SAMPLE = {
    "image": [[1, 2, 1, 1, 1, 1], [1, 2, 2, 1, 1, 1], [2, 1, 1, 2, 1, 1], [1, 1, 1, 2, 1, 1]],
    "click": [0, 4],
}
SAMPLE_MASK = ["..!!!!", "...!!!", "....!!", "....!!"]


@pytest.mark.parametrize("heuristic", HEURISTICS)
def test_write_up_sample_fills_the_published_mask(heuristic):
    level = KIND.parse(SAMPLE)
    out = KIND.solvers[heuristic](level, Budget(time_limit=10))
    assert out.status == Status.SOLVED
    assert out.solution == {"count": 11, "mask": SAMPLE_MASK}
    assert out.nodes == 11
    assert KIND.verify(level, out.solution) is None


def random_level(rng):
    height, width = rng.randint(1, 14), rng.randint(1, 14)
    top = rng.choice([1, 2, 3, 15])
    image = [[rng.randint(0, top) for _ in range(width)] for _ in range(height)]
    return KIND.parse({"image": image, "click": [rng.randrange(height), rng.randrange(width)]})


def test_all_fills_agree_and_verify_catches_any_flipped_pixel():
    rng = random.Random(11)
    for _ in range(200):
        level = random_level(rng)
        answers = [KIND.solvers[h](level, Budget(time_limit=10)).solution for h in HEURISTICS]
        python = floodfill._scanline_python(level, floodfill.match_rows(level), Budget()).solution
        assert all(a == answers[0] for a in answers) and python == answers[0]
        assert KIND.verify(level, answers[0]) is None
        rows = [list(row) for row in answers[0]["mask"]]
        r, c = rng.randrange(level.height), rng.randrange(level.width)
        rows[r][c] = "." if rows[r][c] == "!" else "!"
        flipped = ["".join(row) for row in rows]
        wrong = {"count": sum(row.count("!") for row in flipped), "mask": flipped}
        assert KIND.verify(level, wrong) is not None


def test_verify_rejects_a_disconnected_fill_of_the_right_colour():
    level = KIND.parse({"image": ["101", "000", "101"], "click": [0, 0]})
    assert "connected" in KIND.verify(level, {"count": 2, "mask": ["!.!", "...", "..."]})
    assert KIND.verify(level, {"count": 1, "mask": ["!..", "...", "..."]}) is None
    assert "count" in KIND.verify(level, {"count": 3, "mask": ["!..", "...", "..."]})
    assert "another colour" in KIND.verify(level, {"count": 2, "mask": ["!!.", "...", "..."]})
    level = KIND.parse({"image": ["11", "01"], "click": [0, 0]})
    assert "leaves out" in KIND.verify(level, {"count": 2, "mask": ["!!", ".."]})


def test_plain_recursion_limit_becomes_a_clear_error_and_the_default_copes():
    level = KIND.parse({"image": ["0" * 300] * 300, "click": [150, 150]})
    with pytest.raises(RuntimeError, match="recursion limit at depth"):
        KIND.solvers["plain"](level, Budget(time_limit=10))
    out = KIND.solvers[KIND.default](level, Budget(time_limit=10))
    assert out.status == Status.SOLVED and out.solution["count"] == 90_000


def test_node_limit_stops_the_default_as_a_timeout():
    level = KIND.parse({"image": ["0" * 300] * 300, "click": [0, 0]})
    out = KIND.solvers[KIND.default](level, Budget(node_limit=1000))
    assert out.status == Status.TIMEOUT


def test_int_rows_and_digit_strings_are_one_level_but_big_colours_stay_ints():
    ints = make_level("a", {"kind": "floodfill", **SAMPLE})
    digits = make_level(
        "b", {"kind": "floodfill", "image": ["121111", "122111", "211211", "111211"], "click": [0, 4]}
    )
    assert ints.valid and ints.hash == digits.hash
    big = KIND.parse({"image": [[10, 10, 3], [10, 4, 10]], "click": [0, 0]})
    out = KIND.solvers[KIND.default](big, Budget())
    assert out.solution == {"count": 3, "mask": ["!!.", "!.."]}
    assert KIND.verify(big, out.solution) is None


@pytest.mark.parametrize(
    "data, fragment",
    [
        ({"image": ["12a"], "click": [0, 0]}, "column 3"),
        ({"image": ["12", "1"], "click": [0, 0]}, "ragged"),
        ({"image": [[1, "x"]], "click": [0, 0]}, "column 2"),
        ({"image": ["12"], "click": [1, 0]}, "click"),
        ({"image": [], "click": [0, 0]}, "non-empty"),
        ({"image": ["12"]}, "click"),
    ],
)
def test_parse_errors_say_where(data, fragment):
    with pytest.raises(LevelError, match=fragment):
        KIND.parse(data)


def test_generate_render_and_svg():
    [data] = KIND.generate("40x30", 1, 2)
    assert KIND.generate("40x30", 1, 2) == [data]
    level = KIND.parse(data)
    assert (level.height, level.width) == (40, 30)
    out = KIND.solvers[KIND.default](level, Budget())
    assert KIND.verify(level, out.solution) is None
    text = KIND.render(KIND.parse(SAMPLE), {"count": 11, "mask": SAMPLE_MASK})
    assert text.splitlines()[0] == "1 2 ! ! ! !"
    assert KIND.svg(level, out.solution).count("#e53935") == out.solution["count"]
