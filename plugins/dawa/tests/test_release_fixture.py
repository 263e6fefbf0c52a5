"""Releases recorded before the port of ``dawa.l1`` onto dphist.segmentation stay bit-identical.

The fixture (``fixtures/releases.npz``) was written by ``make_release_fixture.py`` from the
plugin's own DP code (``least_cost_partition``) before it was deleted.  Kills: a different batch
order of the noisy costs (noise drawn for other candidates), a different tie or comparison rule in
the exact, power-of-two or tree search, a changed cost transform (bias correction, penalty,
the DPBench floor), a lost rounding of the postprocess counts - anything that moves one group
boundary or one estimate.
"""
from pathlib import Path

import pytest

from dphist import release_records

maker, FIXTURE = release_records.fixture_of(Path(__file__).resolve().parent)


@pytest.mark.parametrize("aname", sorted(maker.algorithms()))
def test_releases_are_unchanged(aname):
    assert release_records.mismatches(FIXTURE, {aname: maker.algorithms()[aname]}) == []
