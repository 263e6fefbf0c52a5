"""The component registry: entry points, runtime registration, lookup with suggestions.

Groups (one per kind)::

    dphist.initializers  dphist.sorters  dphist.partitioners  dphist.finalizers
    dphist.algorithms    dphist.datasets

A plugin distribution declares, in its ``pyproject.toml``::

    [project.entry-points."dphist.partitioners"]
    "my.partitioner" = "my_package.module:MyPartitioner"

The core's built-ins are registered the same way.  Listing reads metadata
only; a component is imported on first use.  A plugin whose metadata is
malformed, or whose import fails, is reported with its distribution and error
(``dphist list``) while everything else keeps working; ``strict=True`` (or
environment ``DPHIST_STRICT_PLUGINS=1``, for CI) turns any such problem into
:class:`~dphist.errors.BrokenPlugin`.

Plugins depend on the core only.  A preset that uses another plugin's component
names it in the pipeline by its registry name and declares it,
``@preset(..., requires=("partitioner:dawa.l1",))``; when that component is not
registered (its plugin is not installed) or is broken, the preset is
*unavailable*: :meth:`Registry.unavailable` gives the reason ("needs
dphist-dawa"), ``dphist list`` shows it, and :meth:`Registry.get` raises
:class:`~dphist.errors.UnavailableComponent` with it.  Component names carry
their plugin's prefix (``dawa.l1`` comes from ``dphist-dawa``).
"""
from __future__ import annotations

import difflib
import importlib
import os
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

from . import _entrypoints
from .errors import BrokenPlugin, DuplicateComponent, InvalidParameter, UnavailableComponent, UnknownComponent

GROUPS = {
    "initializer": "dphist.initializers",
    "sorter": "dphist.sorters",
    "partitioner": "dphist.partitioners",
    "finalizer": "dphist.finalizers",
    "algorithm": "dphist.algorithms",
    "dataset": "dphist.datasets",
}
RUNTIME = "<runtime>"


@dataclass
class Entry:
    """One registered name: where it comes from, and (once loaded) the object."""

    kind: str
    name: str
    distribution: str
    target: str
    loaded: Any = None
    error: str | None = None
    conflicts: list[str] = field(default_factory=list)
    _ep: Any = None

    @property
    def ok(self) -> bool:
        return self.error is None and not self.conflicts


@dataclass(frozen=True)
class Problem:
    """A broken plugin: which distribution, which name (if any), what went wrong."""

    distribution: str
    kind: str
    name: str
    error: str

    def __str__(self) -> str:
        where = f"{self.kind} '{self.name}'" if self.name else "entry-point metadata"
        return f"{self.distribution}: {where}: {self.error}"


class Registry:
    """Discovers entry points lazily; loads on demand; accepts runtime registrations."""

    def __init__(self, strict: bool | None = None, path: list[str] | None = None):
        if strict is None:
            strict = os.environ.get("DPHIST_STRICT_PLUGINS", "") not in ("", "0", "false")
        self.strict = strict
        self.path = path
        self._entries: dict[str, dict[str, Entry]] | None = None
        self._metadata_problems: list[Problem] = []

    # ------------------------------------------------------------- discovery
    def refresh(self) -> None:
        """Forget everything found by discovery (runtime registrations are kept)."""
        runtime = [e for d in (self._entries or {}).values() for e in d.values() if e.distribution == RUNTIME]
        self._entries = None
        self._discover()
        for e in runtime:
            self._entries[e.kind][e.name] = e

    def _discover(self) -> dict[str, dict[str, Entry]]:
        if self._entries is not None:
            return self._entries
        kind_of = {g: k for k, g in GROUPS.items()}
        records, problems = _entrypoints.scan(GROUPS.values(), self.path)
        self._metadata_problems = [Problem(p.distribution, "", "", f"{p.error} (in {p.path})") for p in problems]
        entries: dict[str, dict[str, Entry]] = {k: {} for k in GROUPS}
        for r in records:
            kind = kind_of[r.group]
            dist = r.distribution.replace("_", "-")
            old = entries[kind].get(r.name)
            if old is not None:
                if old.distribution != dist:
                    old.conflicts.append(dist)
                continue
            entries[kind][r.name] = Entry(kind, r.name, dist, r.target, _ep=r.entry_point)
        self._entries = entries
        if self.strict:
            self._raise_if_broken(load=False)
        return entries

    def _check_kind(self, kind: str) -> None:
        if kind not in GROUPS:
            raise InvalidParameter(f"unknown kind {kind!r}; kinds are {', '.join(GROUPS)}")

    def entries(self, kind: str | None = None) -> list[Entry]:
        """Registered entries (metadata only, nothing imported), sorted by kind and name."""
        found = self._discover()
        kinds = [kind] if kind else list(GROUPS)
        for k in kinds:
            self._check_kind(k)
        return [found[k][n] for k in kinds for n in sorted(found[k], key=str.lower)]

    def names(self, kind: str) -> list[str]:
        return [e.name for e in self.entries(kind)]

    def problems(self, load: bool = False) -> list[Problem]:
        """Broken plugins: malformed metadata, duplicate names, and (``load=True``) failed imports."""
        found = self._discover()
        out = list(self._metadata_problems)
        for kind in GROUPS:
            for e in found[kind].values():
                if load and e.loaded is None and e.error is None and not e.conflicts:
                    self._load(e)
                if e.conflicts:
                    out.append(Problem(e.distribution, kind, e.name,
                                       f"name also registered by {', '.join(e.conflicts)}"))
                elif e.error:
                    out.append(Problem(e.distribution, kind, e.name, e.error))
        return out

    def _raise_if_broken(self, load: bool) -> None:
        problems = self.problems(load=load)
        if problems:
            raise BrokenPlugin("broken plugins (strict mode):\n  " + "\n  ".join(map(str, problems)))

    def check(self) -> list[Problem]:
        """Import every entry; return the problems (raise in strict mode)."""
        if self.strict:
            self._raise_if_broken(load=True)
        return self.problems(load=True)

    # --------------------------------------------------------------- lookup
    def _load(self, entry: Entry) -> Any:
        if entry.loaded is not None:
            return entry.loaded
        try:
            obj = entry._ep.load()
        except Exception as exc:  # any import-time failure is the plugin's, reported with its distribution
            entry.error = f"import of {entry.target} failed: {type(exc).__name__}: {exc}"
            return None
        declared = getattr(obj, "name", None)
        if entry.kind in ("initializer", "sorter", "partitioner", "finalizer") and declared != entry.name:
            entry.error = f"{entry.target} declares name {declared!r}, entry point says {entry.name!r}"
            return None
        entry.loaded = obj
        return obj

    def get(self, kind: str, name: str) -> Any:
        """The registered object (class, preset factory or dataset loader) for ``name``."""
        self._check_kind(kind)
        found = self._discover()[kind]
        entry = found.get(name)
        if entry is None:
            lower = {n.lower(): n for n in found}
            if name.lower() in lower:
                entry = found[lower[name.lower()]]
        if entry is None:
            close = difflib.get_close_matches(name, list(found), n=3, cutoff=0.5)
            close += [n for n in found if name.lower() in n.lower() and n not in close][:3]
            hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            known = f" Known {kind}s: {', '.join(sorted(found, key=str.lower)) or '(none)'}."
            raise UnknownComponent(f"no {kind} named {name!r}{hint}{known}{self._absent_plugin_hint(name)}")
        if entry.conflicts:
            raise DuplicateComponent(
                f"{kind} {entry.name!r} is registered by both {entry.distribution} and "
                f"{', '.join(entry.conflicts)}; uninstall one of them")
        obj = self._load(entry)
        if obj is None:
            raise BrokenPlugin(f"{kind} {entry.name!r} from {entry.distribution} is broken: {entry.error}")
        reason = self._missing_requirements(obj)
        if reason:
            raise UnavailableComponent(f"{kind} {entry.name!r} (from {entry.distribution}) is unavailable: it "
                                       f"{reason}; install the missing plugin(s)")
        return obj

    def _absent_plugin_hint(self, name: str) -> str:
        """A pointer to the plugin ``dphist-ahp`` for ``ahp.x`` when no registered name starts with ``ahp.``."""
        if "." not in name:
            return ""
        prefix = name.split(".", 1)[0] + "."
        if any(n.startswith(prefix) for names in self._discover().values() for n in names):
            return ""
        return f" Names {prefix}* come from the plugin {plugin_distribution(name)}, which is not installed."

    # -------------------------------------------------------- requirements
    def _missing_requirements(self, obj: Any) -> str:
        """Why ``obj``'s declared ``requires`` are not met ("" when they are)."""
        missing = []
        for requirement in getattr(obj, "requires", ()) or ():
            kind, name = parse_requirement(requirement)
            entry = self._discover()[kind].get(name)
            plugin = plugin_distribution(name)
            if entry is None:
                missing.append(f"needs {plugin} ({kind} '{name}' is not registered)")
            elif entry.conflicts or (entry.loaded is None and self._load(entry) is None):
                missing.append(f"needs a working {entry.distribution} ({kind} '{name}' is broken: "
                               f"{entry.error or 'registered twice'})")
        return "; ".join(missing)

    def unavailable(self, kind: str = "algorithm") -> dict[str, str]:
        """``{name: reason}`` of the registered names of ``kind`` whose ``requires`` are not met.

        Imports every entry of ``kind`` (to read its declaration); broken entries are left to
        :meth:`problems`.
        """
        self._check_kind(kind)
        out = {}
        for entry in self.entries(kind):
            if entry.ok and (entry.loaded is not None or self._load(entry) is not None):
                reason = self._missing_requirements(entry.loaded)
                if reason:
                    out[entry.name] = reason
        return out

    def available_names(self, kind: str = "algorithm") -> list[str]:
        """:meth:`names` without the unavailable ones (see :meth:`unavailable`)."""
        skip = self.unavailable(kind)
        return [n for n in self.names(kind) if n not in skip]

    # ---------------------------------------------------------- registration
    def register(self, obj: Any, kind: str | None = None, name: str | None = None,
                 replace: bool = False) -> Any:
        """Register ``obj`` at runtime (a class from a notebook or a student's file)."""
        kind = kind or getattr(obj, "kind", None)
        if not kind:
            raise InvalidParameter(f"cannot tell the kind of {obj!r}; pass kind=")
        self._check_kind(kind)
        name = name or getattr(obj, "name", None)
        if not name:
            raise InvalidParameter(f"{obj!r} has no name; set a class attribute `name` or pass name=")
        found = self._discover()[kind]
        old = found.get(name)
        same_origin = old is not None and old.distribution == RUNTIME and old.target == _qualname(obj)
        if old is not None and not (replace or same_origin):
            raise DuplicateComponent(
                f"{kind} {name!r} is already registered by {old.distribution} ({old.target}); "
                f"choose another name or pass replace=True")
        found[name] = Entry(kind, name, RUNTIME, _qualname(obj), loaded=obj)
        return obj

    @contextmanager
    def without(self, *distributions: str) -> Iterator["Registry"]:
        """Within the block, the registry behaves as if ``distributions`` were not installed.

        Every name they register is hidden and restored on exit; nothing is uninstalled.  For
        tests of what happens without a plugin (``with default_registry.without("dphist-dawa"):``).
        """
        wanted = {d.replace("_", "-") for d in distributions}
        found = self._discover()
        hidden = [(k, n, e) for k, entries in found.items() for n, e in entries.items() if e.distribution in wanted]
        registering = {e.distribution for _, _, e in hidden}
        if wanted - registering:
            raise InvalidParameter(f"no registered name comes from {', '.join(sorted(wanted - registering))}")
        for kind, name, _ in hidden:
            del found[kind][name]
        try:
            yield self
        finally:
            for kind, name, entry in hidden:
                found[kind].setdefault(name, entry)

    def unregister(self, kind: str, name: str) -> None:
        self._check_kind(kind)
        self._discover()[kind].pop(name, None)


def parse_requirement(requirement: str) -> tuple[str, str]:
    """``"partitioner:dawa.l1"`` -> ``("partitioner", "dawa.l1")``, checked."""
    kind, sep, name = str(requirement).partition(":")
    if not sep or kind not in GROUPS or not name:
        raise InvalidParameter(f"a requirement is 'kind:name' with kind in {', '.join(GROUPS)}, "
                               f"got {requirement!r}")
    return kind, name


def plugin_distribution(name: str) -> str:
    """The distribution a component name's prefix points to: ``dawa.l1`` -> ``dphist-dawa``."""
    prefix = name.split(".", 1)[0] if "." in name else name
    return f"dphist-{prefix.replace('_', '-')}"


MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


def import_modules(names, where: str = "--import") -> list:
    """Import the modules ``names`` (a prototype's file of ``register`` calls) and return them.

    This is the one way to load a prototype: ``dphist --import mymodule ...`` (every command) and a
    sweep's ``plugins = ["mymodule"]`` (:mod:`dphist.experiments.config`, imported again in every
    worker process) both come here, so a module's runtime registrations (``Registry.register``,
    ``@dphist.register``) exist wherever a name is looked up.  A module already imported is not
    imported twice (``sys.modules``).  ``where`` names the option in errors: a malformed or unknown
    name, or a module whose import raises, is an :class:`~dphist.errors.InvalidParameter` of one
    line naming the module, raised before anything runs.
    """
    if isinstance(names, str) or not isinstance(names, (list, tuple)):
        raise InvalidParameter(f"{where}: expected a list of module names, got {names!r}")
    modules = []
    for name in names:
        if not isinstance(name, str) or not MODULE_NAME.match(name) or name.endswith(".py"):
            raise InvalidParameter(f"{where}: {name!r} is not a module name (write mymodule or package.module, "
                                   "without .py)")
        try:
            modules.append(importlib.import_module(name))
        except ModuleNotFoundError as exc:
            if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
                raise InvalidParameter(f"{where}: no module named {name!r} (it must be importable: in the "
                                       "current folder or on PYTHONPATH)") from None
            raise InvalidParameter(f"{where}: importing module {name!r} failed: {_one_line(exc)}") from None
        except Exception as exc:  # the prototype's own import-time error, named with its module
            raise InvalidParameter(f"{where}: importing module {name!r} failed: {_one_line(exc)}") from None
    return modules


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def _qualname(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}:{getattr(obj, '__qualname__', repr(obj))}"


#: The process-wide registry used by the pipeline, presets and the CLI.
default_registry = Registry()


def register(obj=None, *, kind: str | None = None, name: str | None = None, replace: bool = False):
    """Register a component class (or preset / dataset) at runtime; usable as a decorator.

    >>> @register
    ... class MyPartitioner(Partitioner):
    ...     name = "mine"
    """
    def wrap(o):
        return default_registry.register(o, kind=kind, name=name, replace=replace)
    return wrap(obj) if obj is not None else wrap

