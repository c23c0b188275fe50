"""What an attempt keeps of a solver's own output: head and tail within the cap, the cut counted."""

from __future__ import annotations

import re

import pytest

from packsolve.execution.output import QUOTE_BYTES, Kept, allowances, kept_log, kept_texts, of_bytes
from packsolve.settings import DEFAULT_OUTPUT_KEEP, SettingsError, resolve

CUT = re.compile(r"\n\[… ([\d,]+) bytes cut …\]\n")


def numbered(n: int) -> bytes:
    return b"".join(b"%06d\n" % i for i in range(n))


def test_a_stream_within_the_cap_is_kept_whole():
    data = numbered(100)
    assert of_bytes(data, 4096).text(4096) == data.decode()


@pytest.mark.parametrize("chunk", [1, 7, 4096, 10**6])
def test_a_long_stream_keeps_its_head_and_tail_and_counts_the_bytes_cut_however_it_arrives(chunk):
    data = numbered(200_000)  # 1.4 MB
    kept = Kept.capped(1000)
    for i in range(0, len(data), chunk):
        kept.add(data[i : i + chunk])
    text = kept.text(1000)
    head, cut, tail = CUT.split(text)
    assert data.startswith(head.encode()) and data.endswith(tail.encode())
    assert len(head) + len(tail) == 1000 and int(cut.replace(",", "")) == len(data) - 1000
    assert kept.total == len(data)
    # Held while reading: the head and the tail, never more.
    assert len(kept.head) + len(kept.tail) <= QUOTE_BYTES + 500


def test_two_streams_share_the_cap_a_short_one_kept_whole():
    assert allowances((100, 10**6), 1000) == (100, 900)
    assert allowances((10**6, 10**6), 1000) == (500, 500)
    assert allowances((300, 400), 1000) == (300, 400)
    out, err = kept_texts(of_bytes(b"partial\n", 1000), of_bytes(numbered(10_000), 1000), 1000)
    assert out == "partial\n" and len(CUT.sub("", err)) == 1000 - len("partial\n")


def test_no_stdout_and_a_cap_of_zero_keep_nothing():
    assert kept_texts(None, of_bytes(b"x" * 100, 0), 0) == ("", "")
    # The start of stderr is still there for an error's message.
    assert of_bytes(b"boom", 0).start() == b"boom"


def test_bytes_that_are_not_text_are_replaced_never_a_nul_for_postgresql():
    text = of_bytes(b"a\x00b\xff\xfec", 100).text(100)
    assert "\x00" not in text and text.startswith("a") and text.endswith("c")


def test_a_built_in_solvers_log_lines_are_kept_the_same_way():
    out, err = kept_log("", "line\n" * 10_000, 100)
    assert out == "" and CUT.search(err) and err.startswith("line\n") and err.endswith("line\n")
    assert kept_log("", "", 100) == ("", "")


def test_the_cap_is_a_setting_in_bytes_or_with_a_unit_and_a_bad_one_says_what_works():
    assert resolve(environ={}, path=None).output_keep == DEFAULT_OUTPUT_KEEP == 65536
    assert resolve(environ={"PACKSOLVE_OUTPUT_KEEP": "1MiB"}, path=None).output_keep == 2**20
    assert resolve(environ={"PACKSOLVE_OUTPUT_KEEP": "0"}, path=None).output_keep == 0
    with pytest.raises(SettingsError, match=r"PACKSOLVE_OUTPUT_KEEP='lots' must be a size .* 64KiB"):
        resolve(environ={"PACKSOLVE_OUTPUT_KEEP": "lots"}, path=None)
    with pytest.raises(SettingsError, match="to 16 MiB"):
        resolve(environ={"PACKSOLVE_OUTPUT_KEEP": "1GiB"}, path=None)
