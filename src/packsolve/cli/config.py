"""`packsolve config`: the effective settings and where each came from."""

from __future__ import annotations

import json

import click

from packsolve.cli.group import Invocation
from packsolve.cli.options import with_cluster
from packsolve.settings import env_name


@click.command("config")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@with_cluster()
def config(invocation: Invocation, fmt: str) -> None:
    """Print the effective settings and where each came from: flag, environment, file or default.

    A line per setting: its name, its value, then [source; environment variable].

    Each setting is read from its flag where a command has one, else the environment
    (PACKSOLVE_ and the name in capitals), else the [settings] table of ./packsolve.toml,
    else its default. Secrets (task keys, the dashboard's token) and passwords in URLs are
    hidden. A bad value is an error, one line per value (exit 2).
    """
    shown = invocation.settings.shown()
    if fmt == "json":
        click.echo(json.dumps(shown, indent=2))
        return
    # One line per setting, never wrapped: a URL stays whole for a person to read and a script to cut.
    for name, entry in shown.items():
        value = entry["value"]
        if isinstance(value, list):
            value = ",".join(value) or None
        text = "(unset)" if value is None else str(value)
        click.echo(f"{name:<19} {text}  [{entry['source']}; {env_name(name)}]")
