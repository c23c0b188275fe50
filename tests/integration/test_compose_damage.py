"""Damage to the containers of the compose stack mid-run: every level still gets exactly one final result.

The stack is the one `docker-compose up` brought up for the bring-up test (three worker containers,
a 4 s lease and a 1 s scheduler pass from tests/compose/ci.override.yml); each scenario submits its
own run and is judged by the cluster scenarios' audit (tests/support/cluster_audit.py).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.cluster_audit import Figures, install_audit, table
from tests.support.compose_damage import SCENARIOS, run_damage
from tests.support.compose_stack import Stack

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
FIGURES: list[Figures] = []


@pytest.fixture(scope="module")
def audited(compose_up: Stack) -> Iterator[Stack]:
    """The stack with the audit triggers on its database; the damage table printed at the end."""
    install_audit(compose_up.pg_url)
    yield compose_up
    print("\n" + table(FIGURES))
    for f in FIGURES:
        for note in f.notes:
            print(f"- {f.scenario}: {note}")


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_damage_leaves_exactly_one_final_result_per_level(audited, scenario, tmp_path):
    figures = run_damage(audited, scenario, tmp_path)
    FIGURES.append(figures)
    assert not figures.violations, table([figures]) + "\n" + "\n".join(figures.notes)
    # The stack as the next scenario expects it: three live workers.
    audited.compose("up", "-d", "--no-recreate", "--scale", "worker=3", "worker", timeout=300)
    audited.wait_ready(3)
