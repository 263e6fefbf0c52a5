"""The fast routes of GreedyH's sweep and DAWA's power-of-two windows give the recorded numbers, bit for bit.

``fixtures/speed.npz`` was written by ``make_speed_fixture.py`` from the code before its speed work (the
numpy sweep, one Fenwick-tree pass per window length).  Kills: a changed order of a floating-point sum in
the compiled prefix energies or in the children's sums (one chosen weight moves), a different first
minimum in the blocked weight search (ties must keep the largest p), a factor applied as a division
instead of a product, a wrong count or sum below the mean in the counting windows, windows cached
across different values or units, a streamed search that reads a window of the wrong end.
"""
from pathlib import Path

import numpy as np
import pytest

from dphist import release_records

HERE = Path(__file__).resolve().parent
maker = release_records.load_script(HERE / "make_speed_fixture.py")
FIXTURE = np.load(HERE / "fixtures" / "speed.npz")


def test_recorded_arrays_are_unchanged():
    assert release_records.array_mismatches(FIXTURE, maker.record_arrays()) == []


@pytest.mark.parametrize("aname", sorted(maker.algorithms()))
def test_small_releases_are_unchanged(aname):
    assert release_records.mismatches(FIXTURE, {aname: maker.algorithms()[aname]}) == []


@pytest.mark.parametrize("aname", sorted(maker.big_algorithms()))
def test_releases_at_2_14_are_unchanged(aname):
    assert release_records.mismatches(FIXTURE, {aname: maker.big_algorithms()[aname]}, maker.big_histogram(),
                                      epsilons=(1.0,), seeds=(7,)) == []
