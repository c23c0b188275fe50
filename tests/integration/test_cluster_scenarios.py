"""The network scenarios on a cluster of namespaces (freeze, partition, kill...), each on Redis and RabbitMQ.

Each test runs one scenario (tests/support/cluster_scenarios.py) on three worker hosts with a
scheduler on the server host, then asserts every invariant at once: exactly one final result
per level, none lost, none duplicated (the audit trigger saw no final row change and no result
written over another worker's claim), the run stamped finished only after its last result, and
no attempt running past its deadline plus the grace. The figures are printed (pytest -s) in the
closing table's format; `python -m benchmarks.cluster_scenarios` prints the whole table.
"""

from __future__ import annotations

import pytest

from tests.support.cluster_audit import table
from tests.support.cluster_scenarios import run_scenario

pytestmark = [pytest.mark.netns, pytest.mark.slow]

BROKERS = [
    pytest.param("redis", id="redis"),
    pytest.param("rabbitmq", id="rabbitmq", marks=pytest.mark.rabbitmq),
]


def check(cluster, scenario: str, broker: str) -> None:
    figures = run_scenario(cluster, scenario, broker)
    print("\n" + table([figures]) + "".join(f"\n  {note}" for note in figures.notes))
    assert not figures.violations, f"{scenario} on {broker}: " + "; ".join(figures.violations)


@pytest.mark.parametrize("broker", BROKERS)
def test_a_worker_host_partitioned_longer_than_the_grace_then_healed_leaves_one_final_result_per_level(
    netns_cluster, broker
):
    """Its attempts are taken over after the grace; whatever it sends once healed changes no result."""
    check(netns_cluster, "partition-long", broker)


@pytest.mark.parametrize("broker", BROKERS)
def test_a_worker_host_partitioned_shorter_than_the_grace_leaves_one_final_result_per_level(
    netns_cluster, broker
):
    """A blip shorter than the grace: the worker carries on and its results land once."""
    check(netns_cluster, "partition-short", broker)


@pytest.mark.parametrize("broker", BROKERS)
def test_200_ms_latency_and_5_percent_loss_on_every_worker_link_all_run_leave_one_final_result_per_level(
    netns_cluster, broker
):
    """Slow, lossy links all run long: the run still completes, each level once."""
    check(netns_cluster, "latency-loss", broker)


@pytest.mark.parametrize("broker", BROKERS)
def test_a_client_cut_off_right_after_submit_finds_its_run_complete_once_back(netns_cluster, broker):
    """The run needs nothing from the client after submit; `status` from it shows the run finished."""
    check(netns_cluster, "client-cut", broker)


@pytest.mark.parametrize("broker", BROKERS)
def test_postgres_crashing_and_restarting_mid_run_leaves_one_final_result_per_level(netns_cluster, broker):
    """Workers and the scheduler ride out the database's restart; nothing is lost or written twice."""
    check(netns_cluster, "postgres-restart", broker)


@pytest.mark.parametrize("broker", BROKERS)
def test_a_worker_host_frozen_and_thawed_after_its_attempts_were_taken_over_changes_no_result(
    netns_cluster, broker
):
    """SIGSTOP on the host's whole process tree past the grace: once thawed, its stale results are refused."""
    check(netns_cluster, "freeze", broker)


@pytest.mark.parametrize("broker", BROKERS)
def test_a_worker_host_frozen_in_a_run_without_time_limit_has_its_attempts_taken_over_by_its_lease(
    netns_cluster, broker
):
    """No deadline to pass: only the lease tells the worker is gone; its attempts move within 45 s."""
    check(netns_cluster, "freeze-no-limit", broker)
