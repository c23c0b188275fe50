"""combining.Combination: a split level's parts handed out round by round and their answers combined."""

from __future__ import annotations

import time

from packsolve.api import Combine, Part, Split
from packsolve.combining import Combination
from packsolve.outcome import Outcome, SearchStats, Status


def split(rule: Combine, parts: int, nodes: int = 7) -> Split:
    return Split(rule, tuple(Part(i, (i,), 1) for i in range(parts)), nodes)


def out(status: Status, solution=None, nodes=10, cpu=0.5, resume=None) -> Outcome:
    return Outcome(status, solution, SearchStats(nodes=nodes, cpu_s=cpu), "", resume=resume)


def test_first_found_hands_out_every_part_once_and_the_first_answer_decides():
    c = Combination(split(Combine.FIRST_FOUND, 3))
    assert [(h.index, h.round, h.window) for h in c.hand_out()] == [(0, 1, None), (1, 1, None), (2, 1, None)]
    assert c.hand_out() == []
    c.took(1, out(Status.NO_SOLUTION))
    assert c.outcome is None
    c.took(2, out(Status.SOLVED, [2, 5]))
    assert c.outcome is not None and c.outcome.status == Status.SOLVED and c.outcome.solution == [2, 5]
    assert "part 3 of 3" in c.outcome.message
    c.took(0, out(Status.SOLVED, [0, 1]))  # still running when decided: counted, nothing else
    assert c.outcome.solution == [2, 5] and c.nodes == 7 + 30 and c.cpu_s == 1.5


def test_first_found_with_no_answer_ends_as_a_part_that_ended_otherwise_or_with_no_solution():
    c = Combination(split(Combine.FIRST_FOUND, 2))
    c.hand_out()
    c.took(0, out(Status.TIMEOUT))
    c.took(1, out(Status.NO_SOLUTION))
    assert (
        c.outcome is not None
        and c.outcome.status == Status.TIMEOUT
        and "part 1 ended timeout" in c.outcome.message
    )
    c = Combination(split(Combine.FIRST_FOUND, 2))
    c.hand_out()
    c.took(0, out(Status.NO_SOLUTION))
    c.took(1, out(Status.NO_SOLUTION))
    assert c.outcome is not None and c.outcome.status == Status.NO_SOLUTION


def test_best_of_all_runs_a_round_per_bound_and_keeps_the_shortest_answer_of_the_round_that_finds_one():
    c = Combination(split(Combine.BEST_OF_ALL, 3))
    first = c.hand_out()
    assert [(h.index, h.window, h.best) for h in first] == [
        (0, (0, 0), None),
        (1, (0, 0), None),
        (2, (0, 0), None),
    ]
    c.took(0, out(Status.NO_SOLUTION, resume=40))
    assert c.hand_out() == []  # a round at a time
    c.took(1, out(Status.NO_SOLUTION, resume=42))
    c.took(2, out(Status.NO_SOLUTION, resume=None))  # searched through: never again
    second = c.hand_out()
    assert [(h.index, h.round, h.window) for h in second] == [(0, 2, (40, 40))]
    c.took(0, out(Status.NO_SOLUTION, resume=42))
    third = c.hand_out()
    assert [(h.index, h.window) for h in third] == [(0, (42, 42)), (1, (42, 42))]
    c.took(1, out(Status.SOLVED, list(range(42))))
    assert c.outcome is None  # the round is not over: part 0 may find one as short
    c.took(0, out(Status.SOLVED, list(range(42))))
    assert c.outcome is not None and c.outcome.status == Status.SOLVED and len(c.outcome.solution) == 42
    assert "in 3 rounds" in c.outcome.message and c.rounds == 3


def test_best_of_all_ends_when_no_part_can_beat_the_best_and_on_a_part_that_failed():
    c = Combination(split(Combine.BEST_OF_ALL, 2))
    c.hand_out()
    c.took(0, out(Status.SOLVED, list(range(30))))
    c.took(1, out(Status.NO_SOLUTION, resume=30))  # at the best: nothing shorter left in it
    assert c.outcome is not None and len(c.outcome.solution) == 30 and c.hand_out() == []
    c = Combination(split(Combine.BEST_OF_ALL, 2))
    c.hand_out()
    c.took(0, out(Status.ERROR))
    assert c.outcome is not None and c.outcome.status == Status.ERROR
    c = Combination(split(Combine.BEST_OF_ALL, 2))
    c.hand_out()
    c.timed_out()
    assert c.outcome is not None and c.outcome.status == Status.TIMEOUT


def test_best_of_all_hands_a_part_that_ended_its_round_its_next_bound_ahead_and_leaves_it_out_of_that_round():
    c = Combination(split(Combine.BEST_OF_ALL, 3))
    c.hand_out()
    for i in range(3):
        c.took(i, out(Status.NO_SOLUTION, resume=40))
    assert [(h.index, h.round, h.window) for h in c.hand_out()] == [
        (0, 2, (40, 40)),
        (1, 2, (40, 40)),
        (2, 2, (40, 40)),
    ]
    c.took(0, out(Status.NO_SOLUTION, resume=42))
    ahead = c.hand_out()  # part 0 may search bound 42 while parts 1 and 2 finish 40
    assert [(h.index, h.round, h.window, h.ahead) for h in ahead] == [(0, 3, (42, 42), True)]
    assert c.hand_out() == []  # once
    c.took(1, out(Status.NO_SOLUTION, resume=42))
    assert [h.index for h in c.hand_out()] == [1]  # ahead too
    c.took(2, out(Status.NO_SOLUTION, resume=42))  # round 2 over; parts 0 and 1 run round 3 already
    third = c.hand_out()
    assert [(h.index, h.round, h.window, h.ahead) for h in third] == [(2, 3, (42, 42), False)]
    c.took(0, out(Status.SOLVED, list(range(42))))
    assert c.outcome is None  # parts 1 and 2 still search 42
    c.took(2, out(Status.NO_SOLUTION, resume=44))
    assert c.outcome is None
    c.took(1, out(Status.NO_SOLUTION, resume=44))
    assert c.outcome is not None and len(c.outcome.solution) == 42 and c.rounds == 3


def test_best_of_all_hands_nothing_ahead_past_a_known_answer_and_an_answer_found_ahead_waits_for_its_round():
    c = Combination(split(Combine.BEST_OF_ALL, 2))
    c.hand_out()
    c.took(0, out(Status.NO_SOLUTION, resume=40))
    c.took(1, out(Status.NO_SOLUTION, resume=40))
    c.hand_out()
    c.took(0, out(Status.NO_SOLUTION, resume=42))
    [ahead] = c.hand_out()
    c.took(0, out(Status.SOLVED, list(range(42))))  # found ahead: part 1 may still find 40
    assert c.outcome is None
    c.took(1, out(Status.NO_SOLUTION, resume=42))  # it did not: nothing below 42 is left anywhere
    assert c.outcome is not None and len(c.outcome.solution) == 42
    c = Combination(split(Combine.BEST_OF_ALL, 3))
    c.hand_out()
    for i in range(3):
        c.took(i, out(Status.NO_SOLUTION, resume=40))
    c.hand_out()
    c.took(0, out(Status.SOLVED, list(range(40))))
    c.took(1, out(Status.NO_SOLUTION, resume=42))
    assert c.hand_out() == []  # an answer is known: nothing is searched past it
    c.took(2, out(Status.NO_SOLUTION, resume=42))
    assert c.outcome is not None and len(c.outcome.solution) == 40


def test_what_a_levels_limits_leave_a_part_counts_its_parts_spending_and_its_time_since_it_began():
    c = Combination(split(Combine.BEST_OF_ALL, 2), started=time.monotonic() - 4.0)
    c.hand_out()
    c.took(0, out(Status.NO_SOLUTION, nodes=100, cpu=1.5, resume=30))
    wall, nodes, cpu = c.left(10.0, 1_000, 5.0)
    assert 5.0 < wall <= 6.0 and nodes == 1_000 - 7 - 100 and cpu == 3.5  # the split's own 7 nodes too
    assert c.left(None, None, None) == (None, None, None)
    assert c.left(3.0, None, None) is None  # 4 s since the level began: its wall time is spent
    assert c.left(None, 107, None) is None and c.left(None, None, 1.5) is None


def test_best_of_all_a_part_given_back_unstarted_is_handed_out_again_in_its_round_in_order():
    c = Combination(split(Combine.BEST_OF_ALL, 3))
    c.hand_out()
    for i in range(3):
        c.took(i, out(Status.NO_SOLUTION, resume=40))
    c.hand_out()
    c.took(2, out(Status.NO_SOLUTION, resume=42))
    [ahead] = c.hand_out()
    assert (ahead.index, ahead.ahead) == (2, True)
    c.give_back(2)  # never started
    c.took(0, out(Status.NO_SOLUTION, resume=42))
    assert [(h.index, h.ahead) for h in c.hand_out()] == [(0, True), (2, True)]  # ahead again, in order
    c.give_back(0)
    c.give_back(2)
    c.took(1, out(Status.NO_SOLUTION, resume=42))  # round 2 over
    assert [(h.index, h.round, h.ahead) for h in c.hand_out()] == [
        (0, 3, False),
        (1, 3, False),
        (2, 3, False),
    ]
    c.give_back(1)  # not ahead: nothing changes
    assert c.running == {0, 1, 2}
