"""Pictures of knight's tours: step numbers in the terminal, the path drawn in SVG."""

from __future__ import annotations

from typing import Any

from packsolve.puzzles.knights_tour.rules import Board

# Beyond this many columns the terminal shows the top-left corner only.
TEXT_COLS = 32
SVG_PIXELS = 800


def render(board: Board, solution: Any = None) -> str:
    """Return the board as text: the step number (from 1) on each square, or S at the start."""
    R, C = board.rows, board.cols
    shown_r, shown_c = min(R, TEXT_COLS), min(C, TEXT_COLS)
    step: dict[tuple[int, int], int] = {}
    if solution:
        for i, (r, c) in enumerate(solution):
            if r < shown_r and c < shown_c:
                step[(r, c)] = i + 1
    width = len(str(R * C)) if solution else 1
    lines = []
    kind = "closed tour" if board.closed else "tour"
    head = f"{R}x{C} knight's {kind} from {list(board.start)}"
    if (shown_r, shown_c) != (R, C):
        head += f" (top-left {shown_r}x{shown_c} shown)"
    lines.append(head)
    for r in range(shown_r):
        cells = []
        for c in range(shown_c):
            if (r, c) in step:
                cells.append(str(step[(r, c)]).rjust(width))
            elif (r, c) == board.start:
                cells.append("S".rjust(width))
            else:
                cells.append(("·" if (r + c) % 2 else "∙").rjust(width))
        lines.append(" ".join(cells))
    return "\n".join(lines)


def svg(board: Board, solution: Any = None) -> str:
    """Return an SVG of the checkered board with the tour as a polyline (numbers on small boards)."""
    R, C = board.rows, board.cols
    cell = max(1.0, min(40.0, SVG_PIXELS / max(R, C)))
    w, h = C * cell, R * cell
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w:g}" height="{h:g}" viewBox="0 0 {w:g} {h:g}">',
        f'<rect width="{w:g}" height="{h:g}" fill="#f0d9b5"/>',
    ]
    if R * C <= 10_000:  # dark squares one by one; beyond, a pattern keeps the file small
        for r in range(R):
            for c in range(r % 2 ^ 1, C, 2):
                parts.append(
                    f'<rect x="{c * cell:g}" y="{r * cell:g}" width="{cell:g}" height="{cell:g}" '
                    'fill="#b58863"/>'
                )
    sr, sc = board.start
    parts.append(
        f'<rect x="{sc * cell:g}" y="{sr * cell:g}" width="{cell:g}" height="{cell:g}" fill="#ffd54f"/>'
    )
    if solution:
        half = cell / 2
        pts = " ".join(f"{c * cell + half:g},{r * cell + half:g}" for r, c in solution)
        if board.closed:
            pts += f" {solution[0][1] * cell + half:g},{solution[0][0] * cell + half:g}"
        parts.append(
            f'<polyline points="{pts}" fill="none" stroke="#1e3a8a" stroke-width="{max(0.2, cell / 12):g}" '
            'stroke-linejoin="round"/>'
        )
        if R * C <= 400:
            size = cell / 3
            for i, (r, c) in enumerate(solution):
                parts.append(
                    f'<text x="{c * cell + half:g}" y="{r * cell + half + size / 3:g}" font-size="{size:g}" '
                    f'text-anchor="middle" fill="#b71c1c">{i + 1}</text>'
                )
    parts.append("</svg>")
    return "\n".join(parts)
