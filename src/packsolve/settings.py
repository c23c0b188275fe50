"""packsolve's settings, resolved once from flags, the environment and ./packsolve.toml, each checked.

Each setting has one parser and one source that wins, in this order: a command's
flag, the environment (PACKSOLVE_*), the [settings] table of ./packsolve.toml,
the default. A bad value is an error naming where it came from, what is wrong
and what would work, one line per bad value, whatever its source: none silently
becomes the default. `packsolve config` prints the result and each source.

Settings travel explicitly. A command line resolves its Settings once, with its
flags, into its click context (cli/group.py: the Invocation, @pass_invocation), and
hands the values down: the database URL to db.session.get_engine, the whole
Settings to queue.app.Cluster (senders: task keys, visibility timeout, waits) and
to a worker's pool processes (worker.py); nothing below reads them on its own.

current() (the environment and the file as they are now, resolved once per
distinct environment) is left to the few places that no Settings reaches:
  - queue.app.Cluster.of() without settings: a library user's or a test's cluster;
  - puzzles._extra_modules: PACKSOLVE_EXTRA_KINDS (test-only kinds), read by the
    process-wide kind registry wherever a kind is looked up, solver children too;
  - puzzles.sliding.pdb.cache_dir: the table cache, read inside the solver.

This is the one module that reads os.environ (besides the child environment of
external solver programs, execution/programs.py).
"""

from __future__ import annotations

import functools
import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from packsolve import bounds
from packsolve.errors import UsageError
from packsolve.masking import MASK, mask_url

FILE = "packsolve.toml"
TABLE = "settings"
ENV_PREFIX = "PACKSOLVE_"

DEFAULT_QUEUE = "packsolve"
DEFAULT_BROKER_URL = "redis://localhost:6379/0"
# Seconds a worker process's lease lasts unless renewed: a dead worker's claims are taken back
# within this plus one scheduler interval.
DEFAULT_LEASE_TTL_S = 30.0
# Seconds a worker process may keep finished results before writing them in one batch: a worker
# killed loses at most this much finished work; longer batches suit a far database (fewer writes).
DEFAULT_RESULT_FLUSH_S = 0.25
# The same for the local pool (`packsolve solve`), whose one writer is also the process that solves.
DEFAULT_LOCAL_RESULT_FLUSH_S = 0.5
# Results written at once, however young, once this many are buffered (worker and local pool alike).
DEFAULT_RESULT_BATCH = 200
RESULT_BATCH_MAX = 100_000
# Redis redelivers an unacknowledged task after this many seconds; it must exceed the longest
# task (hard limit + time spent reserved). Runs with longer limits are refused at submit.
DEFAULT_VISIBILITY_TIMEOUT = 12 * 3600
# How long each party waits for something before it gives up or acts (seconds). Tests set them to
# a second: nothing else makes an outage or a lost task quick to stage.
# A worker retries a database call that fails on a dropped connection this long (its claim, its
# result write, its lease): then the task gives up and the scheduler covers the rest. A task's
# Celery hard limit leaves room for two such waits.
DEFAULT_DB_PATIENCE_S = 120.0
# After an attempt was sent, an empty queue means its task is gone only once this long has passed
# (a worker takes a task from the queue and claims or holds its attempts well within it).
DEFAULT_SEND_SETTLE_S = 5.0
# A worker acknowledges a tiny attempt's task before its buffer writes the result: before taking
# such attempts back, the scheduler waits this long and asks the broker again.
DEFAULT_RESULT_SETTLE_S = 1.0
# A scheduler pass's reads and last step retry a lost connection this long before the pass fails.
DEFAULT_SCHEDULER_PATIENCE_S = 10.0
# A submit whose database dropped tries this long to record its run unsent before it gives up.
DEFAULT_UNSENT_PATIENCE_S = 30.0
# A worker tries this long to record a refusal (the task waits meanwhile; it comes back anyway).
DEFAULT_REFUSAL_PATIENCE_S = 5.0

# What an attempt keeps of its solver's own output (stdout beyond the answer and stderr, head and
# tail), bytes in all; it lands in the attempts table, so it counts in the database's size.
DEFAULT_OUTPUT_KEEP = 64 * 1024
OUTPUT_KEEP_MAX = 16 * 2**20

FLAG, ENVIRONMENT, CONFIG_FILE, DEFAULT = "flag", "environment", "file", "default"


class SettingsError(UsageError):
    """One or more settings have values that cannot work: one line each, naming where it was set."""


class _Bad(ValueError):
    """A value a parser refuses; the message says what would work."""


def _text(raw: str) -> str:
    return raw


def _optional_text(raw: str) -> str | None:
    return raw or None


def _seconds(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not (value > 0 and bounds.TIME_LIMIT_S.holds(value)):
        raise _Bad(f"must be a number of seconds above 0, up to {bounds.shown(bounds.TIME_LIMIT_S.high)}")
    return value


def _whole_seconds(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if not bounds.WHOLE_SECONDS.holds(value):
        raise _Bad(f"must be a whole number of seconds from {bounds.WHOLE_SECONDS}")
    return value


def _count_or_none(zero: str) -> Callable[[str], int | None]:
    """Return the parser of a whole number from bounds.COUNT where 0 (or nothing) means zero: None."""

    def parse(raw: str) -> int | None:
        if raw == "":
            return None
        try:
            value = int(raw)
        except ValueError:
            value = -1
        if not bounds.COUNT.holds(value):
            raise _Bad(f"must be a whole number from {bounds.COUNT} (0: {zero})")
        return value or None

    return parse


_count = _count_or_none("one per core")
_cpus = _count_or_none("attempts are not pinned")


def _batch(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if not 1 <= value <= RESULT_BATCH_MAX:
        raise _Bad(f"must be a whole number of results from 1 to {RESULT_BATCH_MAX:,}")
    return value


_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": 2**20, "mb": 2**20, "mib": 2**20}
_SIZE = re.compile(r"\s*(\d+)\s*([A-Za-z]*)\s*")


def _bytes(raw: str) -> int:
    found = _SIZE.fullmatch(raw)
    unit = found and _UNITS.get(found.group(2).lower())
    value = int(found.group(1)) * unit if found and unit else -1
    if not 0 <= value <= OUTPUT_KEEP_MAX:
        top = OUTPUT_KEEP_MAX // 2**20
        raise _Bad(f"must be a size from 0 (keep nothing) to {top} MiB: write 65536, 64KiB or 1MiB")
    return value


BROKER_FORM = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
# The transports packsolve is built and tested for (Redis over TCP, TLS or a socket; RabbitMQ).
BROKER_SCHEMES = ("redis", "rediss", "unix", "amqp", "amqps", "pyamqp")


def _broker(raw: str) -> str:
    found = BROKER_FORM.match(raw)
    if not found:
        raise _Bad("is not a broker URL: write redis://HOST:6379/0 or amqp://USER:PASSWORD@HOST:5672/VHOST")
    if found.group(1).lower() not in BROKER_SCHEMES:
        # A typo (redsi://) is the user's to fix, found now: not a transport error once the run is made.
        raise _Bad(
            f"has no broker scheme packsolve speaks ({found.group(1)}://): write redis://, rediss://, "
            "amqp:// or amqps://"
        )
    return raw


_ON, _OFF = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def _switch(raw: str) -> bool:
    if raw.strip().lower() in _ON:
        return True
    if raw.strip().lower() in _OFF:
        return False
    raise _Bad("must be on or off: write 1, true, yes or on; 0, false, no or off")


CGROUP_CHOICES = ("auto", "v1", "v2", "off")


def _cgroups(raw: str) -> str:
    value = raw.strip().lower()
    if value not in CGROUP_CHOICES:
        raise _Bad("must be auto (v1 where it works, else v2), v1, v2 or off")
    return value


def _names(raw: str) -> tuple[str, ...]:
    return tuple(k.strip() for k in raw.split(",") if k.strip())


def _kinds(raw: str) -> tuple[tuple[str, str], ...]:
    found = []
    for entry in _names(raw):
        name, sep, module = entry.partition(":")
        if not (sep and name.strip() and module.strip()):
            raise _Bad(f"has {entry!r}: write NAME:MODULE, comma-separated")
        found.append((name.strip(), module.strip()))
    return tuple(found)


@dataclass(frozen=True)
class _Spec:
    """How one setting is read: its parser, its default, and whether it is a secret."""

    parse: Callable[[str], Any]
    default: Any
    secret: bool = False
    url: bool = False


# One entry per setting; its environment variable is PACKSOLVE_ + the name in capitals, its key
# in the file's [settings] table is the name.
SPECS: dict[str, _Spec] = {
    "database_url": _Spec(_optional_text, None, url=True),
    "broker_url": _Spec(_broker, DEFAULT_BROKER_URL, url=True),
    "queue": _Spec(_text, DEFAULT_QUEUE),
    "lease_ttl": _Spec(_seconds, DEFAULT_LEASE_TTL_S),
    "result_flush": _Spec(_seconds, DEFAULT_RESULT_FLUSH_S),
    "local_result_flush": _Spec(_seconds, DEFAULT_LOCAL_RESULT_FLUSH_S),
    "result_batch": _Spec(_batch, DEFAULT_RESULT_BATCH),
    "visibility_timeout": _Spec(_whole_seconds, DEFAULT_VISIBILITY_TIMEOUT),
    "db_patience": _Spec(_seconds, DEFAULT_DB_PATIENCE_S),
    "send_settle": _Spec(_seconds, DEFAULT_SEND_SETTLE_S),
    "result_settle": _Spec(_seconds, DEFAULT_RESULT_SETTLE_S),
    "scheduler_patience": _Spec(_seconds, DEFAULT_SCHEDULER_PATIENCE_S),
    "unsent_patience": _Spec(_seconds, DEFAULT_UNSENT_PATIENCE_S),
    "refusal_patience": _Spec(_seconds, DEFAULT_REFUSAL_PATIENCE_S),
    "task_key": _Spec(_optional_text, None, secret=True),
    "task_keys_old": _Spec(_names, (), secret=True),
    "concurrency": _Spec(_count, None),
    "cpus_per_attempt": _Spec(_cpus, None),
    # Celery's remote control (inspect, revoke, shutdown, pool resizing) answers anyone who can
    # write to the broker: off unless the broker is trusted (docs/security.md).
    "worker_remote_control": _Spec(_switch, False),
    "serve_token": _Spec(_optional_text, None, secret=True),
    "extra_kinds": _Spec(_kinds, ()),
    "cache_dir": _Spec(_optional_text, None),
    "output_keep": _Spec(_bytes, DEFAULT_OUTPUT_KEEP),
    # Which cgroup version measures and limits attempts (execution.cgroups reads it from the
    # environment, which the processes that solve inherit).
    "cgroups": _Spec(_cgroups, "auto"),
}


def env_name(name: str) -> str:
    """Return the environment variable of a setting (lease_ttl: PACKSOLVE_LEASE_TTL)."""
    return ENV_PREFIX + name.upper()


@dataclass(frozen=True)
class Settings:
    """The effective settings; sources says where each came from (flag, environment, file, default)."""

    database_url: str | None = None  # None: ./packsolve.db (db.session.database_url)
    broker_url: str = DEFAULT_BROKER_URL
    queue: str = DEFAULT_QUEUE
    lease_ttl: float = DEFAULT_LEASE_TTL_S
    result_flush: float = DEFAULT_RESULT_FLUSH_S
    local_result_flush: float = DEFAULT_LOCAL_RESULT_FLUSH_S
    result_batch: int = DEFAULT_RESULT_BATCH
    visibility_timeout: int = DEFAULT_VISIBILITY_TIMEOUT
    db_patience: float = DEFAULT_DB_PATIENCE_S  # the waits: see DEFAULT_*_S above
    send_settle: float = DEFAULT_SEND_SETTLE_S
    result_settle: float = DEFAULT_RESULT_SETTLE_S
    scheduler_patience: float = DEFAULT_SCHEDULER_PATIENCE_S
    unsent_patience: float = DEFAULT_UNSENT_PATIENCE_S
    refusal_patience: float = DEFAULT_REFUSAL_PATIENCE_S
    task_key: str | None = None
    task_keys_old: tuple[str, ...] = ()
    concurrency: int | None = None  # None: one process per core
    # CPUs of its own each process that runs attempts is pinned to (execution.cores); None: no pinning.
    cpus_per_attempt: int | None = None
    worker_remote_control: bool = False  # workers answer Celery's inspect and control commands
    serve_token: str | None = None
    extra_kinds: tuple[tuple[str, str], ...] = ()  # (kind name, module) of test-only kinds
    cache_dir: str | None = None  # None: the user's cache directory
    output_keep: int = DEFAULT_OUTPUT_KEEP  # bytes of a solver's own output an attempt keeps
    cgroups: str = "auto"  # auto, v1, v2 or off: how attempts are measured (execution.cgroups)
    sources: Mapping[str, str] = field(default_factory=dict, compare=False)

    def source(self, name: str) -> str:
        """Return where a setting came from: flag, environment, file or default."""
        return self.sources.get(name, DEFAULT)

    def shown(self) -> dict[str, dict[str, Any]]:
        """Return {name: {value, source}} as it may be shown: secrets and URL passwords hidden."""
        return {
            f.name: {"value": _shown(f.name, getattr(self, f.name)), "source": self.source(f.name)}
            for f in fields(self)
            if f.name in SPECS
        }


def _shown(name: str, value: Any) -> Any:
    spec = SPECS[name]
    if spec.secret and value:
        return MASK
    if spec.url and value:
        return mask_url(value)
    if name == "extra_kinds":
        return [f"{kind}:{module}" for kind, module in value]
    return list(value) if isinstance(value, tuple) else value


def resolve(
    flags: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    path: str | os.PathLike[str] | None = FILE,
) -> Settings:
    """Return the settings from flags (None: not given), environ (default os.environ) and the file at path
    (None: no file).

    Raise SettingsError listing every bad value, one line each, if any is bad.
    """
    environ = os.environ if environ is None else environ
    table = _file_table(Path(path)) if path is not None else {}
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    problems: list[str] = []
    for name, spec in SPECS.items():
        given = (flags or {}).get(name)
        if given is not None and not isinstance(given, str):
            values[name], sources[name] = given, FLAG  # click's type has parsed and checked it
            continue
        raw, source, where = (
            (given, FLAG, flag_name(name)) if given is not None else _raw(name, environ, table, path)
        )
        if raw is None:
            values[name], sources[name] = spec.default, DEFAULT
            continue
        try:
            values[name], sources[name] = spec.parse(raw), source
        except _Bad as exc:
            problems.append(_problem(name, where, raw, exc))
    if problems:
        raise SettingsError("\n".join(problems))
    return Settings(**values, sources=sources)


def flag_name(name: str) -> str:
    """Return a setting's command-line flag (lease_ttl: --lease-ttl)."""
    return "--" + name.replace("_", "-")


def _problem(name: str, where: str, raw: str, exc: _Bad) -> str:
    """Return the one line saying that a setting's value from where is bad and what would work."""
    spec = SPECS[name]
    shown = MASK if spec.secret else mask_url(raw) if spec.url else raw
    return f"{where}={shown!r} {exc}"


def parsed(name: str, raw: str, where: str | None = None) -> Any:
    """Return raw parsed as the setting name; SettingsError (one line, naming where) if it is bad."""
    try:
        return SPECS[name].parse(raw)
    except _Bad as exc:
        raise SettingsError(_problem(name, where or flag_name(name), raw, exc)) from None


def _raw(
    name: str, environ: Mapping[str, str], table: Mapping[str, Any], path: str | os.PathLike[str] | None
) -> tuple[str | None, str, str]:
    """Return (text, source, how to name it) of a setting from the environment, else the file."""
    variable = env_name(name)
    if environ.get(variable):
        return environ[variable], ENVIRONMENT, variable
    if name in table:
        value = table[name]
        text = ",".join(str(v) for v in value) if isinstance(value, list) else str(value)
        return text, CONFIG_FILE, f"{os.fspath(path or FILE)} [{TABLE}] {name}"
    return None, DEFAULT, name


def _file_table(path: Path) -> Mapping[str, Any]:
    """Return the [settings] table of the file (empty if there is no file); SettingsError if unusable."""
    if not path.is_file():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SettingsError(f"{path}: cannot read its [{TABLE}] table: {exc}") from None
    table = data.get(TABLE, {})
    if not isinstance(table, dict):
        raise SettingsError(
            f"{path}: '{TABLE}' must be a table: [{TABLE}] then lines like queue = \"nightly\""
        )
    unknown = sorted(set(table) - set(SPECS))
    if unknown:
        known = ", ".join(SPECS)
        raise SettingsError(f"{path}: [{TABLE}] has no setting {unknown[0]!r}; the settings are {known}")
    return table


def current() -> Settings:
    """Return the settings of the environment and ./packsolve.toml as they are now (no flags).

    Resolved once for each distinct environment and file: cheap to call again.
    """
    environ = tuple(os.environ.get(env_name(name)) for name in SPECS)
    try:
        cwd = os.getcwd()
    except FileNotFoundError:  # the directory is gone, and any file in it
        return _resolved(environ, None, None)
    try:
        stamp: int | None = os.stat(Path(cwd) / FILE).st_mtime_ns
    except OSError:
        stamp = None
    return _resolved(environ, cwd, stamp)


@functools.lru_cache(maxsize=16)
def _resolved(environ: tuple[str | None, ...], cwd: str | None, stamp: int | None) -> Settings:
    """Return the settings of these environment values and the file in cwd (None: no file); stamp, the
    file's modification time, only keys the cache."""
    given = {env_name(name): value for name, value in zip(SPECS, environ, strict=True) if value is not None}
    return resolve(environ=given, path=Path(cwd) / FILE if cwd is not None else None)


def child_environment(**settings: str) -> dict[str, str]:
    """Return this process's environment for a packsolve child process, with these settings set."""
    return {**os.environ, **{env_name(name): value for name, value in settings.items()}}
