"""Persistence: models, engines and migrations, and the queries split by job.

runs (create, find, cancel, finish a run), attempts (the worker's claims and results),
reconcile (the scheduler's stale attempts), history (a level's past across runs);
tables holds what they share.
"""
