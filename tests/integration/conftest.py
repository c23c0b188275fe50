"""Fixtures of the integration tests that run the test suite's external solver programs directly."""

from __future__ import annotations

import pytest

from packsolve.external.declaration import ExternalSolver, load_solvers
from tests.support.programs import toml_for, write_programs


@pytest.fixture(scope="module")
def directory(tmp_path_factory):
    """The programs (tests.support.programs), and where those that leave processes behind write their pids."""
    return write_programs(tmp_path_factory.mktemp("programs"))


@pytest.fixture(scope="module")
def programs(directory) -> dict[str, ExternalSolver]:
    """Each program declared as a solver of the coins kind, by its name."""
    return load_solvers(toml_for(directory))
