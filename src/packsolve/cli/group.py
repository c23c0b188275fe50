"""The packsolve group: one Invocation per command line, and one line for every error a user can fix.

Every command runs inside ``PacksolveGroup.invoke``. A ``PacksolveError`` leaves as ``Error: ...``
on stderr with the exit code of its class (errors.py); a database that cannot be reached leaves
as one line naming it. Anything else is a bug in packsolve and keeps its traceback.

A command line has one Invocation, the root context's object, made as the group starts: its
settings, resolved once (its flags that are settings, --database-url, --broker-url, ...: each noted
by setting_flag; then the environment, the [settings] table of ./packsolve.toml and the defaults:
packsolve.settings.resolve), and what it opens of them on first use: the database's engine (as
the command declared: read-only, an existing one, or created) and the cluster (queue.app.Cluster).
A command receives it with @pass_invocation (click's make_pass_decorator), or with the options
that bring their settings: @with_database, @with_cluster (cli/options.py). The settings are resolved
when the command starts, not in the group's callback: a subcommand's flags are parsed after that runs
(and `packsolve status --help` needs no valid settings). A bad value is a SettingsError: one line
each, exit 2.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, MutableMapping
from typing import TYPE_CHECKING, Any, Literal

import click

from packsolve.errors import PacksolveError
from packsolve.settings import Settings, resolve

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from packsolve.queue.app import Cluster

# Where the flags that are settings leave their values, by setting name (a flag not given is absent);
# ctx.meta is shared by every context of one command line.
FLAGS_KEY = "packsolve.settings_flags"

# How a command opens its database: read-only (it must exist; nothing written, nothing created),
# an existing one it changes, or created (and migrated) if need be.
Access = Literal["read", "change", "create"]


def setting_flag(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """The callback of a flag that is a setting (its name is the setting's): note its value if given.

    A flag given to a group (`runs --database-url URL label ...`) holds for its subcommand too.
    """
    if value is not None and param.name is not None:
        ctx.meta.setdefault(FLAGS_KEY, {})[param.name] = value
    return value


class Invocation:
    """One command line: its Settings, resolved when first asked, and, opened on first use, its
    database's engine (as access says; with_database sets it) and its cluster."""

    def __init__(self, meta: MutableMapping[str, Any]) -> None:
        self._meta = meta  # the command line's ctx.meta: its setting flags, noted as they are parsed
        self.resolved: Settings | None = None
        self.access: Access = "create"
        self._engines: dict[Access, Engine] = {}
        self._cluster: Cluster | None = None

    @property
    def settings(self) -> Settings:
        """Return the command line's Settings (resolved the first time; SettingsError if a value is bad)."""
        if self.resolved is None:
            self.resolved = resolve(self._meta.get(FLAGS_KEY, {}))
            from packsolve.execution import cgroups  # here: a command that solves nothing need not load it

            # Before anything measures: a local run records this process's way, and a worker's pool
            # processes are forks of it (the local pool's are told again: they start afresh).
            cgroups.choose(self.resolved.cgroups)
        return self.resolved

    @property
    def engine(self) -> Engine:
        """Return the engine of the command's database, opened as its command declared (self.access)."""
        return self.open(self.access)

    def open(self, access: Access) -> Engine:
        """Return the engine of the database of the settings, opened for access (once per access).

        read and change raise NoDatabase where there is none.
        """
        if access not in self._engines:
            from packsolve.db.session import get_engine

            url = self.settings.database_url
            if access == "read":
                self._engines[access] = get_engine(url, read_only=True)
            else:
                self._engines[access] = get_engine(url, create=access == "create")
        return self._engines[access]

    @property
    def cluster(self) -> Cluster:
        """Return the cluster of the settings (its Celery app made now; it connects when asked)."""
        if self._cluster is None:
            from packsolve.queue.app import Cluster

            self._cluster = Cluster.of(self.settings)
        return self._cluster


def invocation_of(ctx: click.Context) -> Invocation:
    """Return the command line's Invocation, the root context's object (made now if it has none)."""
    root = ctx.find_root()
    if not isinstance(root.obj, Invocation):
        root.obj = Invocation(root.meta)
    return root.obj


_find_invocation = click.make_pass_decorator(Invocation)


def pass_invocation(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a command to receive the command line's Invocation as its first argument, its settings
    resolved as the command starts (a bad value: SettingsError before anything is done)."""

    @functools.wraps(fn)
    def resolved_first(invocation: Invocation, *args: Any, **kwargs: Any) -> Any:
        invocation.settings  # noqa: B018 (resolved now: a bad value stops the command before it starts)
        return fn(invocation, *args, **kwargs)

    return _find_invocation(resolved_first)


def accessing(access: Access) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate a command that receives the Invocation to open its database for access."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def with_access(invocation: Invocation, *args: Any, **kwargs: Any) -> Any:
            invocation.access = access
            return fn(invocation, *args, **kwargs)

        return with_access

    return decorate


class PacksolveGroup(click.Group):
    """A click group whose commands' user errors end as one line on stderr with their exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        from sqlalchemy.exc import OperationalError

        invocation_of(ctx)  # before any subcommand: each finds it (make_pass_decorator)
        try:
            return super().invoke(ctx)
        except PacksolveError as exc:
            _fail(ctx, str(exc), exc.exit_code)
        except click.UsageError as exc:
            # click would print its usage and a hint over three lines; one line, the hint in it.
            where = exc.ctx.command_path if exc.ctx is not None else ctx.command_path
            _fail(ctx, f"{exc.format_message()} (`{where} --help` says more)", exc.exit_code)
        except OperationalError as exc:
            _fail(ctx, _unreachable(ctx, exc), 1)


def _fail(ctx: click.Context, message: str, exit_code: int) -> None:
    from packsolve.report.text import visible

    # As click shows its own errors: "Error: " and the message on stderr; a level's name in it moves
    # no cursor and breaks no line.
    click.echo(f"Error: {visible(message)}", err=True)
    ctx.exit(exit_code)


def _unreachable(ctx: click.Context, exc: Any) -> str:
    """Return the one line saying which database could not be used and what the driver said first."""
    from packsolve.db.session import database_url, shown_database

    invocation = ctx.find_root().obj
    resolved = invocation.resolved if isinstance(invocation, Invocation) else None
    given = resolved.database_url if resolved is not None else _flag(ctx, "database_url")
    where = shown_database(database_url(given))
    # The driver's message can run over several lines; its first says what happened.
    first = next((line for line in str(exc.orig).splitlines() if line.strip()), "")
    return f"database error at {where}: {first.strip()} (is it running, and is the URL right?)"


def _flag(ctx: click.Context, name: str) -> Any:
    """Return a setting's flag as given on the command line (None: not given)."""
    return ctx.meta.get(FLAGS_KEY, {}).get(name)
