"""Declared parameters: what each constructor parameter of a component (or preset) accepts.

A component declares its parameters' constraints in one class attribute, in the
spirit of scikit-learn's ``_parameter_constraints`` (a name maps to one
constraint or a list of alternatives; a value is valid when any alternative
accepts it)::

    class MyPartitioner(Partitioner):
        name = "my.partitioner"
        param_constraints = {
            "width": Interval(int, 1, None),                         # an integer >= 1
            "penalty": Interval(float, 0, None, closed="neither"),   # a real number > 0
            "rule": Options("all", "sqrt", "rice"),
            "cost": [Options("sse"), callable],                      # a name or a callable
            "limit": [None, Interval(int, 1, None)],                 # None or an integer >= 1
            "sorted": bool,                                          # True or False
        }

        def __init__(self, width=8, penalty=1.0, rule="all", cost="sse", limit=None, sorted=True):
            self.width = width
            ...

:class:`~dphist.components.base.Component` validates every declared parameter
when the object is constructed, before ``__init__`` runs (so before anything can
be spent), and raises :class:`~dphist.errors.InvalidParameter` naming the class,
the parameter, the value and what was expected.  Declarations are inherited and
merged along the class hierarchy (a subclass's entry replaces its parent's); they are read once,
when the class is defined (a malformed one raises TypeError there).
Relations between parameters (``a < b``) stay in ``__init__``, which runs after
the declared checks.  Presets declare theirs in :func:`dphist.preset`
(``params={...}``); the conformance kit requires every constructor parameter of a
component to be declared.

Shorthands in a declaration: ``None`` (the value None), ``bool`` (True / False,
numpy booleans included), ``callable`` (any callable), any other class (an
instance of it).  Numbers are never booleans: ``True`` is not an integer >= 1.
"""
from __future__ import annotations

import builtins
import math
import numbers
from typing import Any, Callable, Iterable, Mapping

import numpy as np

from .errors import InvalidParameter

__all__ = ["Constraint", "Interval", "Options", "Satisfies", "InstanceOf", "ComponentParameter",
           "make_constraint", "normalize",
           "validate_params", "describe_constraints", "UNIT_SHARE"]


class Constraint:
    """One set of accepted values: ``accepts(value) -> bool`` and a description for messages."""

    def accepts(self, value) -> bool:
        raise NotImplementedError

    def __str__(self) -> str:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {self}>"


class _IsNone(Constraint):
    def accepts(self, value) -> bool:
        return value is None

    def __str__(self) -> str:
        return "None"


class _Boolean(Constraint):
    def accepts(self, value) -> bool:
        return isinstance(value, (bool, np.bool_))

    def __str__(self) -> str:
        return "a boolean (True or False)"


class _Callable(Constraint):
    def accepts(self, value) -> bool:
        return callable(value)

    def __str__(self) -> str:
        return "a callable"


class InstanceOf(Constraint):
    """An instance of ``types`` (a class or a tuple of classes)."""

    def __init__(self, types, description: str | None = None):
        self.types = types
        names = [t.__name__ for t in (types if isinstance(types, tuple) else (types,))]
        self.description = description or f"an instance of {' or '.join(names)}"

    def accepts(self, value) -> bool:
        return isinstance(value, self.types)

    def __str__(self) -> str:
        return self.description


_CLOSED = {"both": ("[", "]"), "left": ("[", ")"), "right": ("(", "]"), "neither": ("(", ")")}


class Interval(Constraint):
    """A number of ``kind`` (``int``: integers; ``float``: finite real numbers, integers included)
    between ``low`` and ``high`` (None: unbounded on that side).

    ``closed`` says which ends belong to the interval: ``"both"`` (default), ``"left"``,
    ``"right"`` or ``"neither"``, as in scikit-learn.  Booleans are refused (``True`` is not a
    count), and so are NaN and infinities.
    """

    def __init__(self, kind: type, low=None, high=None, closed: str = "both"):
        if kind not in (int, float):
            raise TypeError(f"Interval kind must be int or float, got {kind!r}")
        if closed not in _CLOSED:
            raise TypeError(f"Interval closed must be one of {', '.join(_CLOSED)}, got {closed!r}")
        if low is not None and high is not None and low > high:
            raise TypeError(f"Interval low {low} > high {high}")
        self.kind, self.low, self.high, self.closed = kind, low, high, closed

    def accepts(self, value) -> bool:
        if isinstance(value, (bool, np.bool_)):
            return False
        if self.kind is int:
            if not isinstance(value, (numbers.Integral, np.integer)):
                return False
        elif not isinstance(value, (numbers.Real, np.integer, np.floating)) or not math.isfinite(value):
            return False
        left_in = self.closed in ("both", "left")
        right_in = self.closed in ("both", "right")
        if self.low is not None and (value < self.low or (value == self.low and not left_in)):
            return False
        if self.high is not None and (value > self.high or (value == self.high and not right_in)):
            return False
        return True

    def __str__(self) -> str:
        what = "an integer" if self.kind is int else "a real number"
        lo, hi = self.low, self.high
        if lo is None and hi is None:
            return what
        if hi is None:
            return f"{what} {'>=' if self.closed in ('both', 'left') else '>'} {lo:g}"
        if lo is None:
            return f"{what} {'<=' if self.closed in ('both', 'right') else '<'} {hi:g}"
        left, right = _CLOSED[self.closed]
        return f"{what} in {left}{lo:g}, {hi:g}{right}"


class Options(Constraint):
    """One of a fixed set of values, compared by type and value: ``1`` matches neither ``"1"``, ``1.0``
    nor ``True``; a subclass instance matches (``numpy.str_("exact")`` is ``"exact"``)."""

    def __init__(self, *values):
        if len(values) == 1 and isinstance(values[0], (set, frozenset, list, tuple)):
            values = tuple(values[0])
        if not values:
            raise TypeError("Options needs at least one value")
        self.values = tuple(values)

    def accepts(self, value) -> bool:
        return any(isinstance(value, type(v)) and isinstance(value, bool) == isinstance(v, bool) and value == v
                   for v in self.values)

    def __str__(self) -> str:
        if len(self.values) == 1:
            return repr(self.values[0])
        return "one of " + ", ".join(repr(v) for v in self.values)


class Satisfies(Constraint):
    """Values a check accepts: ``check(value)`` returns a truth value, or raises ValueError/TypeError
    (e.g. :class:`~dphist.errors.InvalidParameter`) for a refusal.  ``description`` says what is accepted."""

    def __init__(self, check: Callable[[Any], Any], description: str):
        self.check = check
        self.description = description

    def accepts(self, value) -> bool:
        try:
            result = self.check(value)
        except (ValueError, TypeError):
            return False
        return result is None or bool(result)

    def __str__(self) -> str:
        return self.description


class ComponentParameter(Constraint):
    """What a registered component's parameter accepts, looked up by registry name when checked.

    For a preset that passes one of its parameters to another distribution's component
    (``ComponentParameter("partitioner", "dawa.l1", "variant")``) without importing it.
    """

    def __init__(self, kind: str, name: str, parameter: str):
        self.kind, self.name, self.parameter = kind, name, parameter

    def _alternatives(self):
        from .errors import DPHistError
        from .registry import default_registry
        try:
            cls = default_registry.get(self.kind, self.name)
        except DPHistError:
            return None
        return cls.declared_constraints().get(self.parameter)

    def accepts(self, value) -> bool:
        alternatives = self._alternatives()
        return bool(alternatives) and any(c.accepts(value) for c in alternatives)

    def __str__(self) -> str:
        alternatives = self._alternatives()
        if not alternatives:
            return f"{self.name}'s {self.parameter} ({self.kind} {self.name} is not installed)"
        return _expected(alternatives)


_NONE, _BOOLEAN, _CALLABLE = _IsNone(), _Boolean(), _Callable()

#: a budget share strictly between 0 and 1 (e.g. gamma_in when the finalizer also needs budget)
UNIT_SHARE = Interval(float, 0, 1, closed="neither")


def make_constraint(spec) -> Constraint:
    """One constraint from a declaration entry (a Constraint or a shorthand: None, bool, callable, a class)."""
    if isinstance(spec, Constraint):
        return spec
    if spec is None:
        return _NONE
    if spec is bool or spec == "boolean":
        return _BOOLEAN
    if spec is builtins.callable or spec == "callable":
        return _CALLABLE
    if isinstance(spec, type):
        return InstanceOf(spec)
    raise TypeError(f"cannot use {spec!r} as a parameter constraint: give a Constraint (Interval, Options, "
                    "Satisfies, InstanceOf) or None, bool, callable or a class")


def normalize(declared: Mapping[str, Any]) -> dict[str, tuple[Constraint, ...]]:
    """``{name: (constraint, ...)}`` from a declaration (single entries or lists of alternatives)."""
    out = {}
    for name, spec in declared.items():
        alternatives = spec if isinstance(spec, (list, tuple)) else [spec]
        if not alternatives:
            raise TypeError(f"parameter {name!r} declares no constraint")
        out[name] = tuple(make_constraint(a) for a in alternatives)
    return out


def _expected(alternatives: Iterable[Constraint]) -> str:
    return " or ".join(str(c) for c in alternatives)


def check_value(owner: str, name: str, value, alternatives: tuple[Constraint, ...]) -> None:
    """Raise InvalidParameter unless one of ``alternatives`` accepts ``value``."""
    if not any(c.accepts(value) for c in alternatives):
        shown = repr(value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        raise InvalidParameter(f"{owner}: parameter {name!r} = {shown} is invalid; expected {_expected(alternatives)}")


def validate_params(owner: str, constraints: Mapping[str, tuple[Constraint, ...]], params: Mapping[str, Any]) -> None:
    """Check every declared parameter present in ``params`` (``owner`` names the class or preset)."""
    for name, value in params.items():
        alternatives = constraints.get(name)
        if alternatives is not None:
            check_value(owner, name, value, alternatives)


def describe_constraints(alternatives: tuple[Constraint, ...] | None) -> str:
    """The human description of a parameter's declaration ("undeclared" when there is none)."""
    return _expected(alternatives) if alternatives else "undeclared"
