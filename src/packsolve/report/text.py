"""Text that fits a terminal: level names shortened from the left, messages cut between words."""

from __future__ import annotations

import re

# Width a message gets in a terminal table; JSON, CSV and HTML always carry it whole.
MESSAGE_WIDTH = 60
_SEPARATOR = re.compile(r"(?<=/)")


def short_name(name: str | None, width: int = 40) -> str:
    """Return a level name (a path, maybe with :LINE) that fits width, shortened from the left.

    Whole leading directories are dropped and replaced by '…/'; the file name
    itself is never cut, so a name whose last part alone is too long comes back
    as that part.
    """
    if name is None:
        return "—"
    if len(name) <= width:
        return name
    parts = _SEPARATOR.split(name)
    for i in range(1, len(parts)):
        rest = "".join(parts[i:])
        if len(rest) + 2 <= width:
            return "…/" + rest
    return "…/" + parts[-1] if len(parts) > 1 else name


def short_message(message: str | None, name: str | None = None, width: int = MESSAGE_WIDTH) -> str:
    """Return a message's first line without the level name it may start with, cut between words to width."""
    if not message:
        return ""
    text = message
    if name and text.startswith(f"{name}: "):
        text = text[len(name) + 2 :]
    text = text.strip().splitlines()[0] if text.strip() else ""
    if len(text) <= width:
        return text
    cut = text.rfind(" ", 0, width - 1)
    return text[: cut if cut > width // 2 else width - 1].rstrip(" ,;:") + "…"
