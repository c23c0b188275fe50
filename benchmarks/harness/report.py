"""Where results go and how they are written: Markdown tables, a result file written and printed."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[object]], align: str = "---") -> str:
    """Return a Markdown table of header and rows; align is every column's separator cell ("---:")."""
    lines = ["| " + " | ".join(header) + " |", "|" + f"{align}|" * len(header)]
    lines += ["| " + " | ".join(str(x) for x in row) + " |" for row in rows]
    return "\n".join(lines)


def publish(text: str, path: Path) -> None:
    """Write a result to path (its folder made if need be) and print it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    print(text)
