"""dphist's per-user cache folder: numba's compiled kernels and the built-in datasets' binary forms.

The folder is ``$DPHIST_CACHE_DIR`` when set, else ``$XDG_CACHE_HOME/dphist``, else
``~/.cache/dphist`` (the XDG convention that platformdirs follows on Linux).  Nothing is created
at import: numba creates its folder when the first kernel module is imported, the dataset cache
when a dataset is first loaded (:mod:`dphist.datasets.binary`).  Everything in it can be deleted
at any time; it is rebuilt on the next use.

numba: ``NUMBA_CACHE_DIR``, when the user sets it, is respected.  Otherwise
:func:`configure_numba` (run by ``import dphist``, before any kernel module imports numba) points
it at ``<cache>/numba``, so the compiled kernels are written to a writable per-user folder even
when site-packages is read-only (numba's own default writes beside the sources, else to a folder
named after the Python installation).  numba reads the variable once, when it is imported;
worker processes inherit it.
"""
from __future__ import annotations

import os
import sys


def cache_dir() -> str:
    """dphist's per-user cache folder (not created here)."""
    explicit = os.environ.get("DPHIST_CACHE_DIR")
    if explicit:
        return os.path.expanduser(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "dphist")


def numba_cache_dir() -> str:
    """Where numba's compiled kernels go: ``NUMBA_CACHE_DIR`` when set, else ``<cache_dir>/numba``."""
    return os.environ.get("NUMBA_CACHE_DIR") or os.path.join(cache_dir(), "numba")


def configure_numba() -> None:
    """Point numba's cache at :func:`numba_cache_dir` unless the user chose one (``NUMBA_CACHE_DIR``).

    Sets the environment variable (numba reads it when first imported, and worker processes inherit
    it); when numba is already imported with no folder of its own, its configuration is set too, so
    the kernels dphist imports afterwards are cached there.
    """
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    os.environ["NUMBA_CACHE_DIR"] = numba_cache_dir()
    if "numba" in sys.modules:
        config = sys.modules.get("numba.core.config")
        if config is not None and not getattr(config, "CACHE_DIR", ""):
            config.CACHE_DIR = os.environ["NUMBA_CACHE_DIR"]
