"""A part of a split level as an attempt of its own (issue 38): PartSpec on the queue, its work in a
solver child, its Outcome (the whole level's answer, verified; or no answer in its window and where to
go on), combined round by round as a run combines them, and every way a part cannot be had."""

from __future__ import annotations

import json

import pytest

from packsolve.api import Budget, Combine, Status
from packsolve.execution import AttemptSpec, Limits, PartSpec, execute_attempts
from packsolve.execution.spec import PendingAttempt
from packsolve.external.declaration import ProgramRef
from packsolve.puzzles import get_kind
from packsolve.queue.protocol import decode, encode
from packsolve.splitting import LevelLimits, solve_split

SLIDING = get_kind("sliding")
ONESTROKE = get_kind("onestroke")
KNIGHTS = get_kind("knights_tour")

# Korf's 100 #55 (optimal 41) and algs4's 8-puzzle of optimal length 25, as in test_splitting.py.
KORF_55 = (41, [13, 8, 14, 3, 9, 1, 0, 7, 15, 5, 4, 10, 12, 2, 6, 11])
EIGHT_25 = (25, [5, 0, 2, 8, 3, 6, 4, 1, 7])


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Keep pattern tables of the tests out of the user's cache directory."""
    monkeypatch.setenv("PACKSOLVE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "pdb-cache"))


def _tiles(flat):
    n = int(len(flat) ** 0.5)
    return {"kind": "sliding", "tiles": [flat[r * n : (r + 1) * n] for r in range(n)]}


def _parts(kind_name, heuristic, data, of, limits, **part):
    """Return the specs of every part of the level's split into at least `of` parts."""
    kind = get_kind(kind_name)
    split = kind.split(kind.parse(data), heuristic, of)
    assert split is not None
    count = len(split.parts)
    return split, [
        AttemptSpec(kind_name, heuristic, data, limits, part=PartSpec(i, of, count, **part))
        for i in range(count)
    ]


def _best_of_all_round_by_round(heuristic, data, of):
    """Run every part through execute_attempts in rounds, as splitting._best_of_all does on its pool:
    window (0, 0) first, then (B, B) for the smallest resume B, the best length handed to each part.
    Return (the best whole-level answer, nodes in all, rounds)."""
    split, specs = _parts("sliding", heuristic, data, of, Limits(60))
    assert split.combine is Combine.BEST_OF_ALL
    resume = {i: 0 for i in range(len(specs))}
    best: tuple[int, list] | None = None
    nodes, rounds = split.nodes, 0
    while resume:
        level_bound = min(resume.values())
        if best is not None and level_bound >= best[0]:
            break
        window = (level_bound, level_bound) if rounds else (0, 0)
        indices = [i for i, b in resume.items() if b <= window[1]]
        rounds += 1
        given = [
            AttemptSpec(
                "sliding",
                heuristic,
                data,
                Limits(60),
                part=PartSpec(i, of, len(specs), window, None if best is None else best[0]),
            )
            for i in indices
        ]
        for i, out in zip(indices, execute_attempts(given), strict=True):
            nodes += out.nodes
            assert out.message.startswith(f"part {i + 1} of {len(specs)}")
            if out.status is Status.SOLVED:  # verified on the whole level by execute_attempts
                assert out.resume is None
                if best is None or len(out.solution) < best[0]:
                    best = (len(out.solution), out.solution)
                resume.pop(i)
            else:
                assert out.status is Status.NO_SOLUTION, out.message
                if out.resume is None:
                    resume.pop(i)
                else:
                    assert out.resume > window[1]  # nothing in this window: go on from there
                    resume[i] = out.resume
    assert best is not None
    return best[1], nodes, rounds


def test_a_korf_15_puzzle_in_parts_through_solver_children_has_the_unsplit_optimal_answer():
    optimal, flat = KORF_55
    data = _tiles(flat)
    board = SLIDING.parse(data)
    unsplit = SLIDING.solvers["pdb"](board, Budget(60))
    whole = solve_split(SLIDING, board, "pdb", parts=8, limits=LevelLimits(60))
    answer, nodes, rounds = _best_of_all_round_by_round("pdb", data, 8)
    assert len(answer) == len(unsplit.solution) == len(whole.outcome.solution) == optimal
    assert SLIDING.verify(board, answer) is None
    assert rounds > 2  # the first iteration's window, then one bound a round
    # Round by round no part searches deeper than the unsplit search: about its nodes in all.
    assert nodes <= 1.15 * unsplit.nodes + 1_000


@pytest.mark.parametrize("heuristic", ["linear-conflict", "idastar"])
def test_an_8_puzzle_in_parts_has_the_optimal_answer(heuristic):
    optimal, flat = EIGHT_25
    answer, _, _ = _best_of_all_round_by_round(heuristic, _tiles(flat), 6)
    assert len(answer) == optimal
    assert SLIDING.verify(SLIDING.parse(_tiles(flat)), answer) is None


def test_a_part_given_the_best_length_prunes_with_it_and_one_given_a_window_stops_past_it():
    optimal, flat = KORF_55
    _, specs = _parts("sliding", "pdb", _tiles(flat), 8, Limits(60), best=optimal)
    (pruned,) = execute_attempts(specs[:1])
    # Nothing shorter than the best: where it would go on is at or past the best (nothing left).
    assert pruned.status is Status.NO_SOLUTION and (pruned.resume is None or pruned.resume >= optimal)
    assert f"shorter than {optimal}" in pruned.message
    assert pruned.nodes < 100_000  # the unsplit search takes millions
    # Window (0, 0): the part's first iteration bound, past which it did not search.
    _, specs = _parts("sliding", "pdb", _tiles(flat), 8, Limits(60), window=(0, 0))
    first = list(execute_attempts(specs))
    assert all(out.status is Status.NO_SOLUTION and out.resume is not None for out in first)
    assert min(out.resume for out in first) <= optimal


def test_a_part_that_cannot_answer_within_the_limits_times_out_without_resume():
    _, flat = KORF_55
    _, specs = _parts("sliding", "pdb", _tiles(flat), 8, Limits(60, node_limit=50), window=(0, 60))
    (out,) = execute_attempts(specs[:1])
    assert out.status is Status.TIMEOUT and out.resume is None and out.solution is None


ONESTROKE_SOLVABLE = {"kind": "onestroke", "grid": [".....", "..#..", "..S..", ".....", "###.#"]}
ONESTROKE_NONE = {"kind": "onestroke", "grid": ["S.#.", "....", "#..."]}
KNIGHTS_SOLVABLE = {"kind": "knights_tour", "size": 5, "start": [0, 0]}
KNIGHTS_NONE = {"kind": "knights_tour", "rows": 3, "cols": 4, "start": [1, 1]}


@pytest.mark.parametrize(
    "data,heuristic",
    [(ONESTROKE_SOLVABLE, "plain"), (ONESTROKE_SOLVABLE, "prune"), (KNIGHTS_SOLVABLE, "warnsdorff")],
)
def test_first_found_parts_through_solver_children_the_first_answer_verified(data, heuristic):
    kind = get_kind(data["kind"])
    # A dead-end part may take long to refute: 200,000 nodes each (the others find the answer).
    split, specs = _parts(data["kind"], heuristic, data, 4, Limits(30, node_limit=200_000))
    assert split.combine is Combine.FIRST_FOUND
    outcomes = list(execute_attempts(specs))
    solved = [out for out in outcomes if out.status is Status.SOLVED]
    assert solved, [out.message for out in outcomes]
    level = kind.parse(data)
    assert kind.verify(level, solved[0].solution) is None  # the whole level's answer
    assert all(out.status in (Status.SOLVED, Status.NO_SOLUTION, Status.TIMEOUT) for out in outcomes)
    assert all(out.resume is None for out in outcomes)


@pytest.mark.parametrize("data", [ONESTROKE_NONE, KNIGHTS_NONE])
def test_a_level_without_an_answer_has_none_in_any_part(data):
    kind = get_kind(data["kind"])
    assert kind.solvers["plain"](kind.parse(data), Budget(30)).status is Status.NO_SOLUTION
    _, specs = _parts(data["kind"], "plain", data, 3, Limits(30))
    assert len(specs) >= 3
    outcomes = list(execute_attempts(specs))
    assert [out.status for out in outcomes] == [Status.NO_SOLUTION] * len(specs)
    assert all(out.resume is None for out in outcomes)


def _one(spec):
    (out,) = execute_attempts([spec])
    return out


EIGHT = _tiles(EIGHT_25[1])


def test_a_part_that_cannot_be_had_is_an_error_saying_why():
    eight_parts = len(SLIDING.split(SLIDING.parse(EIGHT), "pdb", 4).parts)
    coins = {"kind": "coins", "notes": [1, 2], "target": 3}
    cases = [
        # a kind without split
        (AttemptSpec("coins", "", coins, Limits(5), part=PartSpec(0, 2, 2)), "kind coins does not split"),
        # a heuristic whose split says None
        (AttemptSpec("sliding", "astar", EIGHT, Limits(5), part=PartSpec(0, 4, 4)), "astar of kind sliding"),
        # an index past the parts
        (
            AttemptSpec("sliding", "pdb", EIGHT, Limits(5), part=PartSpec(eight_parts, 4, eight_parts)),
            f"part index {eight_parts} is past the {eight_parts} parts",
        ),
        # another count than the split gives
        (
            AttemptSpec("sliding", "pdb", EIGHT, Limits(5), part=PartSpec(0, 4, eight_parts + 1)),
            f"gave {eight_parts}, the run planned {eight_parts + 1}",
        ),
        # an external program
        (
            AttemptSpec(
                "sliding", "prog", EIGHT, Limits(5), ProgramRef("prog", "0" * 64), part=PartSpec(0, 4, 4)
            ),
            "an external program's attempt has no parts",
        ),
    ]
    outcomes = list(execute_attempts([spec for spec, _ in cases]))
    for out, (_, said) in zip(outcomes, cases, strict=True):
        assert out.status is Status.ERROR
        assert said in out.message and "\n" not in out.message


def test_an_attempt_without_a_part_is_as_before():
    spec = AttemptSpec("sliding", "pdb", EIGHT, Limits(5.0, 1000, 64))
    assert json.dumps(spec.to_json()) == (
        '{"kind": "sliding", "heuristic": "pdb", "level": {"kind": "sliding", "tiles": '
        '[[5, 0, 2], [8, 3, 6], [4, 1, 7]]}, "time_limit": 5.0, "node_limit": 1000, "memory_limit_mb": 64}'
    )
    assert AttemptSpec.from_json(spec.to_json()) == spec
    out = _one(AttemptSpec("sliding", "pdb", EIGHT, Limits(30)))
    assert out.status is Status.SOLVED and len(out.solution) == 25 and out.resume is None


@pytest.mark.parametrize(
    "part", [PartSpec(3, 8, 12), PartSpec(0, 8, 10, (0, 0), None), PartSpec(5, 16, 20, (41, 43), 44)]
)
def test_a_part_travels_on_the_queue(part):
    spec = AttemptSpec("sliding", "pdb", EIGHT, Limits(5.0), part=part)
    data = spec.to_json()
    assert data["part"] == {
        "index": part.index,
        "of": part.of,
        "count": part.count,
        "window": None if part.window is None else list(part.window),
        "best": part.best,
    }
    assert AttemptSpec.from_json(json.loads(json.dumps(data))) == spec
    body = json.loads(json.dumps(encode(7, [PendingAttempt("ab" * 32, spec)], 5, "d" * 32)))
    assert decode(body).items == (PendingAttempt("ab" * 32, spec),)


GOOD_PART = {"index": 1, "of": 4, "count": 6, "window": [30, 32], "best": 40}


@pytest.mark.parametrize(
    "change,said",
    [
        ({"index": -1}, "index -1"),
        ({"index": 1.5}, "index 1.5"),
        ({"index": True}, "index True"),
        ({"index": "1"}, "index '1'"),
        ({"of": 0}, "of 0"),
        ({"count": 0}, "count 0"),
        ({"count": 2**31}, "count 2147483648"),
        ({"window": [32, 30]}, "low above its high"),
        ({"window": [-1, 3]}, "holds -1"),
        ({"window": [1]}, "is not [low, high]"),
        ({"window": "ab"}, "is not [low, high]"),
        ({"window": [1, 2.5]}, "holds 2.5"),
        ({"best": -1}, "best -1"),
        ({"best": "40"}, "best '40'"),
    ],
)
def test_a_bad_part_is_not_a_task(change, said):
    body = {
        "run": 7,
        "max_tries": 5,
        "items": [
            {
                "level": "ab" * 32,
                "spec": {
                    **json.loads(json.dumps(AttemptSpec("sliding", "pdb", EIGHT).to_json())),
                    "part": {**GOOD_PART, **change},
                },
            }
        ],
    }
    with pytest.raises(ValueError, match="not a packsolve task") as caught:
        decode(body)
    assert said in str(caught.value)


@pytest.mark.parametrize("part", ["x", [1, 4, 6], {"of": 4, "count": 6}, {"index": 0, "count": 6}])
def test_a_part_of_the_wrong_shape_is_not_a_task(part):
    spec = {**AttemptSpec("sliding", "pdb", EIGHT).to_json(), "part": part}
    with pytest.raises(ValueError, match="not a packsolve task"):
        decode({"run": 7, "max_tries": 5, "items": [{"level": "ab" * 32, "spec": spec}]})
