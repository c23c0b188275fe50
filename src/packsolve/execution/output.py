"""What an attempt keeps of a program's own output: the head and the tail, a marker of what was cut.

A program may write gigabytes on standard error. Its reader (spawn.py) holds at most ``Kept``'s
head and tail while it reads, so its memory stays bounded whatever the program writes; once the
program has ended, ``kept_texts`` shares the attempt's cap (``output_keep``, bytes in all) between
standard output and standard error and turns each into text: its head, a line saying how many
bytes were cut in the middle, its tail. The text is what the database stores and reports show.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from packsolve.settings import DEFAULT_OUTPUT_KEEP

__all__ = ["DEFAULT_OUTPUT_KEEP", "Kept", "kept_log", "kept_texts", "of_bytes"]
# The start of standard error is always kept this far: an error's message quotes it (answer.py).
QUOTE_BYTES = 8192
CUT = "\n[… {n:,} bytes cut …]\n"


@dataclass
class Kept:
    """A stream read chunk by chunk keeping only its first head_max and last tail_max bytes, and its size."""

    head_max: int
    tail_max: int
    head: bytearray = field(default_factory=bytearray)
    tail: bytearray = field(default_factory=bytearray)
    total: int = 0  # bytes the stream carried, kept or not

    @classmethod
    def capped(cls, keep: int) -> Kept:
        """Return a keeper for a cap of keep bytes (the head at least QUOTE_BYTES, for messages)."""
        return cls(max(keep - keep // 2, QUOTE_BYTES), keep // 2)

    def add(self, chunk: bytes) -> None:
        """Take the next chunk: into the head while it has room, the rest into the tail (its end kept)."""
        self.total += len(chunk)
        room = self.head_max - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if not chunk or self.tail_max <= 0:
            return
        if len(chunk) >= self.tail_max:
            self.tail[:] = chunk[-self.tail_max :]
        else:
            self.tail += chunk
            if len(self.tail) > self.tail_max:
                del self.tail[: len(self.tail) - self.tail_max]

    def start(self) -> bytes:
        """Return the start of the stream as kept (the head)."""
        return bytes(self.head)

    def text(self, allowance: int) -> str:
        """Return at most allowance bytes of the stream as text: head, the cut marker, tail ("" for none)."""
        if allowance <= 0 or self.total == 0:
            return ""
        whole = self.head + self.tail
        if self.total <= allowance and len(whole) == self.total:
            return _decoded(bytes(whole))
        first = min(allowance - allowance // 2, len(self.head))
        last = min(allowance - first, len(self.tail) + len(self.head) - first)
        # The last bytes: from the tail, or the end of the head if the tail holds fewer.
        end = bytes(whole[len(whole) - last :]) if last > 0 else b""
        cut = self.total - first - last
        return _decoded(bytes(self.head[:first])) + CUT.format(n=cut) + _decoded(end)


def of_bytes(data: bytes, keep: int) -> Kept:
    """Return data kept as a stream read under a cap of keep bytes."""
    kept = Kept.capped(keep)
    kept.add(data)
    return kept


def allowances(sizes: tuple[int, int], keep: int) -> tuple[int, int]:
    """Return how many bytes of each of two streams of these sizes fit a cap of keep bytes in all.

    A stream smaller than its half is kept whole; the other gets the rest.
    """
    a, b = sizes
    if a + b <= keep:
        return a, b
    half = keep // 2
    if a <= half:
        return a, keep - a
    if b <= keep - half:
        return keep - b, b
    return half, keep - half


def kept_texts(stdout: Kept | None, stderr: Kept, keep: int) -> tuple[str, str]:
    """Return (stdout text, stderr text) sharing a cap of keep bytes; stdout None: none kept."""
    out_size = 0 if stdout is None else stdout.total
    a, b = allowances((out_size, stderr.total), keep)
    return ("" if stdout is None else stdout.text(a)), stderr.text(b)


def _decoded(data: bytes) -> str:
    # A cut may split a character: replaced, like any byte that is not UTF-8. PostgreSQL's text holds
    # no NUL character: one is shown as the replacement character too.
    return data.decode("utf-8", "replace").replace("\x00", "\ufffd")


def kept_log(stdout: str, stderr: str, keep: int) -> tuple[str, str]:
    """Return a built-in solver's log texts kept as a program's output is (head, cut marker, tail)."""
    if not stdout and not stderr:
        return "", ""
    out = of_bytes(stdout.encode("utf-8", "replace"), keep) if stdout else None
    return kept_texts(out, of_bytes(stderr.encode("utf-8", "replace"), keep), keep)
