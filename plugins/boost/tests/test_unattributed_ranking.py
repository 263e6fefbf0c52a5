"""The real unattributed preset is never ranked with attributed histograms (issue 13, item 6).

Kills: an experiment engine that ranks ``unattributed-S-bar`` (scored against the
sorted truth) in the regret table or skyline of the attributed presets.
"""
from dphist.experiments import SweepConfig, analysis, run_sweep


def test_unattributed_s_bar_is_ranked_only_against_the_sorted_truth():
    cfg = SweepConfig.from_mapping({
        "algorithms": ["identity", "H", "unattributed-S-bar"], "executor": "serial",
        "datasets": ["synthetic:shape=zipf,n=256,scale=20000"], "epsilons": [0.1, 1.0], "trials": 2,
        "metrics": ["mse"], "workloads": ["prefix", "all-ranges"]})
    r = run_sweep(cfg, output=False, progress=False).results
    assert r.filter(algorithm="unattributed-S-bar")["unattributed"].all()
    assert analysis.unattributed_algorithms(r) == ["unattributed-S-bar"]
    for wl in ("prefix", "all-ranges"):
        assert set(analysis.regret(r, "mse", wl)) == {"identity", "H"}
        assert set(analysis.regret(r, "mse", wl, unattributed=True)) == {"unattributed-S-bar"}
        for eps in (0.1, 1.0):
            assert "unattributed-S-bar" not in analysis.time_error_points(r, "mse", wl, epsilon=eps)
