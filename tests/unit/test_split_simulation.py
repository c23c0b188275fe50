"""benchmarks.split_overhead: a split level's parts scheduled on P processes from their measured CPU
times, round by round (a round ends with its last part) and with parts run ahead of their round where a
process would wait idle, as both executors run them (combining.Handout.ahead)."""

from __future__ import annotations

from benchmarks.split_overhead import ahead_makespan, scheduled_makespan

# (part, round, the round's window one bound, CPU s): two parts, three rounds of one bound each.
RUNS = [
    (0, 1, True, 1.0),
    (1, 1, True, 1.0),
    (0, 2, True, 10.0),
    (1, 2, True, 1.0),
    (0, 3, True, 2.0),
    (1, 3, True, 10.0),
]


def barrier(runs, processes: int) -> float:
    return scheduled_makespan([(r, cpu) for _, r, _, cpu in runs], processes)


def test_a_process_idle_at_a_rounds_end_runs_a_part_of_the_next_round():
    # Round by round: 1 + 10 + 10. Ahead: part 1 ends round 2 at 2 s and searches its round 3 (10 s)
    # beside part 0's round 2 (1-11 s); round 3 then runs part 0 alone (11-13 s).
    assert barrier(RUNS, 2) == 21.0
    assert ahead_makespan(RUNS, 2) == 13.0


def test_no_part_goes_ahead_from_the_first_round_or_a_round_of_two_bounds():
    # The first round: every part's first bound, nothing known of the next yet (combining: rounds < 2).
    first_only = [(0, 1, True, 10.0), (1, 1, True, 1.0), (0, 2, True, 1.0), (1, 2, True, 10.0)]
    assert ahead_makespan(first_only, 2) == barrier(first_only, 2) == 20.0
    wide = [(i, r, r != 2, cpu) for i, r, _, cpu in RUNS]
    assert ahead_makespan(wide, 2) == barrier(wide, 2) == 21.0


def test_one_process_runs_every_part_one_after_another_either_way():
    total = sum(cpu for *_, cpu in RUNS)
    assert ahead_makespan(RUNS, 1) == barrier(RUNS, 1) == total
