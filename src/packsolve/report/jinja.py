"""The Jinja2 environment of packsolve's pages: the HTML report's and the dashboard's alike."""

from __future__ import annotations

from jinja2 import Environment, PackageLoader, select_autoescape


def environment(package: str) -> Environment:
    """Return an environment over package's templates/ folder, autoescaped: what a level holds is text."""
    return Environment(
        loader=PackageLoader(package, "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
