"""Deployment files: docker-compose.yml checked by `docker-compose config`, then brought up for real.

The config tests need only Debian's `docker-compose`. The bring-up starts the tests' own dockerd
(tests/support/docker_engine.py) with stand-in base images, runs `docker-compose up -d --build
--scale worker=3`, and solves packs submitted from the host and through `docker-compose run --rm
cli`. Under CI=true a missing tool fails the tests (CI installs them); elsewhere they skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
import redis
from click.testing import CliRunner

from packsolve.cli import cli
from tests.support.chaos_pack import write_pack
from tests.support.compose_stack import SECRETS, flower_get, secret_values
from tests.support.services import IN_CI, run_cli
from tests.support.waiting import wait_for, wait_until

ROOT = Path(__file__).resolve().parents[2]
SERVICES = {"redis", "postgres", "migrate", "worker", "scheduler", "flower", "cli", "prometheus", "metrics"}


@pytest.fixture(scope="module")
def compose() -> str:
    binary = shutil.which("docker-compose")
    if binary is None:
        message = "docker-compose not installed (apt-get install docker-compose)"
        if IN_CI:
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return binary


def run_compose(
    compose: str, path: Path, *args: str, variables: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    # A clean environment with only the required secrets: the file's ${VAR:-default}s do the rest.
    # An empty --env-file, so a developer's .env next to the file changes nothing.
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/tmp")}
    env.update(secret_values() if variables is None else variables)
    with tempfile.NamedTemporaryFile("w", suffix=".env") as empty:
        return subprocess.run(
            [
                compose,
                "--project-directory",
                str(path.parent),
                "--env-file",
                empty.name,
                "-f",
                str(path),
                *args,
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )


def resolved_services(compose: str) -> dict[str, str]:
    """Return {service: its block of `docker-compose config` output, whitespace collapsed}.

    compose resolves anchors, merges and defaults, so this is what would run.
    """
    res = run_compose(compose, ROOT / "docker-compose.yml", "config")
    assert res.returncode == 0, res.stderr
    blocks: dict[str, list[str]] = {}
    current = None
    in_services = False
    for line in res.stdout.splitlines():
        if not line.startswith(" "):
            in_services = line == "services:"
            current = None
            continue
        if in_services and line.startswith("  ") and not line.startswith("   ") and line.endswith(":"):
            current = line.strip()[:-1]
            blocks[current] = []
        elif current is not None:
            blocks[current].append(line.strip())
    return {name: " ".join(" ".join(lines).split()) for name, lines in blocks.items()}


def test_compose_file_is_valid_for_docker_compose(compose):
    res = run_compose(compose, ROOT / "docker-compose.yml", "config", "-q")
    assert res.returncode == 0, res.stderr
    profiles = ("--profile", "cli", "--profile", "monitoring")
    res = run_compose(compose, ROOT / "docker-compose.yml", *profiles, "config", "--services")
    assert set(res.stdout.split()) == SERVICES


def test_compose_check_rejects_a_broken_file(compose, tmp_path):
    """The check can fail: a worker depending on a service that does not exist is refused."""
    broken = (
        (ROOT / "docker-compose.yml")
        .read_text()
        .replace(
            "      migrate:\n        condition: service_completed_successfully",
            "      no_such_service:\n        condition: service_completed_successfully",
            1,
        )
    )
    (tmp_path / "docker-compose.yml").write_text(broken)
    res = run_compose(compose, tmp_path / "docker-compose.yml", "config", "-q")
    assert res.returncode != 0
    assert "no_such_service" in res.stderr


def test_redis_persists_and_never_evicts_queued_tasks(compose):
    redis = resolved_services(compose)["redis"]
    assert "--appendonly yes" in redis
    assert "--maxmemory-policy noeviction" in redis
    assert "/data" in redis  # the append-only file lives on a volume


def test_migrate_runs_once_and_the_others_wait_for_it(compose):
    services = resolved_services(compose)
    assert "- db - upgrade" in services["migrate"]
    assert "restart: 'no'" in services["migrate"] or 'restart: "no"' in services["migrate"]
    for name in ("worker", "scheduler"):
        assert "migrate: condition: service_completed_successfully" in services[name], name
    assert "- scheduler" in services["scheduler"]


def test_worker_scales_and_takes_concurrency_from_the_environment(compose):
    worker = resolved_services(compose)["worker"]
    # `--scale worker=N` needs copies that do not clash: no fixed name, no published port.
    assert "container_name" not in worker and "ports" not in worker
    assert "PACKSOLVE_CONCURRENCY:" in worker
    assert "PACKSOLVE_DATABASE_URL: postgresql://" in worker and "PACKSOLVE_BROKER_URL: redis://:" in worker
    help_text = CliRunner().invoke(cli, ["worker", "--help"]).output
    assert "PACKSOLVE_CONCURRENCY" in help_text


def test_flower_monitors_the_same_broker(compose):
    flower = resolved_services(compose)["flower"]
    assert "- flower" in flower and "@redis:6379/0" in flower and "5555" in flower


def test_commands_the_compose_file_runs_exist():
    commands = (["db", "upgrade"], ["worker"], ["scheduler"], ["metrics"])
    for argv in ([*command, "--help"] for command in commands):
        res = CliRunner().invoke(cli, argv)
        assert res.exit_code == 0, (argv, res.output)


def test_dockerfile_builds_the_c_extensions_and_ships_without_a_compiler():
    text = (ROOT / "Dockerfile").read_text()
    stages = text.split("\nFROM ")[1:]
    assert len(stages) == 2, "a build stage and a runtime stage"
    build, runtime = stages
    # The official image by default; any other base through the build argument (docs/cluster.md).
    assert "ARG PYTHON_IMAGE=python:3.11-slim" in stages_head(text)
    assert build.startswith("${PYTHON_IMAGE} AS build") and "gcc" in build and "pip wheel" in build
    assert runtime.startswith("${PYTHON_IMAGE}") and "gcc" not in runtime
    assert "packsolve.native" in runtime  # the image refuses to build if an extension is missing
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert ".venv" in ignored and ".git" in ignored and "src" not in ignored


def stages_head(dockerfile: str) -> str:
    """Return what comes before the first FROM (the global build arguments)."""
    return dockerfile.split("\nFROM ", 1)[0]


@pytest.mark.parametrize("secret", SECRETS)
def test_up_refuses_to_start_while_a_secret_is_unset(compose, secret):
    """`docker-compose up` with one required secret unset fails before creating anything, naming it."""
    variables = secret_values()
    del variables[secret]
    res = run_compose(compose, ROOT / "docker-compose.yml", "up", "--no-start", variables=variables)
    assert res.returncode != 0
    assert f"set {secret} (" in res.stderr and ".env next to docker-compose.yml" in res.stderr, res.stderr


def test_published_ports_are_bound_to_loopback_unless_the_user_opts_in(compose):
    services = resolved_services(compose)
    for name, port in (("redis", 6379), ("postgres", 5432), ("flower", 5555)):
        assert f"127.0.0.1:{port}:{port}" in services[name].replace(" ", ""), services[name]
    monitoring = run_compose(compose, ROOT / "docker-compose.yml", "--profile", "monitoring", "config")
    assert "127.0.0.1:9090:9090" in monitoring.stdout.replace(" ", ""), monitoring.stdout
    opted = run_compose(
        compose, ROOT / "docker-compose.yml", "config", variables={**secret_values(), "REDIS_BIND": "0.0.0.0"}
    )
    assert "0.0.0.0:6379:6379" in opted.stdout


def test_services_take_the_secrets_and_no_default_credential_remains(compose):
    values = secret_values()
    services = resolved_services(compose)
    text = (ROOT / "docker-compose.yml").read_text()
    assert "admin:packsolve" not in text and ":-packsolve}" not in text
    res = run_compose(compose, ROOT / "docker-compose.yml", "--profile", "cli", "config", variables=values)
    resolved = " ".join(res.stdout.split())
    redis_url = f"redis://:{values['REDIS_PASSWORD']}@redis:6379/0"
    pg_url = f"postgresql://packsolve:{values['POSTGRES_PASSWORD']}@postgres:5432/packsolve"
    assert f"--requirepass {values['REDIS_PASSWORD']}" in resolved
    assert f"--basic-auth={values['FLOWER_BASIC_AUTH']}" in resolved and f"--broker={redis_url}" in resolved
    for name in ("migrate", "worker", "scheduler", "cli", "metrics"):
        assert "PACKSOLVE_TASK_KEY:" in services[name] and "PACKSOLVE_BROKER_URL: redis://:" in services[name]
    assert resolved.count(f"PACKSOLVE_TASK_KEY: {values['PACKSOLVE_TASK_KEY']}") == 6  # + flower's image env
    assert resolved.count(redis_url) >= 5 and resolved.count(pg_url) >= 4


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_compose_up_solves_packs_from_the_host_and_the_cli_container(compose_up, tmp_path):
    """The bring-up as users run it: three worker containers solve every level once, Flower guards its API."""
    stack = compose_up
    workers = stack.worker_names()
    assert len(workers) == 3, workers
    # Bound to loopback: what `docker port` reports for the published ports.
    for service in ("redis", "postgres", "flower"):
        ports = stack.engine.docker("port", stack.containers(service)[0]).stdout.split()
        assert ports and all(p.startswith("127.0.0.1:") for p in ports[2::3]), (service, ports)

    # A held-in pack from the host, through the published ports; one task per level.
    held_in = ROOT / "examples" / "packs" / "sudoku" / "hard.sdk"
    broker = redis.Redis.from_url(stack.broker_url)
    calls_before, started = redis_calls(broker), time.monotonic()
    host_run = stack.submit(held_in, "--time-limit", "60", "--chunk-size", "1")
    # A pack of levels that each take 0.4 s through `docker-compose run --rm cli` (packs under PACKS_DIR):
    # long enough that all three workers take a share.
    write_pack(stack.packs, 36, ms=400, name="sleepers.jsonl")
    res = stack.compose(
        "--profile",
        "cli",
        "run",
        "--rm",
        "cli",
        "submit",
        "/packs/sleepers.jsonl",
        "--time-limit",
        "30",
        "--chunk-size",
        "1",
        timeout=300,
    )
    cli_run = int(res.stdout.strip().splitlines()[-1])
    assert cli_run != host_run
    for run_id in (host_run, cli_run):
        assert stack.wait_finished(run_id, 300), (
            f"run {run_id} did not finish: {stack.logs('worker')[-3000:]}"
        )

    # The broker's load, for the capacity model in docs/cluster.md (Flower's events included).
    redis_per_task = (redis_calls(broker) - calls_before) / (count_levels(held_in) + 36)
    busy_s = time.monotonic() - started
    levels = {host_run: count_levels(held_in), cli_run: 36}
    for run_id, n in levels.items():
        rows = stack.sql(
            "SELECT level_hash, count(*), count(*) FILTER (WHERE status = 'solved') FROM attempts "
            "WHERE run_id = :r GROUP BY level_hash",
            r=run_id,
        )
        assert len(rows) == n, (run_id, len(rows), n)
        assert all(total == 1 and solved == 1 for _, total, solved in rows), (run_id, rows)
    names = {r[0] for r in stack.sql("SELECT DISTINCT worker FROM attempts WHERE run_id = :r", r=cli_run)}
    assert names == set(workers.values()), (names, workers)

    user, password = stack.variables["FLOWER_BASIC_AUTH"].split(":", 1)
    assert flower_get(stack, "/api/workers", (user, password)) == 200
    assert flower_get(stack, "/api/workers", None) == 401
    assert flower_get(stack, "/api/workers", (user, "packsolve")) == 401
    timings = ", ".join(f"{k} {v:.0f} s" for k, v in stack.timings.items())
    print(
        f"compose bring-up: {timings}; Redis: {redis_per_task:.0f} commands per 1-level task ({busy_s:.0f} s)"
    )


def count_levels(pack: Path) -> int:
    """Return how many levels `packsolve check` says the pack has."""
    res = run_cli("check", str(pack))
    assert res.returncode == 0, res.stderr
    first = res.stdout.splitlines()[0]
    assert first.endswith("level(s) would run (nothing was created)"), first
    return int(first.split()[0])


def redis_calls(broker: redis.Redis) -> int:
    """Return the commands Redis has executed since it started (INFO commandstats)."""
    stats = broker.info("commandstats")
    return sum(int(v["calls"]) for v in stats.values())


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_monitoring_profile_brings_up_prometheus_scraping_packsolve(compose_up):
    """`--profile monitoring`: Prometheus finds packsolve's target up; what it scraped is the database's."""
    stack = compose_up

    def target() -> dict[str, Any] | None:
        active = stack.prometheus("targets")["activeTargets"]
        found = [t for t in active if t["labels"].get("job") == "packsolve"]
        return found[0] if found and found[0]["health"] == "up" else None

    up = wait_for(target, timeout=120, every=2, what="Prometheus's packsolve target up")
    assert up["scrapeUrl"].endswith(":9787/metrics"), up
    # The figures Prometheus keeps are what packsolve read from the database and the broker.
    assert _sample(stack, "packsolve_broker_up") == 1.0

    def attempts_agree() -> bool:
        (count,) = stack.sql("SELECT count(*) FROM attempts")[0]
        return _sample(stack, "sum(packsolve_attempts)") == float(count)

    assert wait_until(attempts_agree, timeout=90, every=3), (
        _sample(stack, "sum(packsolve_attempts)"),
        stack.sql("SELECT count(*) FROM attempts"),
    )


def _sample(stack: Any, query: str) -> float | None:
    """Return the one value of a Prometheus instant query, or None if it has no sample."""
    import urllib.parse

    result = stack.prometheus("query?query=" + urllib.parse.quote(query))["result"]
    return float(result[0]["value"][1]) if result else None
