"""Sudoku pictures: a terminal grid and an SVG, givens set apart from the digits a solver filled."""

from __future__ import annotations

from typing import Any


def _digits(grid: str, solution: Any) -> list[tuple[str, bool]]:
    """Return (digit or ' ', is_given) per cell; solution digits fill the blanks when given."""
    full = solution if isinstance(solution, str) and len(solution) == 81 else None
    out = []
    for i, ch in enumerate(grid):
        if ch != ".":
            out.append((ch, True))
        elif full is not None and full[i] in "123456789":
            out.append((full[i], False))
        else:
            out.append((" ", False))
    return out


def render(grid: str, solution: Any = None) -> str:
    """Return the grid in box-drawing lines; givens in brackets, solved digits bare, blanks '·'."""
    cells = _digits(grid, solution)
    top = "┌" + "┬".join(["─" * 9] * 3) + "┐"
    mid = "├" + "┼".join(["─" * 9] * 3) + "┤"
    bottom = "└" + "┴".join(["─" * 9] * 3) + "┘"
    lines = [top]
    for r in range(9):
        if r and r % 3 == 0:
            lines.append(mid)
        parts = []
        for b in range(3):
            chunk = ""
            for c in range(b * 3, b * 3 + 3):
                digit, given = cells[r * 9 + c]
                chunk += f"[{digit}]" if given else (f" {digit} " if digit != " " else " · ")
            parts.append(chunk)
        lines.append("│" + "│".join(parts) + "│")
    lines.append(bottom)
    if solution is not None:
        lines.append("[d] given   d filled by the solver")
    return "\n".join(lines)


def svg(grid: str, solution: Any = None, cell: int = 36) -> str:
    """Return an SVG of the grid: givens bold black on grey, solved digits blue on white."""
    size = cell * 9
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{size + 4}" height="{size + 4}" '
        f'viewBox="-2 -2 {size + 4} {size + 4}" font-family="sans-serif">',
        f'<rect width="{size}" height="{size}" fill="#fff"/>',
    ]
    for i, (digit, given) in enumerate(_digits(grid, solution)):
        r, c = divmod(i, 9)
        x, y = c * cell, r * cell
        if given:
            parts.append(f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" fill="#e8e8e8"/>')
        if digit != " ":
            style = 'fill="#111" font-weight="bold"' if given else 'fill="#1e63c4"'
            parts.append(
                f'<text x="{x + cell / 2}" y="{y + cell * 0.7}" font-size="{cell * 0.6:g}" '
                f'text-anchor="middle" class="{"given" if given else "filled"}" {style}>{digit}</text>'
            )
    for k in range(10):
        width = 3 if k % 3 == 0 else 1
        p = k * cell
        parts.append(f'<line x1="{p}" y1="0" x2="{p}" y2="{size}" stroke="#222" stroke-width="{width}"/>')
        parts.append(f'<line x1="0" y1="{p}" x2="{size}" y2="{p}" stroke="#222" stroke-width="{width}"/>')
    parts.append("</svg>")
    return "\n".join(parts)
