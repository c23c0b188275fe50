"""Persistence: SQLAlchemy models, engines, Alembic migrations and the queries the CLI runs."""
