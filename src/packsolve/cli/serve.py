"""`packsolve serve`: the live web dashboard over the results database; `packsolve metrics`: /metrics."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import click

from packsolve.cli.group import Invocation
from packsolve.cli.options import err_console, setting_option, with_cluster
from packsolve.errors import OptionError

DEFAULT_PORT = 8787
# Prometheus' own list of default ports gives none to packsolve; this one is free there.
DEFAULT_METRICS_PORT = 9787


def listen_options(default_port: int, each: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The options of a command that listens: --host, --port, --token-file (what each request carries)."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        # Applied innermost first: --host is listed first in --help.
        fn = setting_option("--token", "serve_token", hidden=True)(fn)
        fn = click.option(
            "--token-file",
            type=click.Path(dir_okay=False),
            default=None,
            help=f"File holding the token every {each} must carry (or PACKSOLVE_SERVE_TOKEN).",
        )(fn)
        fn = click.option(
            "--port",
            type=click.IntRange(0, 65535),
            default=default_port,
            show_default=True,
            help="Port to listen on (0: any free one, printed).",
        )(fn)
        return click.option(
            "--host",
            default="127.0.0.1",
            show_default=True,
            help="Address to listen on; any but loopback needs a token.",
        )(fn)

    return decorate


def _listen(host: str, port: int) -> socket.socket:
    """Return a socket bound to host:port; OptionError saying what would work if it cannot be."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror:
        raise OptionError("--host", f"{host!r} is not an address of this machine; try 127.0.0.1") from None
    family, _, _, _, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        what = "is in use" if exc.errno == 98 else f"cannot be bound ({exc.strerror})"
        raise OptionError("--port", f"{host}:{port} {what}; choose another port (0: any free one)") from None
    sock.listen(128)
    return sock


@click.command()
@listen_options(DEFAULT_PORT, "request")
@click.option("--read-only", is_flag=True, help="Serve no action: no rerun, cancel, resume, label or delete.")
@with_cluster()
def serve(invocation: Invocation, host: str, port: int, token_file: str | None, read_only: bool) -> None:
    """Serve the live dashboard of runs, levels and reruns over the database; print its URL.

    It binds 127.0.0.1 unless told otherwise; another address needs a token
    (PACKSOLVE_SERVE_TOKEN or --token-file) that every request then carries.
    """
    import uvicorn

    from packsolve.db.session import shown_database
    from packsolve.web.app import create_app
    from packsolve.web.security import Guard, check_bind, loopback_hosts, read_token

    settings = invocation.settings
    secret = read_token(settings.serve_token, token_file)
    check_bind(host, secret)
    # A dashboard never creates a database (a mistyped path would show an empty one); a read-only one
    # opens it read-only: the figures it would keep for later are computed for each request instead.
    engine = invocation.open("read" if read_only else "change")
    sock = _listen(host, port)
    bound = sock.getsockname()[1]
    # Without a token the loopback bind is the only guard: a page of another name, resolved to this
    # address (DNS rebinding), must not be answered. A token set, the token guards instead.
    hosts = None if secret else loopback_hosts(host, bound)
    app = create_app(settings, Guard(secret, hosts), read_only, engine, invocation.cluster)
    shown_host = f"[{host}]" if ":" in host else host
    err_console.print(
        f"packsolve serve: http://{shown_host}:{bound}/ on {shown_database(engine.url)}"
        + (" (read-only)" if read_only else "")
        + (" (token required)" if secret else ""),
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    config = uvicorn.Config(app, log_level="warning", access_log=False, server_header=False)
    uvicorn.Server(config).run(sockets=[sock])


@click.command()
@listen_options(DEFAULT_METRICS_PORT, "scrape")
@with_cluster(access="read")
def metrics(invocation: Invocation, host: str, port: int, token_file: str | None) -> None:
    """Serve the cluster's Prometheus metrics at /metrics, without the dashboard; print the URL.

    Read from the database and the broker at each scrape (docs/operations.md lists them). It binds
    127.0.0.1 unless told otherwise; another address needs a token (PACKSOLVE_SERVE_TOKEN or
    --token-file), sent as `Authorization: Bearer TOKEN`.
    """
    import uvicorn

    from packsolve.db.session import shown_database
    from packsolve.web.app import metrics_app
    from packsolve.web.security import Guard, check_bind, loopback_hosts, read_token

    settings = invocation.settings
    secret = read_token(settings.serve_token, token_file)
    check_bind(host, secret)
    engine = invocation.open("read")
    sock = _listen(host, port)
    bound = sock.getsockname()[1]
    hosts = None if secret else loopback_hosts(host, bound)
    app = metrics_app(settings, engine, invocation.cluster, Guard(secret, hosts))
    shown_host = f"[{host}]" if ":" in host else host
    err_console.print(
        f"packsolve metrics: http://{shown_host}:{bound}/metrics on {shown_database(engine.url)}, "
        f"broker {invocation.cluster.shown_broker}" + (" (token required)" if secret else ""),
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    config = uvicorn.Config(app, log_level="warning", access_log=False, server_header=False)
    uvicorn.Server(config).run(sockets=[sock])
