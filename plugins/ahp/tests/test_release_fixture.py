"""Releases recorded before the port onto dphist.segmentation stay bit-identical.

The fixture (``fixtures/releases.npz``) was written by ``make_release_fixture.py`` from the
plugin's own DP kernels before they were deleted.  Kills: any change to the cost arithmetic, the
tie rule, the Monge switch or the greedy's bound that alters one group boundary or one estimate.
"""
from pathlib import Path

import numpy as np
import pytest

from dphist import release_records

HERE = Path(__file__).resolve().parent
maker = release_records.load_script(HERE / "make_release_fixture.py")
FIXTURE = np.load(HERE / "fixtures" / "releases.npz")


@pytest.mark.parametrize("aname", sorted(maker.algorithms()))
def test_releases_are_unchanged(aname):
    assert release_records.mismatches(FIXTURE, {aname: maker.algorithms()[aname]}) == []


def test_array_level_outputs_are_unchanged():
    assert release_records.array_mismatches(FIXTURE, maker.record_arrays()) == []
