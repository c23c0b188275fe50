"""The registry of puzzle kinds: name -> PuzzleKind, from three sources, each imported on first use.

- built-in: the eight kinds of this package (their names cannot be taken by anything else);
- plug-in: any installed distribution's entry point in the group ``packsolve.kinds``, value
  ``module:OBJECT`` where OBJECT is a ``packsolve.api.PuzzleKind`` (docs/plugins.md);
- ``PACKSOLVE_EXTRA_KINDS="name:module,..."``: a module's ``KIND``, for tests.

A plug-in that cannot be loaded (import error, wrong object, a name already taken) is left
out with the reason (``sources()``, ``packsolve kinds``); it never breaks the other kinds.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from packsolve import __version__
from packsolve.api import PuzzleKind
from packsolve.errors import UnknownKind

ENTRY_POINT_GROUP = "packsolve.kinds"

# Explicit: a kind exists when it is listed here. Modules are imported lazily so
# that a command touching one kind does not pay for the others' start-up.
_MODULES = {
    "onestroke": "packsolve.puzzles.onestroke",
    "knights_tour": "packsolve.puzzles.knights_tour",
    "sudoku": "packsolve.puzzles.sudoku",
    "sliding": "packsolve.puzzles.sliding",
    "tictactoe": "packsolve.puzzles.tictactoe",
    "coins": "packsolve.puzzles.coins",
    "floodfill": "packsolve.puzzles.floodfill",
    "euler": "packsolve.puzzles.euler",
}


class KindOrigin(StrEnum):
    """Where a kind comes from (a run records it with the kind's version)."""

    BUILT_IN = "built-in"
    PLUG_IN = "plug-in"
    EXTRA = "PACKSOLVE_EXTRA_KINDS"  # named by the PACKSOLVE_EXTRA_KINDS setting (e.g. test-only kinds)


@dataclass(frozen=True)
class KindSource:
    """Where a kind comes from: built in, a plug-in distribution, or PACKSOLVE_EXTRA_KINDS.

    ``target`` is what is imported (``module`` or ``module:OBJECT``); ``error`` says why the
    kind cannot be used (None once it has loaded, or before anyone tried).
    """

    name: str
    origin: KindOrigin
    target: str
    distribution: str
    version: str
    error: str | None = None

    def describe(self) -> str:
        """Return one line for people: "built-in", "packsolve-lightsout 0.2.0", ..."""
        if self.origin is KindOrigin.BUILT_IN:
            return KindOrigin.BUILT_IN.value
        if self.origin is KindOrigin.PLUG_IN:
            return f"{self.distribution} {self.version}"
        return f"PACKSOLVE_EXTRA_KINDS ({self.target})"

    def provenance(self) -> dict[str, str]:
        """Return the JSON a run records for the kind: source (distribution) and version."""
        return {"source": self.distribution, "version": self.version, "origin": self.origin.value}


def _extra_modules() -> dict[str, str]:
    """Return the kinds of PACKSOLVE_EXTRA_KINDS ("name:module,..."), e.g. test-only kinds."""
    from packsolve.settings import current

    return dict(current().extra_kinds)


def _entry_points() -> list[tuple[str, str, str, str]]:
    """Return (name, value, distribution, version) of every packsolve.kinds entry point installed."""
    found = []
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = ep.dist
        name = dist.metadata["Name"] if dist is not None else "(unknown distribution)"
        version = dist.version if dist is not None else "?"
        found.append((ep.name, ep.value, name or "(unnamed distribution)", version or "?"))
    return sorted(found)


class _Registry(Mapping[str, PuzzleKind]):
    """A read-only mapping of the kinds that can be used; the broken ones are in sources()."""

    def __init__(self) -> None:
        self._loaded: dict[str, PuzzleKind] = {}
        self._broken: dict[str, str] = {}  # plug-in name -> why it cannot be loaded
        self._plugins: dict[str, KindSource] | None = None
        self._rejected: list[KindSource] = []  # entry points whose name was taken already

    def refresh(self) -> None:
        """Forget every kind found and loaded (after installing a plug-in into this process's path)."""
        self._loaded.clear()
        self._broken.clear()
        self._plugins = None
        self._rejected = []
        importlib.invalidate_caches()

    def _plugin_sources(self) -> dict[str, KindSource]:
        """Return the plug-in entry points by name, found once; a name taken is marked broken."""
        if self._plugins is None:
            plugins: dict[str, KindSource] = {}
            for name, value, dist, version in _entry_points():
                source = KindSource(name, KindOrigin.PLUG_IN, value, dist, version)
                if name in _MODULES:
                    why = f"{dist} {version} declares kind {name!r}, a built-in name that cannot be replaced"
                    self._rejected.append(replace(source, error=why + ": rename its entry point"))
                elif name in plugins and plugins[name].distribution != dist:
                    first = plugins[name]
                    why = f"{dist} {version} declares kind {name!r}, already declared by {first.distribution}"
                    self._rejected.append(
                        replace(source, error=f"{why} {first.version}: uninstall one of them")
                    )
                else:
                    plugins.setdefault(name, source)
            self._plugins = plugins
        return self._plugins

    def sources(self) -> list[KindSource]:
        """Return every kind found, built-in first, each loaded once to learn whether it works."""
        out = [
            KindSource(name, KindOrigin.BUILT_IN, module, "packsolve", __version__)
            for name, module in _MODULES.items()
        ]
        plugins = self._plugin_sources()
        for name, source in plugins.items():
            self._load(name)
            out.append(replace(source, error=self._broken.get(name)))
        out.extend(self._rejected)  # declarations that lost to a built-in or an earlier plug-in
        for name, module in _extra_modules().items():
            if name not in _MODULES and name not in plugins:
                self._load(name)
                source = KindSource(name, KindOrigin.EXTRA, module, module, __version__)
                out.append(replace(source, error=self._broken.get(name)))
        return out

    def source(self, name: str) -> KindSource | None:
        """Return where the kind called name comes from; None if no source declares it."""
        if name in _MODULES:
            return KindSource(name, KindOrigin.BUILT_IN, _MODULES[name], "packsolve", __version__)
        plugin = self._plugin_sources().get(name)
        if plugin is not None:
            return plugin
        module = _extra_modules().get(name)
        return None if module is None else KindSource(name, KindOrigin.EXTRA, module, module, __version__)

    def _load(self, name: str) -> PuzzleKind | None:
        """Return the kind called name, importing it once; None if it is not there or broken."""
        if name in self._loaded:
            return self._loaded[name]
        if name in self._broken:
            return None
        if name in _MODULES:
            kind = _import_module_kind(_MODULES[name])
        elif name in self._plugin_sources():
            kind = self._load_plugin(self._plugin_sources()[name])
        elif name in _extra_modules():
            kind = self._load_extra(name, _extra_modules()[name])
        else:
            return None
        if kind is not None:
            self._loaded[name] = kind
        return kind

    def _load_plugin(self, source: KindSource) -> PuzzleKind | None:
        """Import a plug-in's object; on any failure remember why and return None."""
        module, _, attr = source.target.partition(":")
        try:
            obj: Any = importlib.import_module(module.strip())
            for part in attr.strip().split(".") if attr.strip() else []:
                obj = getattr(obj, part)
        except (Exception, SystemExit) as exc:  # anything a third-party module does on import
            self._broken[source.name] = (
                f"plug-in {source.distribution} {source.version} could not load {source.target}: "
                f"{type(exc).__name__}: {exc}"
            )
            return None
        return self._checked(source, obj)

    def _load_extra(self, name: str, module: str) -> PuzzleKind | None:
        """Import a PACKSOLVE_EXTRA_KINDS module's KIND; None if the module is not there."""
        kind = _import_module_kind(module)
        if kind is not None and kind.name != name:
            self._broken[name] = f"PACKSOLVE_EXTRA_KINDS names {name!r} but {module}.KIND is {kind.name!r}"
            return None
        return kind

    def _checked(self, source: KindSource, obj: Any) -> PuzzleKind | None:
        """Return obj if it is a usable PuzzleKind called like its entry point; else note why, None."""
        where = f"plug-in {source.distribution} {source.version}: {source.target}"
        if not isinstance(obj, PuzzleKind):
            self._broken[source.name] = f"{where} is a {type(obj).__name__}, not a packsolve.api.PuzzleKind"
            return None
        if obj.name != source.name:
            self._broken[source.name] = (
                f"{where} is a kind called {obj.name!r}, but its entry point is named {source.name!r}: "
                "make them equal"
            )
            return None
        if obj.default not in obj.solvers:
            self._broken[source.name] = (
                f"{where}: its default heuristic {obj.default!r} is not among its solvers"
            )
            return None
        return obj

    def why_broken(self, name: str) -> str | None:
        """Return why the kind called name cannot be loaded, or None."""
        self._load(name)
        return self._broken.get(name)

    def __getitem__(self, name: str) -> PuzzleKind:
        kind = self._load(name)
        if kind is None:
            raise KeyError(name)
        return kind

    def _names(self) -> list[str]:
        names = list(_MODULES)
        names += [n for n in self._plugin_sources() if n not in names]
        names += [n for n in _extra_modules() if n not in names]
        return names

    def __iter__(self) -> Iterator[str]:
        # Built-ins are listed without importing them; plug-ins are loaded to leave the broken out.
        for name in self._names():
            if name in _MODULES or self._load(name) is not None:
                yield name

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in _MODULES or self._load(name) is not None)


def _import_module_kind(module: str) -> PuzzleKind | None:
    """Return module.KIND; None if the module itself is missing (an import error inside it raises)."""
    try:
        return importlib.import_module(module).KIND  # type: ignore[no-any-return]
    except ModuleNotFoundError as exc:
        if exc.name == module:
            return None
        raise


KINDS: _Registry = _Registry()


def get_kind(name: str) -> PuzzleKind:
    """Return the kind called name; raise UnknownKind saying why (unknown, or a broken plug-in)."""
    try:
        return KINDS[name]
    except KeyError:
        broken = KINDS.why_broken(name)
        if broken is not None:
            raise UnknownKind(f"kind {name!r} cannot be used: {broken}") from None
        known = ", ".join(KINDS)
        raise UnknownKind(f"unknown kind {name!r} (known: {known})") from None


def kind_provenance(names: list[str] | set[str]) -> dict[str, dict[str, str]]:
    """Return {name: {source, version, origin}} for these kinds, as a run records them (unknown: left out)."""
    out = {}
    for name in sorted(names):
        source = KINDS.source(name)
        if source is not None:
            out[name] = source.provenance()
    return out


def offered() -> dict[str, dict[str, str]]:
    """Return what this process can solve: {kind: {source, version, origin}} for every usable kind."""
    return kind_provenance(set(KINDS))


__all__ = ["ENTRY_POINT_GROUP", "KINDS", "KindSource", "PuzzleKind", "get_kind", "kind_provenance", "offered"]
