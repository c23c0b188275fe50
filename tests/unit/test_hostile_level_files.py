"""Hostile level files: a pack from someone else cannot crash, hang, exhaust or read outside itself.

Each test is an attack a pack could carry: a number Python refuses to read, a FIFO or a device
where a file should be, a file larger than it says, a link out of the pack. Reading ends, for
each, in that level's ``invalid`` (or the file skipped, or one line for a path given), never
in a traceback, a hang, memory exhaustion or another file's text stored.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from packsolve.levels import SkippedFile, read_file, read_levels

GOOD = '{"kind": "coins", "notes": [1, 2], "target": 3}'
LONG = "9" * 5000
SECRET = "TOP-SECRET-TEXT-OUTSIDE-THE-PACK"


def packsolve(*args: str, cwd: Path, memory_mb: int = 1024) -> subprocess.CompletedProcess[str]:
    """Run the CLI with its address space capped (an unbounded read fails fast) and a time limit."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_mb * 2**20, memory_mb * 2**20))

    return subprocess.run(
        [sys.executable, "-m", "packsolve", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=cap,
    )


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    """Return the error line of a refused command, checking it is one line without a traceback."""
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr[-2000:]
    return lines[0]


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("one.json", '{"kind": "coins", "notes": [1, 2], "target": ' + LONG + "}"),
        ("list.json", "[" + GOOD + ',\n{"kind": "coins", "notes": [' + LONG + '], "target": 3}]'),
        ("lines.jsonl", GOOD + '\n{"kind": "coins", "notes": [1], "target": ' + LONG + "}\n"),
    ],
)
def test_an_integer_longer_than_python_reads_is_that_levels_invalid_and_the_pack_goes_on(
    tmp_path, name, text
):
    (tmp_path / name).write_text(text)
    (tmp_path / "z.json").write_text(GOOD.replace("3}", "2}"))
    levels = list(read_levels([tmp_path]))
    bad = [lv for lv in levels if not lv.valid]
    assert len(bad) == 1 and "digits" in bad[0].error and "line" in bad[0].error, bad
    assert sum(lv.valid for lv in levels) == len(levels) - 1 >= 1
    assert len(bad[0].error) < 400  # the number itself is not repeated in the message


def test_a_long_token_in_a_kinds_own_format_is_not_repeated_whole_in_its_message(tmp_path):
    f = tmp_path / "p.slide"
    f.write_text("1 2 3 " + LONG + "\n")
    [level] = read_levels([f])
    assert not level.valid and len(level.error) < 400


def test_a_fifo_named_on_the_command_line_is_refused_in_one_line_without_waiting(tmp_path):
    os.mkfifo(tmp_path / "levels.json")
    line = one_line_error(packsolve("check", "levels.json", cwd=tmp_path))
    assert "levels.json" in line and "FIFO" in line and "regular file" in line


def test_a_device_named_on_the_command_line_is_refused_in_one_line_without_reading_it(tmp_path):
    line = one_line_error(packsolve("check", "/dev/zero", cwd=tmp_path, memory_mb=512))
    assert "/dev/zero" in line and "character device" in line


def test_reading_a_fifo_or_a_device_directly_is_an_invalid_level_at_once(tmp_path):
    fifo = tmp_path / "x.json"
    os.mkfifo(fifo)
    # Run in a child with a time and memory bound: today's reading would hang or eat memory.
    code = (
        "import sys; from pathlib import Path; from packsolve.levels import read_file\n"
        "for p in sys.argv[1:]:\n"
        "    [lv] = read_file(Path(p), max_bytes=2**20); print(lv.error)\n"
    )

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (512 * 2**20, 512 * 2**20))

    out = subprocess.run(
        [sys.executable, "-c", code, str(fifo), "/dev/zero"],
        capture_output=True,
        text=True,
        timeout=30,
        preexec_fn=cap,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    fifo_error, zero_error = out.stdout.splitlines()
    assert "a FIFO, not a regular file" in fifo_error
    assert "a character device, not a regular file" in zero_error


def test_a_fifo_or_socket_in_a_pack_directory_is_listed_as_skipped_and_never_opened(tmp_path):
    import socket

    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "a.json").write_text(GOOD)
    os.mkfifo(pack / "b.json")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(pack / "c.json"))
    try:
        skipped: list[SkippedFile] = []
        levels = list(read_levels([pack], skipped=skipped))
    finally:
        sock.close()
    assert [lv.valid for lv in levels] == [True]
    reasons = {Path(s.path).name: s.reason for s in skipped}
    assert reasons == {"b.json": "a FIFO, not a regular file", "c.json": "a socket, not a regular file"}


def test_the_size_cap_holds_while_reading_a_file_whose_size_says_nothing(tmp_path):
    # /proc files are regular files of size 0 whatever they hold: only a cap on what is read holds.
    [level] = read_file(Path("/proc/self/status"), max_bytes=100)
    assert not level.valid and "file is more than 100 bytes, above the 100-byte cap" in level.error


def pack_with_links(tmp_path: Path) -> Path:
    """Return a pack whose links point out of it (a secret beside it) and within it."""
    (tmp_path / "secret.json").write_text(SECRET)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "level.json").write_text(GOOD)
    pack = tmp_path / "pack"
    (pack / "sub").mkdir(parents=True)
    (pack / "sub" / "real.json").write_text(GOOD.replace("3}", "2}"))
    (pack / "leak.json").symlink_to(tmp_path / "secret.json")
    (pack / "relative.json").symlink_to("../elsewhere/level.json")
    (pack / "inside.json").symlink_to("sub/real.json")
    return pack


def test_a_link_out_of_the_pack_is_refused_and_its_targets_text_is_not_stored(tmp_path):
    pack = pack_with_links(tmp_path)
    levels = {Path(lv.name).name: lv for lv in read_levels([pack])}
    for name in ("leak.json", "relative.json"):
        level = levels[name]
        assert not level.valid and "outside the pack" in level.error and "--follow-links" in level.error
        assert SECRET not in repr(level.data)
    assert levels["real.json"].valid
    # A link within the pack is read (here: the level it names, met first under the link's name).
    assert levels["inside.json"].valid and levels["inside.json"].hash == levels["real.json"].hash


def test_a_file_named_on_the_command_line_that_links_out_of_its_directory_is_refused(tmp_path):
    pack = pack_with_links(tmp_path)
    [level] = read_levels([pack / "leak.json"])
    assert not level.valid and SECRET not in repr(level.data) and "outside" in level.error


def test_follow_links_reads_links_that_leave_the_pack(tmp_path):
    pack = pack_with_links(tmp_path)
    levels = {Path(lv.name).name: lv for lv in read_levels([pack], follow_links=True)}
    assert levels["relative.json"].valid
    assert not levels["leak.json"].valid and "outside" not in levels["leak.json"].error


def test_check_shows_no_text_from_outside_the_pack_and_takes_follow_links(tmp_path):
    pack = pack_with_links(tmp_path)
    refused = packsolve("check", str(pack), cwd=tmp_path)
    assert refused.returncode == 0, refused.stderr
    assert SECRET not in refused.stdout + refused.stderr and "outside the pack" in refused.stdout
    followed = packsolve("check", "--follow-links", str(pack), cwd=tmp_path)
    assert followed.returncode == 0, followed.stderr
    assert "outside the pack" not in followed.stdout
