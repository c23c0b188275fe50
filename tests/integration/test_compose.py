"""Deployment files: docker-compose.yml checked by Debian's `docker-compose config`; the Dockerfile's shape.

No Docker engine runs here, so the compose file is checked, not started. Under
CI=true a missing `docker-compose` binary fails the test (CI must install the
Debian package); elsewhere it skips.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from packsolve.cli import cli
from tests.support.services import IN_CI

ROOT = Path(__file__).resolve().parents[2]
SERVICES = {"redis", "postgres", "migrate", "worker", "scheduler", "flower", "cli"}


@pytest.fixture(scope="module")
def compose() -> str:
    binary = shutil.which("docker-compose")
    if binary is None:
        message = "docker-compose not installed (apt-get install docker-compose)"
        if IN_CI:
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return binary


def run_compose(compose: str, path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # A clean environment: the file's ${VAR:-default}s must be enough on their own.
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/tmp")}
    return subprocess.run(
        [compose, "--project-directory", str(path.parent), "-f", str(path), *args],
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
    res = run_compose(compose, ROOT / "docker-compose.yml", "--profile", "cli", "config", "--services")
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
    assert (
        "PACKSOLVE_DATABASE_URL: postgresql://" in worker and "PACKSOLVE_BROKER_URL: redis://redis" in worker
    )
    help_text = CliRunner().invoke(cli, ["worker", "--help"]).output
    assert "PACKSOLVE_CONCURRENCY" in help_text


def test_flower_monitors_the_same_broker(compose):
    flower = resolved_services(compose)["flower"]
    assert "- flower" in flower and "--broker=redis://redis:6379/0" in flower and "5555" in flower


def test_commands_the_compose_file_runs_exist():
    for argv in (["db", "upgrade", "--help"], ["worker", "--help"], ["scheduler", "--help"]):
        res = CliRunner().invoke(cli, argv)
        assert res.exit_code == 0, (argv, res.output)


def test_dockerfile_builds_the_c_extensions_and_ships_without_a_compiler():
    text = (ROOT / "Dockerfile").read_text()
    stages = text.split("\nFROM ")[1:]
    assert len(stages) == 2, "a build stage and a runtime stage"
    build, runtime = stages
    assert "python:3.11-slim AS build" in build and "gcc" in build and "pip wheel" in build
    assert runtime.startswith("python:3.11-slim") and "gcc" not in runtime
    assert "packsolve.native" in runtime  # the image refuses to build if an extension is missing
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert ".venv" in ignored and ".git" in ignored and "src" not in ignored
