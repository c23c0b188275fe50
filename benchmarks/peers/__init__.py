"""The peers the benchmarks compare packsolve against, each a small function around another solver."""
