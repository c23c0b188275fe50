"""The figures measured on every attempt, as the read model shows them: one list for every view.

They are SearchStats' fields (outcome.py), each written to the attempts column of its name
(db/attempts.result_columns). A new figure is a new field there: the export record and a
level's history (`show`, the level page) list it from here without further change.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from packsolve.outcome import SearchStats

# Every measured figure, in SearchStats' order: the attempts column of that name holds it.
MEASURED: tuple[str, ...] = tuple(f.name for f in fields(SearchStats))

# Decimals a figure is shown to in a level's history (one not named here: as stored).
_DIGITS = {"wall_s": 4, "cpu_s": 4, "peak_rss_mb": 1}


def measured(row: Any) -> dict[str, Any]:
    """Return the attempt row's measured figures by name, as stored (None where not measured)."""
    return {name: getattr(row, name) for name in MEASURED}


def measured_shown(row: Any) -> dict[str, Any]:
    """Return the attempt row's measured figures by name, rounded for display."""
    return {name: _shown(name, getattr(row, name)) for name in MEASURED}


def _shown(name: str, value: Any) -> Any:
    digits = _DIGITS.get(name)
    return value if value is None or digits is None else round(value, digits)
