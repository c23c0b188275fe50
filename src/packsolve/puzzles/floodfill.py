"""Flood fill (paint bucket) levels: the pixels of the clicked colour 4-connected to the click."""

from __future__ import annotations

import importlib
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from packsolve.api import Budget, LevelError, Outcome, PuzzleKind, field_of, solved, solver

_native: Any
try:  # the C scanline fill; the pure-Python one below is the fallback when it is not built
    _native = importlib.import_module("packsolve.native.floodfill")
except ImportError:  # pragma: no cover - depends on the build
    _native = None

MAX_PIXELS = 16_000_000
FILLED, EMPTY = "!", "."
_DIGITS = "0123456789"
_RUN = re.compile(rb"\x01+")


@dataclass(frozen=True)
class Image:
    """A floodfill level: rows of colours (digit strings when every colour is 0-9) and the click."""

    rows: tuple[Any, ...]  # str rows (colours 0-9) or tuples of ints
    click: tuple[int, int]

    @property
    def height(self) -> int:
        return len(self.rows)

    @property
    def width(self) -> int:
        return len(self.rows[0])

    @property
    def colour(self) -> Any:
        """The clicked pixel in the rows' own representation (a digit char or an int)."""
        r, c = self.click
        return self.rows[r][c]

    def colour_at(self, r: int, c: int) -> int:
        return int(self.rows[r][c])


def _parse_row(row: Any, i: int) -> Any:
    if isinstance(row, str):
        if not (row.isascii() and row.isdigit()):
            bad = next((j for j, ch in enumerate(row) if ch not in _DIGITS), 0)
            raise LevelError(
                f"image row {i + 1}, column {bad + 1}: {row[bad : bad + 1]!r} is not a digit 0-9"
            )
        return row
    if isinstance(row, list):
        if not all(type(v) is int for v in row):
            bad = next(j for j, v in enumerate(row) if type(v) is not int)
            raise LevelError(f"image row {i + 1}, column {bad + 1}: {row[bad]!r} is not an integer colour")
        return tuple(row)
    raise LevelError(f"image row {i + 1} must be a string of digits or a list of integers")


def parse(data: Mapping[str, Any]) -> Image:
    image = field_of(data, "image", "floodfill")
    click = field_of(data, "click", "floodfill")
    if not isinstance(image, list) or not image:
        raise LevelError("'image' must be a non-empty list of rows")
    rows = [_parse_row(row, i) for i, row in enumerate(image)]
    width = len(rows[0])
    if width == 0:
        raise LevelError("image row 1 is empty")
    for i, row in enumerate(rows):
        if len(row) != width:
            raise LevelError(f"ragged image: row {i + 1} has {len(row)} pixels, row 1 has {width}")
    if len(rows) * width > MAX_PIXELS:
        raise LevelError(f"image has {len(rows) * width} pixels, more than the {MAX_PIXELS} supported")
    # One representation per image, so ints and digit strings spell the same level the same way.
    if all(isinstance(r, str) or (min(r) >= 0 and max(r) <= 9) for r in rows):
        rows = [r if isinstance(r, str) else "".join(map(str, r)) for r in rows]
    else:
        rows = [tuple(map(int, r)) for r in rows]
    if (
        not isinstance(click, list)
        or len(click) != 2
        or not all(type(v) is int for v in click)
        or not (0 <= click[0] < len(rows) and 0 <= click[1] < width)
    ):
        raise LevelError(f"'click' must be [row, col] inside the {len(rows)}x{width} image, not {click!r}")
    return Image(tuple(rows), (click[0], click[1]))


def canonical(img: Image) -> dict[str, Any]:
    rows = list(img.rows) if isinstance(img.rows[0], str) else [list(r) for r in img.rows]
    return {"image": rows, "click": list(img.click)}


def match_rows(img: Image) -> list[bytes]:
    """Return each row as bytes, 1 where the pixel has the clicked colour, 0 elsewhere."""
    colour = img.colour
    if isinstance(colour, str):
        table = bytes.maketrans(_DIGITS.encode(), bytes(int(d == colour) for d in _DIGITS))
        return [row.encode("ascii").translate(table) for row in img.rows]
    return [bytes(v == colour for v in row) for row in img.rows]


def _mask(filled: Sequence[bytes | bytearray]) -> list[str]:
    table = bytes.maketrans(b"\x00\x01", b".!")
    return [bytes(row).translate(table).decode("ascii") for row in filled]


def recursive_fill(img: Image, budget: Budget) -> Outcome:
    """The write-up's fill: recursive depth-first search with a visited grid."""
    height, width, colour, rows = img.height, img.width, img.colour, img.rows
    visited = [[False] * width for _ in range(height)]
    deepest = 0

    def dfs(x: int, y: int, depth: int) -> None:
        nonlocal deepest
        deepest = max(deepest, depth)
        visited[x][y] = True
        budget.charge()
        for dx, dy in ((-1, 0), (1, 0), (0, -1), (0, 1)):
            nx, ny = x + dx, y + dy
            if 0 <= nx < height and 0 <= ny < width and not visited[nx][ny] and rows[nx][ny] == colour:
                dfs(nx, ny, depth + 1)

    try:
        dfs(img.click[0], img.click[1], 1)
    except RecursionError:
        # Python's own limit stops the recursion safely; raising it could overflow the C stack instead.
        raise RuntimeError(
            f"plain recursive fill exceeded Python's recursion limit at depth {deepest}; "
            "use the default heuristic"
        ) from None
    mask = ["".join(FILLED if v else EMPTY for v in row) for row in visited]
    return solved({"count": sum(map(sum, visited)), "mask": mask})


def stack_fill(img: Image, budget: Budget) -> Outcome:
    """Depth-first fill with an explicit stack, one pixel at a time."""
    height, width = img.height, img.width
    match = match_rows(img)
    filled = [bytearray(width) for _ in range(height)]
    r0, c0 = img.click
    filled[r0][c0] = 1
    stack = [(r0, c0)]
    count = 0
    while stack:
        r, c = stack.pop()
        budget.charge()
        count += 1
        for nr, nc in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
            if 0 <= nr < height and 0 <= nc < width and match[nr][nc] and not filled[nr][nc]:
                filled[nr][nc] = 1
                stack.append((nr, nc))
    return solved({"count": count, "mask": _mask(filled)})


def scanline_fill(img: Image, budget: Budget) -> Outcome:
    """Span fill: fill a whole run of the row at once, then seed the runs it touches above and below."""
    height, width = img.height, img.width
    match = match_rows(img)
    if _native is not None:
        flat = _native.scanline(b"".join(match), height, width, *img.click)
        count = flat.count(1)
        budget.charge(count)  # the C fill takes milliseconds; charging after it still caps nodes
        text = flat.translate(bytes.maketrans(b"\x00\x01", b".!")).decode("ascii")
        return solved(
            {"count": count, "mask": [text[i : i + width] for i in range(0, height * width, width)]}
        )
    return _scanline_python(img, match, budget)


def _scanline_python(img: Image, match: list[bytes], budget: Budget) -> Outcome:
    height, width = img.height, img.width
    filled = [bytearray(width) for _ in range(height)]
    ones = b"\x01" * width
    stack = [img.click]
    count = 0
    while stack:
        r, c = stack.pop()
        here = filled[r]
        if here[c]:
            continue
        row = match[r]
        left = row.rfind(b"\x00", 0, c) + 1
        right = row.find(b"\x00", c)
        if right < 0:
            right = width
        here[left:right] = ones[: right - left]
        count += right - left
        budget.charge(right - left)  # one node per pixel filled, as in the other fills
        for nr in (r - 1, r + 1):
            if 0 <= nr < height:
                seen = filled[nr]
                # Runs are always filled whole, so a run's first pixel tells whether it is done.
                stack.extend(
                    (nr, m.start()) for m in _RUN.finditer(match[nr], left, right) if not seen[m.start()]
                )
    return solved({"count": count, "mask": _mask(filled)})


def verify(img: Image, solution: Any) -> str | None:
    """Return why solution is not the click's fill, or None: same colour, closed, connected, counted."""
    problem = _form_problem(img, solution)
    if problem is not None:
        return problem
    mask = solution["mask"]
    bits = [int(row.translate(_MASK_BITS), 2) for row in mask]
    r0, c0 = img.click
    problem = _closure_problem(bits, _colour_bits(img, img.rows[r0][c0]), img.width)
    if problem is not None:
        return problem
    if _native is not None:
        flat = "".join(mask).encode("ascii").translate(bytes.maketrans(b".!", b"\x00\x01"))
        if _native.reach(flat, img.height, img.width, r0, c0) != solution["count"]:
            return "the filled pixels are not one region connected to the click"
        return None
    return _connected(mask, img.click)


# A mask row as binary digits: filled 1, empty 0.
_MASK_BITS = str.maketrans({FILLED: "1", EMPTY: "0"})


def _form_problem(img: Image, solution: Any) -> str | None:
    """Return why solution is not a mask of img's size whose count is its filled pixels, click filled."""
    if not isinstance(solution, Mapping) or set(solution) != {"count", "mask"}:
        return 'solution must be {"count": n, "mask": [rows of "!" and "."]}'
    mask, height, width = solution["mask"], img.height, img.width
    if not isinstance(mask, list) or len(mask) != height:
        return f"mask must be a list of {height} rows"
    for i, row in enumerate(mask):
        if not isinstance(row, str) or len(row) != width or not set(row) <= {FILLED, EMPTY}:
            return f"mask row {i + 1} must be {width} characters of '!' and '.'"
    total = sum(row.count(FILLED) for row in mask)
    if solution["count"] != total:
        return f"count {solution['count']!r} differs from the {total} filled pixels of the mask"
    r0, c0 = img.click
    if mask[r0][c0] != FILLED:
        return f"the clicked pixel {[r0, c0]} is not filled"
    return None


def _colour_bits(img: Image, colour: Any) -> list[int]:
    """Return each row of img as a bitmask of its pixels of the given colour."""
    same, digit_bits = [], str.maketrans({d: "1" if d == colour else "0" for d in _DIGITS})
    for row in img.rows:
        if isinstance(row, str):
            same.append(int(row.translate(digit_bits), 2))
        else:
            same.append(int("".join("1" if v == colour else "0" for v in row), 2))
    return same


def _closure_problem(bits: list[int], same: list[int], width: int) -> str | None:
    """Return why the fill (row bitmasks) takes another colour or leaves out a same-coloured neighbour."""
    height, full = len(bits), (1 << width) - 1
    for r in range(height):
        if bits[r] & ~same[r]:
            return f"row {r + 1} fills a pixel of another colour"
        around = (bits[r] << 1) | (bits[r] >> 1)
        around |= (bits[r - 1] if r else 0) | (bits[r + 1] if r + 1 < height else 0)
        if around & full & same[r] & ~bits[r]:
            return f"row {r + 1} leaves out a pixel of the clicked colour next to the fill"
    return None


def _connected(mask: list[str], click: tuple[int, int]) -> str | None:
    """Return why the filled runs are not one 4-connected region, or None (union-find over runs)."""
    runs = [[(m.start(), m.end()) for m in re.finditer(r"!+", row)] for row in mask]
    parent: list[int] = []
    first = []
    for row in runs:
        first.append(len(parent))
        parent.extend(range(len(parent), len(parent) + len(row)))

    def root(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for r in range(1, len(runs)):
        i = j = 0
        above, here = runs[r - 1], runs[r]
        while i < len(above) and j < len(here):
            if above[i][0] < here[j][1] and here[j][0] < above[i][1]:
                parent[root(first[r - 1] + i)] = root(first[r] + j)
            if above[i][1] < here[j][1]:
                i += 1
            else:
                j += 1
    r0, c0 = click
    start = root(first[r0] + next(k for k, (a, b) in enumerate(runs[r0]) if a <= c0 < b))
    if any(root(x) != start for x in range(len(parent))):
        return "the filled pixels are not one region connected to the click"
    return None


def render(img: Image, solution: Any = None, limit: int = 120) -> str:
    """Return the image as text (colours, filled pixels as '!'), cut to limit rows and columns."""
    out = []
    for r, row in enumerate(img.rows[:limit]):
        cells = []
        for c in range(min(img.width, limit)):
            if solution and solution["mask"][r][c] == FILLED:
                cells.append(FILLED)
            elif (r, c) == img.click:
                cells.append("*")
            else:
                v = row[c]
                cells.append(str(v) if isinstance(v, str) or 0 <= v <= 9 else "#")
        out.append(" ".join(cells))
    if img.height > limit or img.width > limit:
        out.append(f"(showing {min(img.height, limit)}x{min(img.width, limit)} of {img.height}x{img.width})")
    if solution:
        out.append(f"{solution['count']} pixel(s) filled")
    return "\n".join(out)


_PALETTE = ("#fafafa", "#90a4ae", "#a5d6a7", "#ffe082", "#ce93d8", "#80deea", "#ffab91", "#bcaaa4")


def svg(img: Image, solution: Any = None, limit: int = 200) -> str:
    """Return an SVG picture of the image (up to limit x limit pixels), the fill in red."""
    h, w = min(img.height, limit), min(img.width, limit)
    cell = max(2, min(24, 600 // max(h, w)))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w * cell}" height="{h * cell}" '
        f'viewBox="0 0 {w * cell} {h * cell}">'
    ]
    for r in range(h):
        for c in range(w):
            filled = bool(solution) and solution["mask"][r][c] == FILLED
            fill = "#e53935" if filled else _PALETTE[img.colour_at(r, c) % len(_PALETTE)]
            parts.append(
                f'<rect x="{c * cell}" y="{r * cell}" width="{cell}" height="{cell}" fill="{fill}"/>'
            )
    r0, c0 = img.click
    if r0 < h and c0 < w:
        parts.append(
            f'<circle cx="{c0 * cell + cell / 2}" cy="{r0 * cell + cell / 2}" r="{cell / 3}" fill="#000">'
            f"<title>{escape(f'click {r0},{c0}')}</title></circle>"
        )
    parts.append("</svg>")
    return "\n".join(parts)


def generate(size: str, count: int, seed: int) -> list[dict[str, Any]]:
    """Return count HxW images: background 0 with 30% noise of colours 1-3, clicked on the background."""
    try:
        h_text, _, w_text = str(size).lower().partition("x")
        height, width = int(h_text), int(w_text or h_text)
    except ValueError:
        raise ValueError(f"floodfill size must be HxW or N, not {size!r}") from None
    if height < 1 or width < 1:
        raise ValueError("floodfill size needs at least one row and one column")
    rng = random.Random(seed)
    levels = []
    for _ in range(count):
        # 70% background is above the site-percolation threshold (~59%): one big region to fill.
        rows = ["".join(rng.choices("0123", weights=(70, 10, 10, 10), k=width)) for _ in range(height)]
        r, c = rng.randrange(height), rng.randrange(width)
        rows[r] = rows[r][:c] + "0" + rows[r][c + 1 :]
        levels.append({"kind": "floodfill", "image": rows, "click": [r, c]})
    return levels


KIND = PuzzleKind(
    name="floodfill",
    parse=parse,
    canonical=canonical,
    solvers={
        "plain": solver(recursive_fill),
        "stack": solver(stack_fill),
        "scanline": solver(scanline_fill),
    },
    default="scanline",
    verify=verify,
    render=render,
    svg=svg,
    size=lambda img: img.height * img.width,
    length=lambda solution: solution["count"] if isinstance(solution, Mapping) else None,
    description="paint bucket: the pixels of the clicked colour 4-connected to the click",
    generate=generate,
    size_help="HxW or N, the image, e.g. 24x40",
    examples=(
        {
            "image": [[1, 2, 1, 1, 1, 1], [1, 2, 2, 1, 1, 1], [2, 1, 1, 2, 1, 1], [1, 1, 1, 2, 1, 1]],
            "click": [0, 4],
        },
    ),
)
