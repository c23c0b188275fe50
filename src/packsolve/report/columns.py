"""Tables for people that hold at 80 columns: rich may wrap a header or a word, never a figure."""

from __future__ import annotations

from typing import Any


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
