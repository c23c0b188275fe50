"""The packsolve click group: thin commands over the modules that do the work."""

from __future__ import annotations

import click

from packsolve import __version__
from packsolve.cli.check import check
from packsolve.cli.config import config
from packsolve.cli.group import PacksolveGroup
from packsolve.cli.kinds import check_kind, generate, kinds
from packsolve.cli.reports import report
from packsolve.cli.results import export, show, status
from packsolve.cli.run import cancel, rerun, resume, solve, submit
from packsolve.cli.runs import runs
from packsolve.cli.serve import metrics, serve
from packsolve.cli.service import db, scheduler, worker
from packsolve.cli.workers import workers


@click.group(
    cls=PacksolveGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100}
)
@click.version_option(__version__, prog_name="packsolve")
def cli() -> None:
    """Solve whole packs of puzzle levels in batch, locally or on Celery workers."""


COMMANDS = (
    *(check, solve, submit, rerun, resume, cancel, runs),  # runs
    *(worker, workers, scheduler, db, config),  # the distributed services and their settings
    *(status, report, export, show, serve, metrics),  # results
    *(kinds, check_kind, generate),  # puzzle kinds
)
for command in COMMANDS:
    cli.add_command(command)
