"""The packsolve group: one Settings per command line, and one line for every error a user can fix.

Every command runs inside ``PacksolveGroup.invoke``. A ``PacksolveError`` leaves as ``Error: ...``
on stderr with the exit code of its class (errors.py); a database that cannot be reached leaves
as one line naming it. Anything else is a bug in packsolve and keeps its traceback.

The settings of a command line are resolved once (settings_of): its flags that are settings
(--database-url, --broker-url, ...: each noted by setting_flag), then the environment, the
[settings] table of ./packsolve.toml and the defaults (packsolve.settings.resolve). The result
is the root context's object; a command receives it with @pass_settings and hands what it
needs down to the functions it calls. A bad value is a SettingsError: one line each, exit 2.
It is resolved when the command starts, not in the group's callback: a subcommand's flags are
parsed after that runs (and `packsolve status --help` needs no valid settings).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import click

from packsolve.errors import PacksolveError
from packsolve.settings import Settings, resolve

# Where the flags that are settings leave their values, by setting name (a flag not given is absent);
# ctx.meta is shared by every context of one command line.
FLAGS_KEY = "packsolve.settings_flags"


def setting_flag(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """The callback of a flag that is a setting (its name is the setting's): note its value if given.

    A flag given to a group (`runs --database-url URL label ...`) holds for its subcommand too.
    """
    if value is not None and param.name is not None:
        ctx.meta.setdefault(FLAGS_KEY, {})[param.name] = value
    return value


def settings_of(ctx: click.Context) -> Settings:
    """Return the command line's Settings, resolved on first use from its flags, the environment
    and ./packsolve.toml, then kept as the root context's object (ctx.obj).

    Raise SettingsError (one line per bad value) if any is bad.
    """
    root = ctx.find_root()
    if not isinstance(root.obj, Settings):
        root.obj = resolve(ctx.meta.get(FLAGS_KEY, {}))
    return root.obj


def pass_settings(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a command to receive the command line's Settings as its first argument (as click.pass_obj)."""

    @functools.wraps(fn)
    def with_settings(*args: Any, **kwargs: Any) -> Any:
        return fn(settings_of(click.get_current_context()), *args, **kwargs)

    return with_settings


class PacksolveGroup(click.Group):
    """A click group whose commands' user errors end as one line on stderr with their exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        from sqlalchemy.exc import OperationalError

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

    resolved = ctx.find_root().obj
    given = resolved.database_url if isinstance(resolved, Settings) else _flag(ctx, "database_url")
    where = shown_database(database_url(given))
    # The driver's message can run over several lines; its first says what happened.
    first = next((line for line in str(exc.orig).splitlines() if line.strip()), "")
    return f"database error at {where}: {first.strip()} (is it running, and is the URL right?)"


def _flag(ctx: click.Context, name: str) -> Any:
    """Return a setting's flag as given on the command line (None: not given)."""
    return ctx.meta.get(FLAGS_KEY, {}).get(name)
