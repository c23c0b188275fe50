"""Test-only puzzle kinds, registered through PACKSOLVE_EXTRA_KINDS (not tests of kinds)."""
