"""The read model: what reports and the dashboard show of runs, computed from the write model (db).

A run's counts (run_figures, kept by triggers), its medians and peaks, failure groups, level vector,
compare pairs and per-level stats live here, with the one definition of PAR-2 (par2.py). What is
kept of a finished run is kept in one table, run_snapshots (snapshots.py), under one staleness rule:
a snapshot holds while its run's finished_at equals its stamp. Snapshots are made off the write
path: by the scheduler each pass, after a local solve, or by their first reader; never while a
run is being stamped finished.
"""
