"""The errors a user can cause and fix: the only ones the CLI turns into a one-line message.

Anything else that escapes a command is a bug in packsolve and keeps its traceback.
One subclass per exit code the CLI leaves with (cli/group.py maps them once): ``UsageError``, 2,
for a command asked something that cannot work (a bad option, a path that does not exist, an
unknown run); ``ServiceError``, 1, for a run that could not be carried out (the broker or the
database cannot be reached). Every error below derives from one of the two.
"""

from __future__ import annotations

from typing import ClassVar


class PacksolveError(Exception):
    """Something the user can fix; str() is the whole message, one line, saying what would work.

    Raised as one of its subclasses below, whose class gives the exit code.
    """

    exit_code: ClassVar[int] = 1

    def __str__(self) -> str:
        # KeyError-style quoting never applies: the message is shown as written.
        return str(self.args[0]) if self.args else self.__class__.__name__


class UsageError(PacksolveError):
    """The command was asked something that cannot work as given; exit code 2."""

    exit_code = 2


class ServiceError(PacksolveError):
    """A service the command needs (the broker, the database) cannot be reached or used; exit code 1."""

    exit_code = 1


class LevelError(UsageError, ValueError):
    """A level that cannot be parsed; the message says what a person should fix."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column

    def where(self) -> str:
        if self.line is None:
            return ""
        return f"line {self.line}" + (f", column {self.column}" if self.column else "")

    def __str__(self) -> str:
        where = self.where()
        return f"{where}: {self.message}" if where else self.message


class PlanError(UsageError):
    """The request cannot make a run (no levels, unknown heuristic, bad limits); the message says why."""


class OptionError(PlanError):
    """A command-line option has a value that cannot work; the message names the option."""

    def __init__(self, option: str, reason: str) -> None:
        super().__init__(f"Invalid value for '{option}': {reason}")
        self.option = option
        self.reason = reason


class UnknownKind(UsageError):
    """No puzzle kind has this name; the message lists the known ones."""


class UnknownHeuristic(UsageError):
    """A kind has no heuristic of this name; the message lists its choices."""


class SolverFileError(UsageError):
    """A solver declaration file (packsolve.toml, --solvers FILE) is missing or malformed."""


class RunNotFound(UsageError):
    """No run has this id or label (or the database has no run yet)."""


class LevelNotFound(UsageError):
    """No level file, name or hash matches the reference (or it is ambiguous)."""


class ReportError(UsageError):
    """A report cannot be made as asked (a run named twice, a run not among those compared)."""


class BrokerError(ServiceError):
    """The broker cannot be reached or read."""


class DatabaseError(ServiceError):
    """The database cannot be reached or used."""


class DatabaseUrlError(UsageError):
    """The database URL cannot work (no scheme, an unknown or missing driver); the message says what would."""


class NoDatabase(UsageError):
    """A command that only reads found no database where it looked (it never creates one)."""
