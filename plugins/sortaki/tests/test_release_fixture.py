"""Releases recorded before the port onto dphist.segmentation stay bit-identical.

The fixture (``fixtures/releases.npz``) was written by ``make_release_fixture.py`` from the
plugin's own DP kernels before they were deleted.  Kills: any change to the cost arithmetic, the
tie rule, the candidate lengths or the greedy rule that alters one group boundary or one estimate.

The thresholded WAF presets (``t``/``st`` + ``GWF``/``DWF``) changed on purpose (issue 14 item 6):
their WAF weights and UEE now read H~'s noise model (``ctx.noise_model``), which marks the bins
``ahp.threshold`` zeroed.  Run with an initializer that thresholds but declares plain
Laplace(1/eps_in) noise - the old assumption - they must still give the recorded releases.
"""
from pathlib import Path

import numpy as np
import pytest

from dphist import Pipeline, release_records
from dphist.noise_model import NoiseModel
from dphist.registry import default_registry

HERE = Path(__file__).resolve().parent
maker = release_records.load_script(HERE / "make_release_fixture.py")
FIXTURE = np.load(HERE / "fixtures" / "releases.npz")
MODEL_CHANGED = {"tGWF", "stGWF", "tDWF", "stDWF", "tDWF-exact", "stDWF-exact"}


def _with_plain_noise_model(pipeline: Pipeline) -> Pipeline:
    threshold = type(pipeline.initializer)

    class PlainModelThreshold(threshold):
        def noise_model(self, ctx):
            return NoiseModel.laplace(ctx.eps_in)        # what WAF and UEE assumed before

    init = PlainModelThreshold(**pipeline.initializer.get_params())
    return Pipeline(init, pipeline.sorter, pipeline.partitioner, pipeline.finalizer, pipeline.shares)


@pytest.mark.parametrize("aname", sorted(set(maker.algorithms()) - MODEL_CHANGED))
def test_releases_are_unchanged(aname):
    assert release_records.mismatches(FIXTURE, {aname: maker.algorithms()[aname]}) == []


@pytest.mark.parametrize("aname", sorted(MODEL_CHANGED))
def test_thresholded_waf_presets_change_only_through_the_noise_model(aname):
    """Kills: WAF or UEE ignoring ``ctx.noise_model`` (the presets would match the record), and any
    other change to these presets (with the old plain model they must match it bit for bit)."""
    pipeline = maker.algorithms()[aname]
    assert pipeline.initializer.name == "ahp.threshold"
    assert release_records.mismatches(FIXTURE, {aname: _with_plain_noise_model(pipeline)}) == []
    assert release_records.mismatches(FIXTURE, {aname: pipeline}) != []


def test_array_level_outputs_are_unchanged():
    assert release_records.array_mismatches(FIXTURE, maker.record_arrays()) == []
