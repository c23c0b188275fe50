"""`packsolve serve`: the live web dashboard over the results database."""

from __future__ import annotations

import socket

import click

from packsolve.cli.group import pass_settings
from packsolve.cli.options import broker_option, database_option, err_console, setting_option
from packsolve.errors import OptionError
from packsolve.settings import FLAG, Settings

DEFAULT_PORT = 8787


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
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on; any but loopback needs a token.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="Port to listen on (0: any free one, printed).",
)
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False),
    default=None,
    help="File holding the token every request must carry (or PACKSOLVE_SERVE_TOKEN).",
)
@setting_option("--token", "serve_token", hidden=True)
@click.option("--read-only", is_flag=True, help="Serve no action: no rerun, cancel, resume, label or delete.")
@database_option
@broker_option
@pass_settings
def serve(settings: Settings, host: str, port: int, token_file: str | None, read_only: bool) -> None:
    """Serve the live dashboard of runs, levels and reruns over the database; print its URL.

    It binds 127.0.0.1 unless told otherwise; another address needs a token
    (PACKSOLVE_SERVE_TOKEN or --token-file) that every request then carries.
    """
    import uvicorn

    from packsolve.db.session import get_engine, shown_database
    from packsolve.web.app import create_app
    from packsolve.web.security import Guard, check_bind, loopback_hosts, read_token

    secret = read_token(settings.serve_token, token_file)
    check_bind(host, secret)
    # A dashboard never creates a database (a mistyped path would show an empty one); a read-only one
    # opens it read-only: the figures it would keep for later are computed for each request instead.
    engine = get_engine(settings.database_url, create=False, read_only=read_only)
    sock = _listen(host, port)
    # The commands it starts (rerun, resume) get the broker by flag only if this one had it so.
    broker_url = settings.broker_url if settings.source("broker_url") == FLAG else None
    bound = sock.getsockname()[1]
    # Without a token the loopback bind is the only guard: a page of another name, resolved to this
    # address (DNS rebinding), must not be answered. A token set, the token guards instead.
    hosts = None if secret else loopback_hosts(host, bound)
    app = create_app(engine, Guard(secret, hosts), read_only, broker_url)
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
