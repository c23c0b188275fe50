"""The benchmarks: one module per question, run from the repository root as ``python -m benchmarks.NAME``.

Each module's docstring says what it measures and how to run it; ``--help`` lists its options.
What they share (servers, the public data sets, results tables, the machine line, the command
line) is in ``benchmarks.harness``. Results go to ``benchmarks/results/``; docs/benchmarks.md
publishes them with the command that made each.
"""
