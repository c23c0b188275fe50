"""Secrets out of what is shown, logged or stored: the one masking of URLs, free text and command lines.

A URL may carry a secret in its password, its query (``?password=``, ``?token=``) or its fragment:
all three are shown as ``***``. A command line is stored on its run (provenance): the values of
the options that are secrets as a whole (a notification command with its bearer token, a webhook
whose path is the token) are replaced by ``***``, and every URL in the rest is masked.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import urlsplit, urlunsplit

MASK = "***"
# Options whose whole value is a secret: --notify's command (a token in a header), --notify-url
# (a webhook's path is often its token), and the dashboard's token.
SECRET_OPTIONS = ("--notify", "--notify-url", "--token")
# A URL in free text: a scheme, then everything up to a space or a quote.
_URL_IN_TEXT = re.compile(r"\b[a-zA-Z][\w+.-]*://[^\s'\"<>]+")


def mask_url(url: str) -> str:
    """Return url as it may be shown or stored: its password, query values and fragment as ***.

    The user name, host, port and path stay (they say where, not how to get in). A URL that does
    not parse cleanly (a password with an unescaped / # ? in it) keeps its scheme only.
    """
    try:
        parts = urlsplit(url)
        user, password = parts.username, parts.password
        parts.port  # noqa: B018 (raises ValueError for a password mistaken for a port)
    except ValueError:
        return _scheme_only(url)
    if "@" in url and "@" not in parts.netloc:  # the userinfo was cut by a # or ? inside the password
        return _scheme_only(url)
    if password is None and not parts.query and not parts.fragment:
        return url  # nothing to hide: as given (urlunsplit would drop sqlite:///'s empty host)
    netloc = parts.netloc
    if password is not None:
        netloc = f"{user or ''}:{MASK}@{netloc.rsplit('@', 1)[1]}"
    query = "&".join(_masked_field(field) for field in parts.query.split("&")) if parts.query else ""
    masked = parts._replace(netloc=netloc, query=query, fragment=MASK if parts.fragment else "")
    if "://" not in url:
        return urlunsplit(masked)
    return (
        f"{masked.scheme}://{masked.netloc}{masked.path}"
        + (f"?{masked.query}" if parts.query else "")
        + (f"#{masked.fragment}" if parts.fragment else "")
    )


def _masked_field(field: str) -> str:
    name, equals, _ = field.partition("=")
    return f"{name}={MASK}" if equals else MASK


def _scheme_only(url: str) -> str:
    scheme, sep, _ = url.partition("://")
    return f"{scheme}://{MASK}" if sep else MASK


def mask_text(text: str) -> str:
    """Return text (a message, a log line, one word of a command line) with every URL in it masked."""
    return _URL_IN_TEXT.sub(_masked_match, text)


def _masked_match(match: re.Match[str]) -> str:
    # Punctuation closing a sentence or a parenthesis is the text's, not the URL's.
    url = match.group(0).rstrip(").,;:]")
    return mask_url(url) + match.group(0)[len(url) :]


def mask_argv(argv: Iterable[str]) -> list[str]:
    """Return a command line as it may be stored: secret options' values as ***, every URL masked."""
    masked: list[str] = []
    hide_next = False
    for word in argv:
        name, equals, _ = word.partition("=")
        if hide_next:
            masked.append(MASK)
        elif equals and name in SECRET_OPTIONS:
            masked.append(f"{name}={MASK}")
        else:
            masked.append(mask_text(word))
        hide_next = not hide_next and word in SECRET_OPTIONS
    return masked
