"""Text that fits a terminal: control characters made visible, level names shortened from the left,
messages cut between words."""

from __future__ import annotations

import re

# Width a message gets in a terminal table; JSON, CSV and HTML always carry it whole.
MESSAGE_WIDTH = 60
_SEPARATOR = re.compile(r"(?<=/)")
_LINE = re.compile(r":\d+$")
# C0 and C1 controls and DEL (ESC starts a terminal's escape sequences: clear the screen, recolour,
# set the window title), and the bidirectional overrides, which reorder what a reader sees.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# The same but for line feeds and tabs, which a solver's output keeps.
_OUTPUT_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def visible(text: str) -> str:
    """Return text with every control character written out (ESC as \\x1b): a name from a level
    file shown in a terminal, a table or a CSV file can neither move the cursor nor hide a line."""
    return _CONTROL.sub(_escaped, text)


def visible_output(text: str) -> str:
    """Return a solver's output with its lines and tabs kept and every other control character written
    out, as visible() does: what a program printed cannot move a terminal's cursor or recolour it."""
    return _OUTPUT_CONTROL.sub(_escaped, text)


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def short_name(name: str | None, width: int = 40) -> str:
    """Return a level name (a path, maybe with :LINE) that fits width on one line, shortened from the left.

    Whole leading directories are dropped and replaced by '…/'; a file name that alone is too long
    loses its start to '…', so its end and its :LINE always stay whole (width is then at least
    what they take, and an ellipsis and one character).
    """
    if name is None:
        return "—"
    name = visible(name)
    if len(name) <= width:
        return name
    parts = _SEPARATOR.split(name)
    for i in range(1, len(parts)):
        rest = "".join(parts[i:])
        if len(rest) + 2 <= width:
            return "…/" + rest
    line = _LINE.search(name)
    keep = max(width - 1, len(line.group(0)) + 1 if line else 1)
    return "…" + name[-keep:]


def short_message(message: str | None, name: str | None = None, width: int = MESSAGE_WIDTH) -> str:
    """Return a message's first line without the level name it may start with, cut between words to width."""
    if not message:
        return ""
    text = message
    if name and text.startswith(f"{name}: "):
        text = text[len(name) + 2 :]
    text = visible(text.strip().splitlines()[0]) if text.strip() else ""
    if len(text) <= width:
        return text
    cut = text.rfind(" ", 0, width - 1)
    return text[: cut if cut > width // 2 else width - 1].rstrip(" ,;:") + "…"
