"""A program's peak memory is recorded even when sampling misses it (reached just before it exits)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

# In a fresh interpreter (its own high-water mark small, its record of reaped children empty), with
# sampling slowed to once at the start: only the kernel's record of the reaped program can see a
# 200 MB peak the program reaches after that first sample and exits right after.
SCRIPT = textwrap.dedent(
    """
    import json, sys
    from packsolve.execution import spawn
    from packsolve.execution.spec import Limits

    spawn.POLL_YOUNG_S = spawn.POLL_FREE_S = spawn.POLL_LIMITED_S = 60.0
    program = "import time; time.sleep(0.3); blob = bytearray(200 * 2**20); print(len(blob))"
    first = spawn.run(spawn.Command([sys.executable, "-c", program], ".", {}), Limits(time_limit=30))
    small = spawn.run(spawn.Command([sys.executable, "-c", "print(1)"], ".", {}), Limits(time_limit=30))
    print(json.dumps([first.stats.peak_rss_mb, first.stdout.decode(), small.stats.peak_rss_mb]))
    """
)


def test_a_peak_reached_between_samples_just_before_exit_is_recorded():
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60, check=True
    )
    first, printed, small = json.loads(out.stdout)
    assert printed.strip() == str(200 * 2**20)
    assert first >= 200, f"peak {first:.0f} MB: the program's 200 MB were missed"
    # The record only ever grows: a later, smaller program does not inherit the first one's peak.
    assert small < 100, f"a small program recorded {small:.0f} MB, the earlier program's peak"
