"""packsolve: solve whole packs of puzzle levels in batch."""

from __future__ import annotations

__version__ = "0.1.0"
