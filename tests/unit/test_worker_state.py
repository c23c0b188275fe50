"""A worker process's state lives on its one WorkerProcess."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "packsolve"
# Module-level values that can change: containers and objects made by a call (a class, a lock).
MUTABLE = (ast.Dict, ast.Set, ast.List, ast.DictComp, ast.SetComp, ast.ListComp, ast.Call)


def module_state(path: Path) -> list[str]:
    """Return the names a module binds at its top level to a mutable value, or declares global."""
    tree = ast.parse(path.read_text())
    found = []
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            is_slot = isinstance(node, ast.AnnAssign) and isinstance(node.value, ast.Constant)
            if isinstance(node.value, MUTABLE) or is_slot:
                found += names
    return found


def test_the_queue_package_keeps_no_module_state_but_the_one_worker_process_slot():
    state = {p.name: module_state(p) for p in sorted((SRC / "queue").glob("*.py"))}
    # A module's logger is made by a call, and holds nothing of the process's work.
    state = {name: [n for n in names if n != "log"] for name, names in state.items()}
    assert {name: names for name, names in state.items() if names} == {"consumer.py": ["_process"]}
