"""Everything the tests use that is not a test: real services, test-only kinds, level corpora."""

from __future__ import annotations
