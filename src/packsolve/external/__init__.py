"""External solver programs: a heuristic that is a program in any language, declared in TOML.

- declaration.py: reading ``[solvers.NAME]`` declarations and the references tasks carry (pure);
- resolution.py: finding the declared program on this machine, with its SHA-256 (pure);
- provenance.py: recording which binary each worker ran for a run (through the database layer).

Local runs and distributed ones use the same three; running a program for one attempt is the
execution layer's (execution/programs.py).
"""
