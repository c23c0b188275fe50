"""The contract check a kind author runs in their own CI: ``check_kind(KIND)`` (or ``packsolve check-kind``).

On the kind's example levels (``PuzzleKind.examples``, or the levels given): the parse /
canonical round trip and a hash that does not depend on how the level was spelled; every
heuristic ends in a solution ``verify`` accepts (or a proof of none); ``verify`` rejects
corrupted answers with a message; bad input makes ``parse`` raise ``LevelError`` with a
message; ``render`` and ``svg`` produce output; a kind's ``preparation``, when it has one,
gives a ``Preparation`` (or None) whose ``run`` leaves ``ready()`` true and can run again (done
before the solving, outside its budgets, as packsolve does). A kind's ``split``, when it has one:
for every heuristic it splits for, on every example, distinct parts whose answers, each after
its prefix, are answers ``verify`` accepts; at least one part with an answer when the unsplit
search has one (none when it has none); for best of all, the shortest as short as the unsplit
answer; and ``packsolve.splitting.solve_split`` combining them into such an answer. Solvers run
in this process, each under a ``Budget`` of ``time_limit`` seconds.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from packsolve.api import Budget, Combine, LevelError, Outcome, Part, Preparation, PuzzleKind, Split, Status
from packsolve.levels import canonical_json, level_hash
from packsolve.puzzles import get_kind
from packsolve.splitting import LevelLimits, solve_split

# How many parts check_kind asks a kind's split for.
SPLIT_PARTS = 4

# Values a level's fields are replaced by, one at a time: parse must answer each with LevelError or accept it.
BAD_VALUES: tuple[Any, ...] = (None, "?", -1, 1.5, True, [], {}, [[None]])
NOT_OBJECTS: tuple[Any, ...] = (None, [], "text", 7, [{"kind": "x"}])
# How much of a failure's detail is shown.
DETAIL_CHARS = 300


@dataclass(frozen=True)
class Check:
    """One property checked: its name, whether it holds, and what was wrong (empty if it holds)."""

    name: str
    ok: bool
    detail: str = ""


class KindCheckFailed(AssertionError):
    """A kind broke its contract; the message lists every check that failed, one per line."""

    def __init__(self, kind: str, failed: Sequence[Check]) -> None:
        lines = [f"kind {kind!r} fails {len(failed)} check(s):"]
        lines += [f"- {c.name}: {c.detail}" for c in failed]
        super().__init__("\n".join(lines))
        self.failed = list(failed)


def check_kind(
    kind: PuzzleKind | str, levels: Sequence[Mapping[str, Any]] | None = None, time_limit: float = 10.0
) -> list[Check]:
    """Check the kind on levels (default: its examples); return the checks, or raise KindCheckFailed."""
    puzzle = get_kind(kind) if isinstance(kind, str) else kind
    checks = run_checks(puzzle, levels, time_limit)
    failed = [c for c in checks if not c.ok]
    if failed:
        raise KindCheckFailed(puzzle.name, failed)
    return checks


def run_checks(
    kind: PuzzleKind, levels: Sequence[Mapping[str, Any]] | None = None, time_limit: float = 10.0
) -> list[Check]:
    """Return every check of the kind's contract, passed or not (see the module docstring)."""
    examples = list(kind.examples if levels is None else levels)
    checks = [_shape(kind, examples)]
    if not checks[0].ok:
        return checks
    parsed: list[tuple[int, Any]] = []
    problems: list[str] = []
    for i, data in enumerate(examples, 1):
        try:
            parsed.append((i, _parse_example(kind, data)))
        except _Broken as exc:
            problems.append(f"example {i}: {exc}")
    checks.append(_check("example levels parse, and canonical round-trips", problems))
    checks.append(
        _check("the level hash is stable", [p for i, lv in parsed for p in _hash_problems(kind, i, lv)])
    )
    if kind.preparation is not None:
        # Before the solving, as packsolve prepares before the attempts: outside their budgets.
        checks.append(
            _check(
                "preparation gives a Preparation or None, ready once run, and runs again harmlessly",
                [p for h in kind.solvers for i, lv in parsed for p in _preparation_problems(kind, h, i, lv)],
            )
        )
    answers: dict[int, dict[str, Outcome]] = {i: {} for i, _ in parsed}
    for heuristic in kind.solvers:
        found = []
        for i, level in parsed:
            outcome, problem = _solve(kind, heuristic, level, time_limit)
            if problem:
                found.append(f"example {i}: {problem}")
            elif outcome is not None:
                answers[i][heuristic] = outcome
        checks.append(_check(f"heuristic {heuristic!r} ends with an answer verify accepts", found))
    checks.append(_check("heuristics agree on which examples have a solution", _disagreements(answers)))
    if kind.split is not None:
        checks.append(
            _check(
                "split gives distinct parts whose answers after their prefixes verify accepts, "
                "as short as the unsplit answer for best of all",
                [
                    p
                    for heuristic in kind.solvers
                    for i, lv in parsed
                    if heuristic in answers[i]
                    for p in _split_problems(kind, heuristic, i, lv, answers[i][heuristic], time_limit)
                ],
            )
        )
    solutions = [(i, lv, _first_solution(answers[i])) for i, lv in parsed]
    checks.append(
        _check(
            "verify rejects corrupted answers with a message",
            [
                p
                for i, lv, sol in solutions
                if sol is not None
                for p in _corruption_problems(kind, i, lv, sol)
            ],
        )
    )
    checks.append(
        _check("bad input raises LevelError with a message", list(_bad_input_problems(kind, examples)))
    )
    checks.append(
        _check(
            "render and svg produce output",
            [p for i, lv, sol in solutions for p in _picture_problems(kind, i, lv, sol)],
        )
    )
    return checks


class _Broken(Exception):
    """One example broke one property; the message says how."""


def _check(name: str, problems: Sequence[str]) -> Check:
    if not problems:
        return Check(name, True)
    shown = "; ".join(problems[:3]) + (f" (and {len(problems) - 3} more)" if len(problems) > 3 else "")
    return Check(name, False, shown)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= DETAIL_CHARS else text[:DETAIL_CHARS] + "…"


def _error(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= DETAIL_CHARS else text[:DETAIL_CHARS] + "…"


def _shape(kind: PuzzleKind, examples: list[Mapping[str, Any]]) -> Check:
    """Check what the rest needs: a name, solvers with the default among them, some example levels."""
    problems = []
    if not isinstance(kind, PuzzleKind):
        return Check("the kind is a PuzzleKind", False, f"got a {type(kind).__name__}")
    if not isinstance(kind.name, str) or not kind.name or kind.name != kind.name.strip():
        problems.append(f"name must be a non-empty string without spaces around it, not {kind.name!r}")
    if not kind.solvers:
        problems.append("solvers is empty: give at least one heuristic")
    elif kind.default not in kind.solvers:
        problems.append(f"default {kind.default!r} is not among the solvers ({', '.join(kind.solvers)})")
    for field in ("parse", "canonical", "verify", "render", "svg", "size", "length"):
        if not callable(getattr(kind, field)):
            problems.append(f"{field} must be a function")
    if kind.preparation is not None and not callable(kind.preparation):
        problems.append("preparation must be a function or None")
    if not examples:
        problems.append("no example levels: give PuzzleKind(examples=[...]) or pass levels to check_kind")
    elif not all(isinstance(e, Mapping) for e in examples):
        problems.append("every example level must be a JSON object (a dict)")
    return _check("the kind has a name, solvers with its default, and example levels", problems)


def _parse_example(kind: PuzzleKind, data: Mapping[str, Any]) -> Any:
    """Return the parsed example; raise _Broken if it fails to parse or round-trip, or changes its input."""
    before = copy.deepcopy(data)
    try:
        level = kind.parse(data)
    except LevelError as exc:
        raise _Broken(f"does not parse: {exc}") from None
    except Exception as exc:
        raise _Broken(f"parse raised {_error(exc)}") from None
    if data != before:
        raise _Broken("parse changed the level object it was given")
    first = _canonical_text(kind, level)
    try:
        again = kind.parse(json.loads(first))
    except Exception as exc:
        raise _Broken(f"its canonical form {_short(first)} does not parse again: {_error(exc)}") from None
    second = _canonical_text(kind, again)
    if second != first:
        raise _Broken(f"canonical form changes on a round trip: {_short(first)} then {_short(second)}")
    return level


def _canonical_text(kind: PuzzleKind, level: Any) -> str:
    try:
        data = kind.canonical(level)
    except Exception as exc:
        raise _Broken(f"canonical raised {_error(exc)}") from None
    if not isinstance(data, dict):
        raise _Broken(f"canonical must return a dict (a JSON object), not {type(data).__name__}")
    try:
        text = json.dumps(data, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise _Broken(f"canonical form is not JSON: {exc}") from None
    return canonical_json(json.loads(text))


def _hash_problems(kind: PuzzleKind, i: int, level: Any) -> list[str]:
    """Return why the level's hash would differ between two spellings or two runs (empty if it would not)."""
    data = {**kind.canonical(level), "kind": kind.name}
    expected = level_hash(data)
    # The same level written with its keys in the opposite order, and read back from JSON text.
    respelled = json.loads(json.dumps(dict(reversed(list(data.items())))))
    try:
        got = level_hash({**kind.canonical(kind.parse(respelled)), "kind": kind.name})
    except Exception as exc:
        return [f"example {i}: its canonical form, keys reordered, does not parse: {_error(exc)}"]
    if got != expected:
        return [f"example {i}: the hash depends on the order of the level's keys"]
    if level_hash({**kind.canonical(level), "kind": kind.name}) != expected:
        return [f"example {i}: canonical gives a different answer each time"]
    return []


def _preparation_problems(kind: PuzzleKind, heuristic: str, i: int, level: Any) -> list[str]:
    """Return what is wrong with the kind's preparation for one heuristic and example (run twice)."""
    assert kind.preparation is not None
    where = f"example {i}, {heuristic!r}"
    try:
        prep = kind.preparation(heuristic, level)
    except Exception as exc:
        return [f"{where}: preparation raised {_error(exc)}"]
    if prep is None:
        return []
    if not isinstance(prep, Preparation):
        return [f"{where}: preparation returned a {type(prep).__name__}, not a Preparation or None"]
    problems = [
        f"{where}: Preparation.{name} must be a non-empty string"
        for name in ("key", "what")
        if not isinstance(getattr(prep, name), str) or not getattr(prep, name)
    ]
    problems += [
        f"{where}: Preparation.{name} must be a function"
        for name in ("ready", "run")
        if not callable(getattr(prep, name))
    ]
    if problems:
        return problems
    for turn in ("first", "second"):
        try:
            prep.run()
            ready = prep.ready()
        except Exception as exc:
            return [f"{where}: its {turn} run raised {_error(exc)}"]
        if ready is not True:
            return [f"{where}: ready() is {ready!r} after its {turn} run, not True"]
    again = kind.preparation(heuristic, level)
    if not isinstance(again, Preparation) or again.key != prep.key:
        return [f"{where}: asked again, preparation gives another key (it must name the same work)"]
    return []


def _solve(kind: PuzzleKind, heuristic: str, level: Any, time_limit: float) -> tuple[Outcome | None, str]:
    """Return (outcome, problem) of one heuristic on one level: the problem is empty if the answer stands."""
    try:
        outcome = kind.solvers[heuristic](level, Budget(time_limit))
    except Exception as exc:
        return None, f"raised {_error(exc)}"
    if not isinstance(outcome, Outcome):
        return None, f"returned a {type(outcome).__name__}, not an Outcome (wrap the function with solver)"
    if outcome.status is Status.TIMEOUT:
        return None, f"did not finish within {time_limit:g} s: give an easier example level"
    if outcome.status not in (Status.SOLVED, Status.NO_SOLUTION):
        return None, f"ended {outcome.status.value}: {outcome.message}"
    if outcome.status is Status.NO_SOLUTION:
        return outcome, ""
    try:
        stored = json.loads(json.dumps(outcome.solution, allow_nan=False))
    except (TypeError, ValueError) as exc:
        return None, f"its solution is not JSON: {exc}"
    try:
        problem = kind.verify(level, stored)
    except Exception as exc:
        return None, f"verify raised {_error(exc)} on its solution"
    if problem:
        return None, f"verify rejects its solution: {_short(problem)}"
    return Outcome(outcome.status, stored, outcome.stats, outcome.message), ""


def _split_problems(
    kind: PuzzleKind, heuristic: str, i: int, level: Any, unsplit: Outcome, time_limit: float
) -> list[str]:
    """Return what is wrong with the kind's split of one example for one heuristic (unsplit: its answer)."""
    where = f"example {i}, heuristic {heuristic!r}"
    assert kind.split is not None
    try:
        split = kind.split(level, heuristic, SPLIT_PARTS)
    except Exception as exc:
        return [f"{where}: split raised {_error(exc)}"]
    if split is None:
        return []
    problems = _split_shape_problems(split, where)
    if problems:
        return problems
    lengths, problems = _part_answers(kind, heuristic, level, split, where, time_limit)
    if problems:
        return problems
    if unsplit.status is Status.SOLVED and not lengths:
        return [f"{where}: the level has an answer, none of its {len(split.parts)} parts has one"]
    if unsplit.status is Status.NO_SOLUTION and lengths:
        return [f"{where}: a part has an answer, the unsplit search proved there is none"]
    want = kind.length(unsplit.solution) if unsplit.status is Status.SOLVED else None
    optimal = split.combine is Combine.BEST_OF_ALL and want is not None
    if optimal and min((n for n in lengths if n is not None), default=None) != want:
        shortest = min((n for n in lengths if n is not None), default=None)
        return [f"{where}: the parts' shortest answer has length {shortest}, the unsplit one {want}"]
    try:
        got = solve_split(kind, level, heuristic, parts=SPLIT_PARTS, limits=LevelLimits(time_limit)).outcome
    except Exception as exc:
        return [f"{where}: solving the parts raised {_error(exc)}"]
    if got.status is not unsplit.status:
        ends = f"{got.status.value} ({got.message})"
        return [f"{where}: solved in parts it ends {ends}, unsplit {unsplit.status.value}"]
    if optimal and kind.length(got.solution) != want:
        return [f"{where}: solved in parts its answer has length {kind.length(got.solution)}, unsplit {want}"]
    return []


def _split_shape_problems(split: Any, where: str) -> list[str]:
    if (
        not isinstance(split, Split)
        or not isinstance(split.combine, Combine)
        or not split.parts
        or not all(isinstance(p, Part) for p in split.parts)
    ):
        return [f"{where}: split must give None or a Split of at least one Part and a Combine rule"]
    parts = split.parts
    for a in range(len(parts)):
        for b in range(a):
            if parts[a].level == parts[b].level and parts[a].prefix == parts[b].prefix:
                return [f"{where}: parts {b + 1} and {a + 1} are the same sub-level"]
    return []


def _part_answers(
    kind: PuzzleKind, heuristic: str, level: Any, split: Split, where: str, time_limit: float
) -> tuple[list[int | None], list[str]]:
    """Solve each part alone; return the lengths of their answers after their prefixes, and what was wrong."""
    problems: list[str] = []
    lengths = []
    solve = kind.solvers[heuristic]
    for k, part in enumerate(split.parts, 1):
        try:
            out = solve(part.level, Budget(time_limit))
            if out.status is not Status.SOLVED:
                continue
            combined = json.loads(json.dumps(part.combine(out.solution), allow_nan=False))
            why = kind.verify(level, combined)
        except Exception as exc:
            problems.append(f"{where}: part {k}: {_error(exc)}")
            continue
        if why:
            problems.append(f"{where}: part {k}'s answer after its prefix is wrong: {_short(why)}")
        else:
            lengths.append(kind.length(combined))
    return lengths, problems


def _disagreements(answers: Mapping[int, Mapping[str, Outcome]]) -> list[str]:
    out = []
    for i, by_heuristic in answers.items():
        solved = sorted(h for h, o in by_heuristic.items() if o.status is Status.SOLVED)
        none = sorted(h for h, o in by_heuristic.items() if o.status is Status.NO_SOLUTION)
        if solved and none:
            out.append(f"example {i}: {', '.join(none)} proved no solution, {', '.join(solved)} found one")
    return out


def _first_solution(by_heuristic: Mapping[str, Outcome]) -> Any | None:
    for outcome in by_heuristic.values():
        if outcome.status is Status.SOLVED and outcome.solution is not None:
            return outcome.solution
    return None


def corruptions(solution: Any) -> Iterator[tuple[str, Any]]:
    """Yield (what was done, corrupted answer) for a solution: each must be rejected by verify."""
    yield "no answer (null)", None
    yield (
        "an answer of another type",
        {"not": "a solution"} if isinstance(solution, list) else ["not a solution"],
    )
    if isinstance(solution, (list, str)) and solution:
        yield "the answer without its last item", solution[:-1]
    if isinstance(solution, dict) and solution:
        yield "every field of the answer null", {k: None for k in solution}


def _corruption_problems(kind: PuzzleKind, i: int, level: Any, solution: Any) -> list[str]:
    out = []
    for what, bad in corruptions(solution):
        try:
            problem = kind.verify(level, bad)
        except Exception:
            # Rejected all the same: packsolve stores such an answer as wrong, with the exception's text.
            continue
        if not problem or not isinstance(problem, str):
            out.append(f"example {i}: verify accepted {what}: {_short(bad)}")
    return out


def _bad_inputs(name: str, examples: Sequence[Mapping[str, Any]]) -> Iterator[tuple[str, Any, bool]]:
    """Yield (description, input, must_fail): inputs parse must reject, or may accept but only cleanly."""
    for value in NOT_OBJECTS:
        yield f"{_short(value)} (not a JSON object)", value, True
    yield "{} (no fields)", {}, True
    yield f"{{'kind': {name!r}}} (only the kind)", {"kind": name}, True
    first = dict(examples[0]) if examples else {}
    for key in [k for k in first if k != "kind"]:
        yield f"the first example without {key!r}", {k: v for k, v in first.items() if k != key}, False
        for value in BAD_VALUES:
            yield f"the first example with {key!r} = {_short(value)}", {**first, key: value}, False


def _bad_input_problems(kind: PuzzleKind, examples: Sequence[Mapping[str, Any]]) -> Iterator[str]:
    for what, data, must_fail in _bad_inputs(kind.name, examples):
        try:
            kind.parse(data)
        except LevelError as exc:
            if not str(exc).strip():
                yield f"{what}: LevelError without a message"
            continue
        except Exception as exc:
            yield f"{what}: parse raised {_error(exc)} (raise LevelError with a message instead)"
            continue
        if must_fail:
            yield f"{what}: parse accepted it (raise LevelError saying what is missing)"


def _picture_problems(kind: PuzzleKind, i: int, level: Any, solution: Any | None) -> list[str]:
    out = []
    for name, draw, ok in (
        ("render", kind.render, _is_text),
        ("svg", kind.svg, lambda s: _is_text(s) and "<svg" in s),
    ):
        for label, sol in (("the level alone", None), ("its solution", solution)):
            if label == "its solution" and solution is None:
                continue
            try:
                picture = draw(level, sol)
            except Exception as exc:
                out.append(f"example {i}: {name} of {label} raised {_error(exc)}")
                continue
            if not ok(picture):
                out.append(f"example {i}: {name} of {label} gave {_short(picture)[:80]}")
    return out


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


__all__ = ["Check", "KindCheckFailed", "check_kind", "corruptions", "run_checks"]
