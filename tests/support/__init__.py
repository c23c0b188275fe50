"""Everything the tests use that is not a test: real services, test-only kinds, corpora and data."""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).parent / "data"
