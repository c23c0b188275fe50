"""`python -m packsolve` is the packsolve command."""

from packsolve.cli import main

main()
