"""Reports on runs: summaries, exports, tables and plots, all computed from the database."""
