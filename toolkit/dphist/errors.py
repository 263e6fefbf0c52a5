"""Every error dphist raises on purpose derives from :class:`DPHistError`.

Each names the problem in words a user can act on; callers can catch the
family or the specific class.
"""
from __future__ import annotations


class DPHistError(Exception):
    """Base class of all dphist errors."""


class InvalidHistogram(DPHistError, ValueError):
    """The counts are not a 1-D vector of finite, non-negative integers."""


class InvalidParameter(DPHistError, ValueError):
    """A parameter (epsilon, a budget share, a component option) is out of range."""


class BudgetExceeded(DPHistError):
    """A component asked for more privacy budget than its share; no answer was given."""


class UnknownComponent(DPHistError, LookupError):
    """A registry lookup failed; the message lists the closest known names."""


class UnavailableComponent(DPHistError, LookupError):
    """A registered preset needs a component of a plugin that is not installed (or is broken);
    the message names the plugin."""


class DuplicateComponent(DPHistError):
    """Two distributions register the same name in the same group."""


class BrokenPlugin(DPHistError):
    """A plugin's entry point is malformed or fails to import (raised in strict mode)."""


class PrivacyViolation(DPHistError):
    """An operation that needs the true data was attempted in a private pipeline."""


class InputFileError(DPHistError, ValueError):
    """An input file could not be parsed; the message names the file and line."""
