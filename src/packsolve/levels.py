"""Reading levels from files, directories and packs; a level's name and identity."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import stat
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packsolve.errors import LevelError, UnknownKind
from packsolve.puzzles import KINDS, KindOrigin, get_kind

# Files larger than this are refused as one invalid level instead of being read.
DEFAULT_MAX_BYTES = 20 * 1024 * 1024
# An invalid level's message is cut to this: a hostile file must not fill a report with one token.
MESSAGE_CHARS = 300
# What a kind's parser (or a plug-in's) may raise on malformed input: that level's invalid, never a crash.
PARSE_FAILURES = (TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError, RecursionError)
JSON_SUFFIXES = (".json",)
# A level id a native format gives (a .slide line's first token) names the level FILE:ID up to this.
MAX_ID = 64
JSONL_SUFFIXES = (".jsonl", ".ndjson")


@dataclass(frozen=True)
class SkippedFile:
    """A file under a pack directory that holds no level to run, and why (unknown extension, empty)."""

    path: str
    reason: str


@dataclass(frozen=True)
class Level:
    """One level as met in a pack: its name, kind, canonical JSON and identity.

    A level that could not be parsed still is a Level, with ``error`` set; it
    becomes an attempt with status ``invalid`` so the rest of the pack runs.
    """

    name: str
    kind: str
    data: Mapping[str, Any]
    hash: str
    size: int = 0
    error: str | None = None
    # canonical_json(data) when reading made it (for the hash): stored as is, not made again.
    text: str | None = field(default=None, repr=False, compare=False)

    @property
    def valid(self) -> bool:
        return self.error is None


def canonical_json(obj: Any) -> str:
    """Return the one JSON spelling of obj (sorted keys, no spaces) used for hashing."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def level_hash(data: Mapping[str, Any]) -> str:
    return _digest(canonical_json(data))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def make_level(name: str, raw: Any, kind: str | None = None) -> Level:
    """Parse one level JSON object into a Level; a failure gives a Level with error set.

    kind is the kind of a level whose JSON names none (--kind); a level that names
    another kind keeps it (the planner leaves such levels out).
    """
    try:
        if not isinstance(raw, Mapping):
            raise LevelError(f"a level must be a JSON object, not {_json_type(raw)}")
        kind_name = raw.get("kind", kind)
        if kind_name is None:
            raise LevelError("the level has no 'kind' field (or pass --kind)")
        if not isinstance(kind_name, str):
            raise LevelError(f"'kind' must be a string, not {_json_type(kind_name)}")
        try:
            puzzle = get_kind(kind_name)
        except UnknownKind as exc:
            raise LevelError(str(exc)) from None
        value = puzzle.parse(raw)
        data = {**puzzle.canonical(value), "kind": puzzle.name}
        text = canonical_json(data)
        return Level(name, puzzle.name, data, _digest(text), puzzle.size(value), text=text)
    except LevelError as exc:
        return invalid_level(name, raw, str(exc), kind)
    except RecursionError:
        return invalid_level(name, raw, "level JSON is nested too deeply", kind)
    except PARSE_FAILURES as exc:
        # A parser that let a malformed field through still must not crash the pack.
        return invalid_level(name, raw, f"malformed level ({type(exc).__name__}: {exc})", kind)


def invalid_level(name: str, raw: Any, message: str, kind: str | None = None) -> Level:
    """Return a Level carrying the error; its identity is the hash of what was read."""
    try:
        text = raw if isinstance(raw, str) else canonical_json(raw)
    except (TypeError, ValueError, RecursionError):
        text = repr(raw)
    named = raw.get("kind") if isinstance(raw, Mapping) else None
    kind_name = named if isinstance(named, str) and named else kind
    if not isinstance(kind_name, str):
        kind_name = "unknown"
    digest = hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()
    excerpt = text if len(text) <= 2000 else text[:2000] + "…"
    if len(message) > MESSAGE_CHARS:
        message = message[:MESSAGE_CHARS] + "…"
    return Level(name, kind_name[:64], {"raw": excerpt}, digest, 0, f"{name}: {message}")


def read_levels(
    paths: Iterable[str | os.PathLike[str]],
    kind: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    skipped: list[SkippedFile] | None = None,
    follow_links: bool = False,
) -> Iterator[Level]:
    """Yield every level under paths in order: files as given, directories sorted recursively.

    In directories, hidden files and directories are passed over; files of no
    level format, empty files and what is not a regular file (a FIFO, a device, a
    socket) are passed over too and, if skipped is given, appended to it with the
    reason. A path that does not exist yields an invalid level, and so does a link
    that leads out of its pack (the directory given, or a named file's directory)
    unless follow_links.
    """
    for path in paths:
        p = Path(path)
        if p.is_dir():
            root = p.resolve()
            for f in _files_under(p):
                reason = _skip_reason(f)
                if reason is None:
                    yield from read_file(f, kind, max_bytes, None if follow_links else root)
                elif skipped is not None:
                    skipped.append(SkippedFile(str(f), reason))
        elif p.exists() or p.is_symlink():
            if p.is_file() and _is_empty(p):
                if skipped is not None:
                    skipped.append(SkippedFile(str(p), "empty"))
                continue
            yield from read_file(p, kind, max_bytes, None if follow_links else p.absolute().parent.resolve())
        else:
            yield invalid_level(str(p), str(p), "no such file or directory", kind)


def level_file_suffixes() -> list[str]:
    """Return every suffix a level file may have, sorted (JSON, JSON lines and the kinds' own)."""
    return sorted({*JSON_SUFFIXES, *JSONL_SUFFIXES, *level_suffixes()})


def is_level_file(path: Path) -> bool:
    """Return True if path's suffix is that of a level file (whatever its content)."""
    suffix = path.suffix.lower()
    return suffix in JSON_SUFFIXES or suffix in JSONL_SUFFIXES or suffix in level_suffixes()


def _files_under(root: Path) -> list[Path]:
    """Return the files under root, sorted, leaving out hidden ones and those in hidden directories.

    Links to directories are not descended (a link may loop); FIFOs, devices and sockets are
    returned, for _skip_reason to say why they are not read.
    """
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        files += [Path(dirpath, f) for f in filenames if not f.startswith(".")]
    return sorted(files)


def _skip_reason(path: Path) -> str | None:
    """Return why a file in a pack directory is not read (None: it is read)."""
    if not is_level_file(path):
        return f"not a level file ({path.suffix or 'no extension'}){broken_kinds_note()}"
    try:
        mode = path.stat().st_mode
    except OSError:
        return "a link to nothing" if path.is_symlink() else None  # else read_file says what is wrong
    if not stat.S_ISREG(mode):
        return f"{file_type(mode)}, not a regular file"
    if _is_empty(path):
        return "empty"
    return None


def broken_kinds_note() -> str:
    """Return '; ' and why each installed plug-in kind failed to load, or '' when none did.

    A broken plug-in's file formats are unknown, so its files look like no level file at all:
    saying that the plug-in failed (and why) is what lets the user fix the right thing.
    """
    broken = [
        source.error
        for source in KINDS.sources()
        if source.error and source.origin is not KindOrigin.BUILT_IN
    ]
    return "".join(f"; {why}" for why in broken)


def file_type(mode: int) -> str:
    """Return what a file of this st_mode is, in words ('a FIFO', 'a character device')."""
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "a regular file" if stat.S_ISREG(mode) else "a special file"


def _is_empty(path: Path) -> bool:
    """Return True if the regular file holds nothing but white space (small files only are read to tell)."""
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):
            return False
        return st.st_size == 0 or (st.st_size < 4096 and not path.read_bytes().strip())
    except OSError:
        return False


@functools.cache
def level_suffixes() -> dict[str, str]:
    """Return {suffix: kind name} for every file format of its own that an available kind reads."""
    return {suffix: name for name, k in KINDS.items() for suffix in k.formats}


def read_file(
    path: Path, kind: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES, inside: Path | None = None
) -> Iterator[Level]:
    """Yield the levels of one file; unreadable content yields invalid Levels, never raises.

    With inside, a file whose real path (links followed) is not under that directory is refused.
    """
    name = str(path)
    try:
        data = read_bytes(path, max_bytes, inside)
        text = data.decode("utf-8")
    except LevelError as exc:
        yield invalid_level(name, name, exc.message, kind)
        return
    except UnicodeDecodeError as exc:
        yield invalid_level(name, name, f"not UTF-8 text (byte {exc.start})", kind)
        return
    except OSError as exc:
        yield invalid_level(name, name, f"cannot read: {exc.strerror}", kind)
        return
    yield from read_text(name, text, path.suffix.lower(), kind)


def read_bytes(path: Path, max_bytes: int, inside: Path | None = None) -> bytes:
    """Return the bytes of the regular file path, at most max_bytes; raise LevelError or OSError if not.

    The cap holds while reading, whatever the file's size says (a /proc file says 0, a file
    may grow); what is not a regular file is refused before it is opened, and again once
    open (it may have been swapped), so a FIFO never blocks and a device is never read.
    """
    real = Path(os.path.realpath(path))
    if inside is not None and not real.is_relative_to(inside):
        raise LevelError(f"a link to a file outside the pack ({inside}): pass --follow-links to read it")
    _check_regular(os.stat(real).st_mode)
    # O_NONBLOCK: should a FIFO be swapped in after the check, opening it does not wait for a writer.
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(real, flags)
    try:
        st = os.fstat(fd)
        _check_regular(st.st_mode)
        if st.st_size > max_bytes:
            raise _too_big(f"{st.st_size} bytes ({st.st_size / 2**20:.1f} MB)", max_bytes)
        chunks, total = [], 0
        while chunk := os.read(fd, min(1 << 20, max_bytes + 1 - total)):
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:
                raise _too_big(f"more than {max_bytes} bytes", max_bytes)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _check_regular(mode: int) -> None:
    if not stat.S_ISREG(mode):
        raise LevelError(f"{file_type(mode)}, not a regular file: only regular files are read as levels")


def _too_big(size: str, max_bytes: int) -> LevelError:
    cap = f"the {max_bytes}-byte cap ({max_bytes / 2**20:g} MB)"
    return LevelError(f"file is {size}, above {cap}; --max-file-mb raises it")


def read_text(name: str, text: str, suffix: str, kind: str | None = None) -> Iterator[Level]:
    """Yield the levels of a file's text, its format chosen by suffix."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if suffix in JSONL_SUFFIXES:
        yield from _read_jsonl(name, text, kind)
        return
    formats = level_suffixes()
    if suffix in formats and suffix not in JSON_SUFFIXES:
        yield from _read_format(name, text, formats[suffix], suffix)
        return
    yield from _read_json(name, text, kind)


def _read_json(name: str, text: str, kind: str | None) -> Iterator[Level]:
    try:
        items = list(_json_items(text))
    except LevelError as exc:
        yield invalid_level(name, text, f"bad JSON at {exc}", kind)
        return
    except RecursionError:
        yield invalid_level(name, text, "JSON is nested too deeply", kind)
        return
    if len(items) == 1 and items[0][0] == 0:
        yield make_level(name, items[0][1], kind)
        return
    if not items:
        yield invalid_level(name, text, "the file holds an empty list of levels", kind)
    # Levels share a line in a list written on one line: the list index tells them apart.
    crowded = {line for line, n in Counter(line for line, _ in items).items() if n > 1}
    for index, (line, item) in enumerate(items):
        suffix = f"{line}[{index}]" if line in crowded else str(line)
        yield make_level(f"{name}:{suffix}", item, kind)


def _json_items(text: str) -> Iterator[tuple[int, Any]]:
    """Yield (line, value) for each element of a top-level JSON list, or (0, value) for one object.

    Line numbers let a level inside a list be named FILE:LINE like any other.
    """
    decoder = json.JSONDecoder()
    i = _skip_ws(text, 0)
    if i < len(text) and text[i] == "[":
        i = _skip_ws(text, i + 1)
        if i < len(text) and text[i] == "]":
            _expect_end(text, i + 1)
            return
        while True:
            line = text.count("\n", 0, i) + 1
            value, i = _decode(decoder, text, i)
            yield line, value
            i = _skip_ws(text, i)
            if i < len(text) and text[i] == ",":
                i = _skip_ws(text, i + 1)
                continue
            if i < len(text) and text[i] == "]":
                _expect_end(text, i + 1)
                return
            raise _position_error(text, i, "expected ',' or ']'")
    value, i = _decode(decoder, text, i)
    _expect_end(text, i)
    yield 0, value


def _decode(decoder: json.JSONDecoder, text: str, i: int) -> tuple[Any, int]:
    try:
        return decoder.raw_decode(text, i)
    except json.JSONDecodeError as exc:
        raise LevelError(exc.msg, exc.lineno, exc.colno) from None
    except ValueError:
        raise _long_number(text, i) from None


def _long_number(text: str, start: int = 0) -> LevelError:
    """Return the error of a JSON number longer than Python converts (the only other ValueError of json)."""
    limit = sys.get_int_max_str_digits()
    message = f"a number of more than {limit} digits, more than a level may hold"
    found = re.compile(rf"\d{{{limit + 1},}}").search(text, start)
    return _position_error(text, found.start(), message) if found else LevelError(message)


def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def _expect_end(text: str, i: int) -> None:
    i = _skip_ws(text, i)
    if i != len(text):
        raise _position_error(text, i, "extra data after the JSON value")


def _position_error(text: str, i: int, message: str) -> LevelError:
    line = text.count("\n", 0, i) + 1
    column = i - (text.rfind("\n", 0, i) + 1) + 1
    return LevelError(message, line, column)


def _read_jsonl(name: str, text: str, kind: str | None) -> Iterator[Level]:
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"{name}:{number}"
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            yield invalid_level(where, line, f"bad JSON at column {exc.colno}: {exc.msg}", kind)
            continue
        except ValueError:
            long = _long_number(line)
            yield invalid_level(where, line, f"bad JSON at column {long.column}: {long.message}", kind)
            continue
        except RecursionError:
            yield invalid_level(where, line, "JSON is nested too deeply", kind)
            continue
        yield make_level(where, raw, kind)


def _read_format(name: str, text: str, format_kind: str, suffix: str) -> Iterator[Level]:
    """Yield the levels of a file in a kind's own format; a bad file or line yields invalid Levels.

    They are of format_kind whatever kind was asked for: the planner leaves out levels of other kinds.
    """
    reader = get_kind(format_kind).formats[suffix]
    try:
        entries = list(reader(text))
    except LevelError as exc:
        yield invalid_level(name, text, str(exc), format_kind)
        return
    except PARSE_FAILURES as exc:  # a reader (a plug-in's, say) that let malformed text through
        yield invalid_level(name, text, f"malformed file ({type(exc).__name__}: {exc})", format_kind)
        return
    if not entries:
        yield invalid_level(name, text, f"no {format_kind} level found in the file", format_kind)
        return
    single = len(entries) == 1
    ids: set[str] = set()
    for line, raw in entries:
        where = name if single else f"{name}:{line}"
        if isinstance(raw, LevelError):
            if raw.line is None:
                raw.line = line
            yield invalid_level(where, f"{name}:{line}", str(raw), format_kind)
            continue
        level_id = raw.get("id") if isinstance(raw, Mapping) else None
        if isinstance(level_id, str) and level_id and level_id not in ids and len(level_id) <= MAX_ID:
            ids.add(level_id)  # a repeated id keeps FILE:LINE: a name must find one level
            where = f"{name}:{level_id}"
        yield make_level(where, {**raw, "kind": format_kind}, format_kind)


def _json_type(value: Any) -> str:
    return {dict: "object", list: "list", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), type(value).__name__
    )
