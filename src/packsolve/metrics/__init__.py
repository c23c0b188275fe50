"""Prometheus metrics of a deployment, read from its database and broker on each scrape (collector)."""
