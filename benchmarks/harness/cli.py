"""The argument parser every benchmark starts from: its module docstring is its --help."""

from __future__ import annotations

import argparse
import sys


def parser(doc: str | None) -> argparse.ArgumentParser:
    """Return an ArgumentParser whose description is the benchmark's docstring, laid out as written.

    Its usage line names the benchmark as it is run, `python -m benchmarks.NAME`.
    """
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    prog = f"python -m {spec.name.removesuffix('.__main__')}" if spec is not None else None
    return argparse.ArgumentParser(
        prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
