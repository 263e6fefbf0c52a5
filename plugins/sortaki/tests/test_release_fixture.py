"""Releases recorded before the port onto dphist.segmentation stay bit-identical.

The fixture (``fixtures/releases.npz``) was written by ``make_release_fixture.py`` from the
plugin's own DP kernels before they were deleted.  Kills: any change to the cost arithmetic, the
tie rule, the candidate lengths or the greedy rule that alters one cluster boundary or one estimate.
"""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("sortaki_release_fixture", HERE / "make_release_fixture.py")
maker = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(maker)
FIXTURE = np.load(HERE / "fixtures" / "releases.npz")


@pytest.mark.parametrize("aname", sorted(maker.algorithms()))
def test_releases_are_unchanged(aname):
    pipe = maker.algorithms()[aname]
    for hname, x in maker.histograms().items():
        for eps in maker.EPSILONS:
            for seed in maker.SEEDS:
                r = pipe.run(x, eps, seed=seed)
                key = f"{aname}|{hname}|{eps}|{seed}"
                assert np.array_equal(r.partition.bounds, FIXTURE[key + "|bounds"]), key
                assert np.array_equal(r.partition.order, FIXTURE[key + "|order"]), key
                assert np.array_equal(r.estimate, FIXTURE[key + "|estimate"]), key


def test_array_level_outputs_are_unchanged():
    now = maker.record_arrays()
    assert set(now) == {k for k in FIXTURE.files if k.startswith("array|")}
    for key, value in now.items():
        assert np.array_equal(value, FIXTURE[key]), key
