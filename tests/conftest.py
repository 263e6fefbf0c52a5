"""Shared fixtures of the core's tests.

Where the reference data are.  The library knows no fixed folder (``dphist.datasets.files`` takes
paths); the tests find the ``shared`` folder of reference data (papers, DPBench's 1-D sources) this
way, and notebooks and benchmarks search the same way:

1. the environment variable ``DPHIST_SHARED``, if set (it must then exist);
2. else a folder named ``shared`` beside the repository (``<repo>/../shared``, as on the
   project machine and in CI).

The DPBench 1-D sources are ``<shared>/datasets/peer-dpbench/1D``.  They are never copied into
the repository; a test that needs them skips, saying so, when they are absent.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def shared_dir() -> Path | None:
    """The reference-data folder found by the documented search, or None."""
    env = os.environ.get("DPHIST_SHARED")
    if env:
        path = Path(env).expanduser()
        if not path.is_dir():
            raise FileNotFoundError(f"DPHIST_SHARED={env!r} is not a directory")
        return path
    beside = REPO.parent / "shared"
    return beside if beside.is_dir() else None


@pytest.fixture
def dpbench_dir() -> Path:
    """DPBench's 1-D sources (skips the test when they are absent)."""
    shared = shared_dir()
    path = None if shared is None else shared / "datasets" / "peer-dpbench" / "1D"
    if path is None or not path.is_dir():
        pytest.skip("the DPBench 1-D sources (<shared>/datasets/peer-dpbench/1D) are absent; "
                    "set DPHIST_SHARED to the reference-data folder")
    return path
