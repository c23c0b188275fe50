"""Hardest-first ordering of a run's attempts from the levels' history (planning.longest_first)."""

from __future__ import annotations

import random

from packsolve.execution import AttemptSpec, Limits
from packsolve.execution.spec import PendingAttempt
from packsolve.planning import LPT_FLOOR_S, TARGET_TASK_S, longest_first


def spec(level_hash: str, kind: str) -> PendingAttempt:
    return PendingAttempt(level_hash, AttemptSpec(kind, "default", {}, Limits()), f"pack/{level_hash}")


PACK = [
    spec("a", "sudoku"),
    spec("b", "sudoku"),
    spec("c", "sudoku"),
    spec("d", "sudoku"),
    spec("l", "sudoku"),
    spec("e", "sudoku"),
    spec("f", "sudoku"),
    spec("g", "sliding"),
    spec("h", "sliding"),
    spec("i", "coins"),
    spec("j", "coins"),
    spec("k", "sudoku"),
]
FACTS: dict[str, tuple[int, float | None]] = {
    "a": (50, 2.0),  # known
    "b": (60, 5.0),  # known; c has the same size and a shorter time
    "c": (60, 3.0),
    "d": (55, None),  # as far from 50 (2 s) as from 60 (5 s and 3 s): the longest of them, 5 s
    "l": (52, None),  # nearest 50: 2 s, like e, which comes after it in the pack
    "e": (52, None),
    "f": (70, None),  # past the largest known: 60's longest, 5 s
    "g": (9, 1.0),
    "h": (16, None),  # the only known sliding level: 1 s
    "i": (3, None),  # no coins history: the median of all known times (1, 2, 3, 5): 3 s
    # "j" has no facts at all (no level row): size 0, the median too
    "k": (40, 5.0),
}


def test_levels_go_longest_expected_first_then_bigger_then_in_pack_order():
    ordered = [p.level_hash for p in longest_first(PACK, FACTS).attempts]
    # 5 s: f 70, b 60, d 55, k 40; 3 s: c 60, i 3, j 0; 2 s: l 52, e 52 (pack order), a 50; 1 s: h 16, g 9
    assert ordered == ["f", "b", "d", "k", "c", "i", "j", "l", "e", "a", "h", "g"]


def test_levels_expected_to_take_a_tasks_worth_or_more_go_in_a_task_each():
    facts = {**FACTS, "g": (9, TARGET_TASK_S / 10)}
    alone = {h for h, _ in longest_first(PACK, facts).alone}
    # Every one expected 2 s or more; not g (a twentieth of a second), nor h (guessed from g, its kind's one).
    assert alone == set("abcdlefijk")
    assert longest_first(PACK, {h: (size, None) for h, (size, _) in FACTS.items()}).alone == frozenset()


def test_with_no_history_levels_go_biggest_first_then_in_pack_order():
    facts = {h: (size, None) for h, (size, _) in FACTS.items()}
    by_size = longest_first(PACK, facts)
    assert [p.level_hash for p in by_size.attempts] == [
        "f",
        "b",
        "c",
        "d",
        "l",
        "e",
        "a",
        "k",
        "h",
        "g",
        "i",
        "j",
    ]
    assert not by_size.by_history and longest_first(PACK, FACTS).by_history  # a local run keeps pack order


def test_levels_expected_under_the_floor_go_bigger_first_then_in_pack_order():
    """Tiny levels' past times (noise of microseconds) do not shuffle the pack: it stays in pack order."""
    pack = [spec(h, "sudoku") for h in "abcdef"]
    facts = {"a": (81, 0.0003), "b": (81, 0.0001), "c": (81, 0.0002), "d": (81, 0.004), "e": (90, 0.0001)}
    facts["f"] = (81, 0.2)
    ordered = [p.level_hash for p in longest_first(pack, facts).attempts]
    assert ordered == ["f", "e", "a", "b", "c", "d"]


def reference_order(
    specs: list[PendingAttempt], facts: dict[str, tuple[int, float | None]]
) -> list[PendingAttempt]:
    """The ordering as first written: every unseen level compared with every known one (quadratic)."""
    known = {h: t for h, (_, t) in facts.items() if t is not None}

    def size(s: PendingAttempt) -> int:
        return facts.get(s.level_hash, (0, None))[0]

    if not known:
        return sorted(specs, key=lambda s: -size(s))
    by_kind: dict[str, list[tuple[int, float]]] = {}
    for s in specs:
        if s.level_hash in known:
            by_kind.setdefault(s.spec.kind, []).append((size(s), known[s.level_hash]))
    median = sorted(known.values())[len(known) // 2]

    def expected(s: PendingAttempt) -> float:
        if s.level_hash in known:
            return known[s.level_hash]
        points = by_kind.get(s.spec.kind)
        if not points:
            return median
        return min(points, key=lambda p: (abs(p[0] - size(s)), -p[1]))[1]

    return sorted(specs, key=lambda s: (-max(expected(s), LPT_FLOOR_S), -size(s)))


def test_thousands_of_levels_are_ordered_as_the_reference_orders_them():
    rng = random.Random(19)
    kinds = ["sudoku", "sliding", "onestroke", "coins"]
    specs, facts = [], {}
    for i in range(4000):
        kind = rng.choice(kinds)
        h = f"{i:05d}"
        specs.append(spec(h, kind))
        if rng.random() < 0.05:
            continue  # no level row: size 0
        size = rng.randrange(0, 120)  # few sizes: many ties of distance and of size
        # Coins has no history; the others about a third, with coarse times (ties of time too).
        known = kind != "coins" and rng.random() < 0.3
        facts[h] = (size, rng.randrange(0, 40) / 4 if known else None)
    assert longest_first(specs, facts).attempts == reference_order(specs, facts)
    sparse = {h: (size, t if t is None or rng.random() < 0.01 else None) for h, (size, t) in facts.items()}
    assert longest_first(specs, sparse).attempts == reference_order(specs, sparse)
