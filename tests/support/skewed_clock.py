"""Run the packsolve CLI with its clock offset: `python -m tests.support.skewed_clock SECONDS ARGS...`.

The test hook is packsolve.db.models.CLOCK_OFFSET, added to every time packsolve reads from its one
clock function (utcnow): a worker or a submitter on a machine whose clock is off by SECONDS.
"""

from __future__ import annotations

import sys
from datetime import timedelta


def main() -> None:
    from packsolve.db import models

    models.CLOCK_OFFSET = timedelta(seconds=float(sys.argv[1]))
    from packsolve.cli import main as cli

    sys.argv = ["packsolve", *sys.argv[2:]]
    cli()


if __name__ == "__main__":
    main()
