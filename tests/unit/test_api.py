"""packsolve.api is the stable surface for kind authors: its names and signatures are pinned here."""

from __future__ import annotations

import dataclasses
import inspect

import packsolve.api as api

STABLE_NAMES = {
    "Preparation",
    "PuzzleKind",
    "solver",
    "solved",
    "no_solution",
    "Budget",
    "Outcome",
    "Status",
    "LevelError",
    # Splitting a level (issue 38): optional for a kind, added without touching the names above.
    "Combine",
    "Part",
    "Split",
    "SharedBound",
}


def test_the_api_exports_exactly_the_names_a_kind_author_needs():
    assert set(api.__all__) == STABLE_NAMES
    for name in STABLE_NAMES:
        assert getattr(api, name) is not None


def test_puzzle_kind_keeps_its_fields_in_order_and_every_later_one_is_optional():
    fields = dataclasses.fields(api.PuzzleKind)
    names = [f.name for f in fields]
    required = ["name", "parse", "canonical", "solvers", "default", "verify", "render", "svg", "size"]
    assert names[: len(required)] == required
    assert names[len(required) :] == [
        "length",
        "formats",
        "description",
        "generate",
        "examples",
        "size_help",
        "preparation",
        "split",
    ]
    for f in fields[len(required) :]:
        assert f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING, f.name


def test_the_helpers_keep_their_signatures():
    assert list(inspect.signature(api.solved).parameters) == ["solution", "message"]
    assert list(inspect.signature(api.no_solution).parameters) == ["reason"]
    assert list(inspect.signature(api.solver).parameters) == ["fn"]
    # A kind that makes a Budget of its own (a sub-search) passes these two first; cpu_limit came later.
    assert list(inspect.signature(api.Budget).parameters) == ["time_limit", "node_limit", "cpu_limit"]
    # A kind written against the first four keeps working: later fields come after them, with defaults.
    outcome = inspect.signature(api.Outcome).parameters
    assert list(outcome)[:4] == ["status", "solution", "stats", "message"]
    assert list(outcome)[4:] == ["stdout", "stderr", "resume"]  # resume: a split level's part (issue 38)
    assert all(p.default is not inspect.Parameter.empty for p in list(outcome.values())[4:])
    assert list(inspect.signature(api.LevelError).parameters) == ["message", "line", "column"]
    assert {s.value for s in api.Status} >= {"solved", "no_solution", "timeout", "memout", "error", "wrong"}


def test_a_solver_turns_an_exhausted_budget_into_a_timeout_with_the_node_count():
    @api.solver
    def forever(level, budget):
        while True:
            budget.charge()

    out = forever(None, api.Budget(node_limit=100))
    assert out.status is api.Status.TIMEOUT and out.nodes == 101


def test_the_api_module_imports_only_the_pure_core():
    source = inspect.getsource(api)
    imports = {line.split()[1] for line in source.splitlines() if line.startswith(("import ", "from "))}
    assert {i for i in imports if i.startswith("packsolve")} == {
        "packsolve.budget",
        "packsolve.errors",
        "packsolve.outcome",
    }
