"""Tables for people that hold at 80 columns: rich may wrap a header or a word, never a figure or a name."""

from __future__ import annotations

from typing import Any

from packsolve.report.text import short_name


def keep_figures_whole(table: Any) -> Any:
    """Give each right-justified column of a rich table at least its widest cell's width; return it.

    Rich narrows columns to fit the terminal by wrapping their cells, digits included (`228,56` over
    `0`); with this floor it wraps the headers and the text columns instead. Call it once the rows are in.
    """
    from rich.text import Text

    for column in table.columns:
        if column.justify == "right":
            cells = [Text.from_markup(c) if isinstance(c, str) else c for c in column.cells]
            column.min_width = max([column.min_width or 0, *(c.cell_len for c in cells)])
    return table


# The narrowest a name asks for: an ellipsis and the end of a file name with its :LINE.
NAME_MIN_WIDTH = 12


class NameCell:
    """A level name in a table for people: on one line, shortened from the left to its column's width.

    Rich lays out the columns first, then renders each cell at its column's width; this cell
    shortens the name then (text.short_name), so however narrow the terminal, the name never wraps
    and its file name's end and :LINE stay whole beside the figures of its row.
    """

    def __init__(self, name: str | None, style: str = "") -> None:
        self.name = name
        self.style = style

    def __rich_measure__(self, console: Any, options: Any) -> Any:
        from rich.measure import Measurement

        full = len(short_name(self.name, 10**6))
        return Measurement(min(full, NAME_MIN_WIDTH), full)

    def __rich_console__(self, console: Any, options: Any) -> Any:
        from rich.text import Text

        yield Text(short_name(self.name, options.max_width), style=self.style, no_wrap=True, overflow="crop")


def name_cell(name: str | None, below: Any = None) -> Any:
    """Return a table cell of a level name fitted to its column (NameCell), with below under it if given."""
    if below is None:
        return NameCell(name)
    from rich.console import Group

    return Group(NameCell(name), below)
