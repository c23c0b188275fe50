"""What the benchmarks share: servers, public data, results tables, the machine line, the command line.

- ``servers``: a redis-server of a benchmark's own, a throwaway PostgreSQL database, a free port;
- ``benchmarks.public_data``: where the public data sets are (``PACKSOLVE_BENCHMARK_DATA``);
- ``report``: the results folder, Markdown tables, writing a result and printing it;
- ``machine``: the line that says on what, when and under which load a figure was measured;
- ``cli``: the argument parser every benchmark starts from (its docstring is its ``--help``);
- ``commands``: the packsolve command line run as a child, timed (wall and CPU seconds).
"""

from benchmarks.harness.cli import parser
from benchmarks.harness.commands import PACKSOLVE, run_packsolve
from benchmarks.harness.machine import cpu_model, load, machine, machine_line, utc_now
from benchmarks.harness.report import RESULTS, ROOT, markdown_table, publish
from benchmarks.harness.servers import free_port, pg_database, redis_server, servers
from benchmarks.public_data import public_data

__all__ = [
    "PACKSOLVE",
    "RESULTS",
    "ROOT",
    "cpu_model",
    "free_port",
    "load",
    "machine",
    "machine_line",
    "markdown_table",
    "parser",
    "pg_database",
    "public_data",
    "publish",
    "redis_server",
    "run_packsolve",
    "servers",
    "utc_now",
]
