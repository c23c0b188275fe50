"""`packsolve serve`: the live web dashboard, a layer beside cli/ over runs.py, report/ and db/."""
