"""The Hamiltonian-path search shared by kinds that visit every vertex of a graph once.

``graph`` holds the problem and the plain depth-first searches, ``prune`` the
pruned search with its restarts and end splitting (run in C, or in its pure
Python twin ``python_search``), ``cpsat`` the hand-over to OR-Tools CP-SAT.
One-stroke levels and knight's tours both reduce to a ``HamiltonProblem``.
"""
