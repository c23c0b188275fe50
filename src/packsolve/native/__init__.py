"""C accelerators for the hot loops of some solvers; one extension module per .c file here."""
