"""What one level costs in packsolve's pipeline, against bare Celery and GNU parallel: one module per part.

    python -m benchmarks.pipeline                     # all parts, results in benchmarks/results/pipeline.md
    python -m benchmarks.pipeline --only bare,distributed --levels 1000

- bare: how many no-op tasks/s Celery itself runs (same app factory, Redis, process count);
- distributed: how many trivial levels/s go through submit -> one worker -> database;
- local: the same on the local process pool (SQLite), and `packsolve solve` end to end;
- parallel: GNU parallel running one `packsolve solve FILE` per level;
- scaling: a CPU-bound pack on 2 worker processes against 1;
- submit: how long `packsolve submit` of a 49,158-level file takes;
- strict: packsolve against plain Celery in the steady state, and where a level's time goes.

Trivial levels are solved sudokus (one node each), made distinct by the symmetries of the
grid from the solutions in tdoku_test_puzzles.txt. Workers are real `packsolve worker`
processes. Wall seconds on a shared machine move with its load, so the load average is
printed next to each figure, and the throughput parts are run alternately --reps times,
each reported as the best of its runs.
"""
