"""Who may use the dashboard: the loopback rule, the access token (cookie or header), the Host a
dashboard without a token answers, the origin of a POST, and CSRF tokens.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
import shlex
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from packsolve.errors import OptionError

COOKIE = "packsolve_token"
HEADER = "x-packsolve-token"
# A token shorter than this is guessable from the network.
MIN_TOKEN = 16


def is_loopback(host: str) -> bool:
    """Return True if binding host serves this machine only (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def read_token(token: str | None, token_file: str | None) -> str | None:
    """Return the access token from PACKSOLVE_SERVE_TOKEN's value or --token-file; OptionError if unusable."""
    if token_file:
        try:
            token = Path(token_file).read_text(encoding="utf-8").strip()
            mode = Path(token_file).stat().st_mode
        except OSError as exc:
            raise OptionError("--token-file", f"{token_file}: {exc.strerror}; name a readable file") from None
        if mode & 0o077:  # as ssh does for a key: a secret others can read is no secret
            raise OptionError(
                "--token-file",
                f"{token_file} can be read or changed by other users (mode {stat.S_IMODE(mode):o}): "
                f"chmod 600 {shlex.quote(token_file)}",
            )
    if token is None:
        return None
    token = token.strip()
    if len(token) < MIN_TOKEN:
        raise OptionError(
            "--token-file" if token_file else "PACKSOLVE_SERVE_TOKEN",
            f"a token of {len(token)} characters is guessable; use {MIN_TOKEN} or more "
            "(e.g. `python -c 'import secrets; print(secrets.token_urlsafe())'`)",
        )
    return token


def safe_next(target: str | None) -> str:
    """Return where the login form sends the user back: target if a path on this site, else /.

    Only a relative path is followed: "//host", "/\\host" or "https://host" would send a user who
    just typed the token to another site.
    """
    if not target or not target.startswith("/") or target.startswith("//"):
        return "/"
    return "/" if any(ord(c) < 32 or c == "\\" for c in target) else target


def check_bind(host: str, token: str | None) -> None:
    """Raise OptionError if host is reachable from other machines and no token protects the dashboard."""
    if token is None and not is_loopback(host):
        raise OptionError(
            "--host",
            f"{host} is reachable from other machines: set PACKSOLVE_SERVE_TOKEN or --token-file to a secret "
            "every request must carry, or bind 127.0.0.1",
        )


def loopback_hosts(host: str, port: int) -> frozenset[str]:
    """Return the Host headers a loopback dashboard on port answers: its loopback names with the port.

    A name of the attacker's (a DNS-rebinding domain resolved to 127.0.0.1) is none of them, so a page
    of that domain in the user's browser reads nothing, not even the CSRF token.
    """
    names = {"127.0.0.1", "localhost", "[::1]", f"[{host}]" if ":" in host else host}
    # A browser leaves out port 80 of an http:// address.
    return frozenset(f"{name}:{port}" for name in names) | (frozenset(names) if port == 80 else frozenset())


# The browser's word on who sent a request: same-origin is the dashboard's own page, none the user
# typing the URL; anything else (same-site, cross-site) is another page.
_OWN_FETCH = ("same-origin", "none")


def same_origin(headers: Mapping[str, str]) -> bool:
    """Return False if the browser says a request came from another page (Origin or Sec-Fetch-Site).

    A client that sends neither (curl, a script) is not a browser page: the CSRF token still applies.
    """
    site = headers.get("sec-fetch-site")
    if site is not None and site not in _OWN_FETCH:
        return False
    origin = headers.get("origin")
    return origin is None or urlsplit(origin).netloc == headers.get("host", "")


@dataclass(frozen=True)
class Guard:
    """The server's secrets and rules: the access token (None: loopback, open), the Host headers
    answered (None: any; set for a dashboard without a token) and this process's CSRF token."""

    token: str | None = None
    hosts: frozenset[str] | None = None
    csrf: str = field(default_factory=secrets.token_urlsafe)

    def serves_host(self, host: str | None) -> bool:
        """Return True if a request with this Host header may be answered."""
        return self.hosts is None or (host or "").lower() in self.hosts

    def admits(self, cookie: str | None, header: str | None) -> bool:
        """Return True if the request may see the dashboard (no token set, or it carries the token)."""
        if self.token is None:
            return True
        return any(v is not None and hmac.compare_digest(v, self.token) for v in (cookie, header))

    def token_matches(self, given: str) -> bool:
        """Return True if given is the access token (the login form's check)."""
        return self.token is not None and hmac.compare_digest(given.strip(), self.token)

    def csrf_matches(self, given: str | None) -> bool:
        """Return True if a form carried this process's CSRF token."""
        return given is not None and hmac.compare_digest(given, self.csrf)
