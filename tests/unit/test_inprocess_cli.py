"""The in-process CLI helper (tests.support.inprocess.invoke) answers as `python -m packsolve` does and
leaves the test process as it found it."""

from __future__ import annotations

import os
import signal
from multiprocessing import forkserver
from pathlib import Path

import pytest
from sqlalchemy import create_engine, select

from packsolve import settings
from packsolve.db import session
from packsolve.db.models import Run
from tests.support.inprocess import LeakedState, _signals_kept, invoke
from tests.support.packs import make_pack
from tests.support.services import run_cli


@pytest.mark.parametrize(
    "args",
    [
        ("report", "summary", "latest"),  # no database here: a user error, exit 1
        ("solve", "--jobs", "0", "."),  # a bad option value: a usage error, exit 2
        ("no-such-command",),
    ],
)
def test_a_failing_command_gives_the_exit_code_and_the_one_line_stderr_of_the_subprocess(args, tmp_path):
    env = {"PACKSOLVE_DATABASE_URL": f"sqlite:///{tmp_path / 'none.db'}"}
    here = invoke(*args, env=env, cwd=tmp_path)
    there = run_cli(*args, env=env, cwd=tmp_path)
    assert here.returncode == there.returncode != 0
    assert here.stderr == there.stderr and len(here.stderr.splitlines()) == 1
    assert here.stdout == there.stdout
    assert not (tmp_path / "none.db").exists()


def test_a_command_that_succeeds_prints_what_the_subprocess_prints(tmp_path):
    env = {"COLUMNS": "100"}
    for args in (("kinds",), ("--version",), ("config",)):
        here, there = invoke(*args, env=env, cwd=tmp_path), run_cli(*args, env=env, cwd=tmp_path)
        assert (here.returncode, here.stdout, here.stderr) == (there.returncode, there.stdout, there.stderr)


def queue_line(res) -> str:
    assert res.returncode == 0, res.stderr
    [line] = [line for line in res.stdout.splitlines() if line.startswith("queue ")]
    return line


def test_env_and_cwd_hold_for_the_call_only(tmp_path, monkeypatch):
    monkeypatch.setenv("PACKSOLVE_QUEUE", "outside")
    (tmp_path / "packsolve.toml").write_text('[settings]\nqueue = "from-the-file"\n')
    environ, cwd = dict(os.environ), os.getcwd()
    assert queue_line(invoke("config", env={"PACKSOLVE_QUEUE": "inside"})).split()[1] == "inside"
    monkeypatch.delenv("PACKSOLVE_QUEUE")
    assert queue_line(invoke("config", cwd=tmp_path)).split()[1] == "from-the-file"
    # Back here, without the file: its settings are not kept from the call before.
    assert queue_line(invoke("config")).split()[1] != "from-the-file"
    monkeypatch.setenv("PACKSOLVE_QUEUE", "outside")
    assert dict(os.environ) == environ and os.getcwd() == cwd
    assert settings.current().queue == "outside"


def test_a_local_solve_leaves_the_handlers_engines_and_processes_as_they_were(tmp_path):
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    engines = set(session._engines)
    url = f"sqlite:///{tmp_path / 'r.db'}"
    res = invoke("solve", str(make_pack(tmp_path)), "--jobs", "2", env={"PACKSOLVE_DATABASE_URL": url})
    assert res.returncode == 0, res.stderr
    assert "4 of 6" in res.stdout and "1 duplicate" in res.stderr
    assert {sig: signal.getsignal(sig) for sig in handlers} == handlers
    assert set(session._engines) == engines
    assert forkserver._forkserver._forkserver_pid is None  # the solve's forkserver stopped
    engine = create_engine(url)
    with engine.connect() as db:
        [options] = db.scalars(select(Run.options)).all()
    engine.dispose()
    assert options["argv"] == ["solve", str(tmp_path / "pack"), "--jobs", "2"]  # the command's, not pytest's


def test_a_handler_left_set_fails_the_call_and_is_put_back():
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(LeakedState, match="SIGTERM"), _signals_kept():
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    assert signal.getsignal(signal.SIGTERM) == before


def test_an_uncaught_exception_exits_1_with_its_traceback_on_stderr(monkeypatch, tmp_path: Path):
    # A bug in a command (not a user's error) keeps its traceback, as the interpreter prints it.
    import packsolve.cli.config as config_cli

    def broken(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(config_cli, "env_name", broken)
    res = invoke("config", cwd=tmp_path)
    assert res.returncode == 1
    assert res.stderr.startswith("Traceback (most recent call last):")
    assert res.stderr.rstrip().endswith("RuntimeError: a bug")


def test_the_consoles_take_the_calls_columns_whatever_they_were_made_with(monkeypatch, tmp_path):
    # As under pytest-xdist, whose workers have COLUMNS=80 when packsolve.cli.options is imported.
    from packsolve.cli import options

    monkeypatch.setattr(options.out_console, "_width", 80)
    env = {"COLUMNS": "140"}
    here, there = invoke("kinds", env=env, cwd=tmp_path), run_cli("kinds", env=env, cwd=tmp_path)
    assert here.stdout == there.stdout and max(map(len, here.stdout.splitlines())) > 80
    assert options.out_console._width == 80


def test_a_forkserver_from_before_the_call_is_not_the_one_its_solve_uses(tmp_path):
    # As click's CliRunner used directly leaves one: started in another environment, with other kinds.
    forkserver.ensure_running()
    before = forkserver._forkserver._forkserver_pid
    url = f"sqlite:///{tmp_path / 'r.db'}"
    res = invoke("solve", str(make_pack(tmp_path)), "--jobs", "2", env={"PACKSOLVE_DATABASE_URL": url})
    assert res.returncode == 0, res.stderr
    assert "4 of 6" in res.stdout
    assert forkserver._forkserver._forkserver_pid is None  # neither the old one nor the solve's is left
    assert before is not None and not Path(f"/proc/{before}").exists()


def test_each_call_prepares_as_a_new_process_does(tmp_path):
    # A process remembers what it prepared: a second command here must not take it as done for its own cache.
    for cache in ("one", "two"):
        env = {"PACKSOLVE_CACHE_DIR": str(tmp_path / cache)}
        res = invoke("kinds", "--prepare", "sliding", "pdb", "--size", "4", env=env)
        assert res.returncode == 0, res.stderr
        assert "building the pdb pattern tables for 4x4 once (about a second" in res.stderr, res.stderr
