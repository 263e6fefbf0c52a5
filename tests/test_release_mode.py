"""Research and release modes: named everywhere, never mixed, and release mode keeps no noise state.

The exploits of issue 11 as tests: the CLI printed the seed and the published
estimate could be rebuilt from it; ``rerun`` on a neighbouring histogram gave
away the noise; float Laplace was the only sampler.
"""
import json

import numpy as np
import pytest

import dphist
from dphist import Finalizer, InvalidParameter, Pipeline, PrivacyViolation
from dphist.cli import main
from dphist.kernel import ExactNoise, PrivateKernel, SeededLaplace
from dphist.kernel.exact import GeneratorWords

X = np.array([5, 3, 0, 0, 12, 40, 41, 39], dtype=np.int64)


def test_no_seed_means_release_mode_with_nothing_kept():
    r = dphist.make_algorithm("identity").run(X, 0.1)
    assert r.mode == "release" and r.ledger.mode == "release" and r.seed is None and r.pipeline is None
    assert r.noise.startswith("exact-discrete-laplace[os-urandom")
    exported = r.to_dict()
    assert "seed" not in exported and exported["mode"] == "release"
    assert np.all(r.estimate == np.round(r.estimate))  # integer noise on integer counts
    with pytest.raises(PrivacyViolation, match="cannot be rerun"):
        r.rerun(X)


def test_release_mode_draws_fresh_noise_every_run():
    a, b = (dphist.make_algorithm("identity").run(X, 0.1).estimate for _ in range(2))
    assert not np.array_equal(a, b)


def test_research_mode_is_seeded_reproducible_and_says_so():
    r = dphist.make_algorithm("identity").run(X, 0.1, seed=4)
    assert r.mode == "research" and r.seed == 4 and r.to_dict()["seed"] == 4
    assert np.array_equal(r.rerun(X).estimate, r.estimate)
    exact = dphist.make_algorithm("identity").run(X, 0.1, seed=4, noise="exact")
    assert exact.mode == "research" and np.all(exact.estimate == np.round(exact.estimate))
    assert np.array_equal(exact.estimate, dphist.make_algorithm("identity").run(X, 0.1, seed=4, noise="exact").estimate)


@pytest.mark.parametrize("kwargs, words", [
    ({"seed": 3, "mode": "release"}, "a seed in release mode"),
    ({"mode": "research"}, "research mode needs a seed"),
    ({"mode": "bogus"}, "unknown mode"),
    ({"noise": "bogus"}, "unknown noise source"),
    ({"noise": "float"}, "release mode needs exact noise"),
    ({"noise": SeededLaplace(np.random.default_rng(0))}, "is for research mode but the run is in release"),
    ({"noise": ExactNoise(GeneratorWords(np.random.default_rng(0)))}, "research mode but the run is in release"),
    ({"seed": 1, "noise": ExactNoise()}, "release mode but the run is in research"),
    ({"noise": object()}, "declares no valid mode"),
    ({"seed": -1}, "non-negative integer"),
    ({"seed": "7"}, "non-negative integer"),
])
def test_mixed_or_unknown_modes_are_errors(kwargs, words):
    with pytest.raises(InvalidParameter, match=words):
        dphist.make_algorithm("identity").run(X, 0.1, **kwargs)


class ReferenceCalibration(Finalizer):
    """A finalizer kept to reproduce a published number; its calibration is not DP."""

    name = "test.reference"
    citation = "test"
    differentially_private = False

    def finalize(self, bins, ctx):
        return bins.spread(ctx.data.laplace_partition(bins, ctx.budget))


def test_a_non_dp_component_is_flagged_in_research_and_refused_in_release():
    pipe = Pipeline(None, None, "singleton", ReferenceCalibration())
    r = pipe.run(X, 1.0, seed=1)
    assert r.warnings == ["finalizer test.reference: not differentially private"]
    assert "not differentially private" in r.to_dict()["warnings"][0]
    with pytest.raises(PrivacyViolation, match="not differentially private"):
        pipe.run(X, 1.0)


def test_release_mode_measurements_of_integer_queries_are_integers():
    h = PrivateKernel(X, ExactNoise()).handle("t", "finalizer", 10.0)
    for out in (h.laplace_identity(1.0), h.laplace_partition(dphist.Partition.whole(8), 1.0),
                h.laplace_intervals([0, 0, 4], [8, 4, 8], 1.0), h.sorted_counts(1.0),
                h.laplace_linear(np.array([[1, 2, 0, 0, 0, 0, 0, 0]]), 1.0)):
        assert np.all(out == np.round(out))


@pytest.mark.parametrize("preset", ["H", "AHP", "DAWA", "GreedyH", "sDAWA"])
def test_plugin_presets_run_in_release_mode(preset):
    r = dphist.make_algorithm(preset).run(np.repeat(X, 8), 1.0)
    assert r.mode == "release" and r.ledger.total == pytest.approx(1.0) and np.all(np.isfinite(r.estimate))


def test_cli_defaults_to_release_mode_and_prints_no_seed(tmp_path, capsys):
    src = tmp_path / "h.txt"
    src.write_text("\n".join(map(str, X)))
    assert main(["run", "-a", "identity", "-i", str(src), "-e", "0.1"]) == 0
    out, err = capsys.readouterr()
    assert "release mode" in err and "seed" not in err.replace("no seed is kept", "")
    assert out.startswith("# dphist release mode") and "seed" not in out
    values = np.loadtxt(out.splitlines())
    assert values.shape == X.shape and np.all(values == np.round(values))
    assert main(["run", "-a", "identity", "-i", str(src), "-e", "0.1", "-o", str(tmp_path / "r.npy")]) == 0
    meta = json.loads((tmp_path / "r.npy.json").read_text())
    assert meta["header"][0].startswith("dphist release mode") and "seed" not in json.dumps(meta)


def test_cli_research_mode_warns_not_to_publish(tmp_path, capsys):
    src = tmp_path / "h.txt"
    src.write_text("\n".join(map(str, X)))
    assert main(["run", "-a", "identity", "-i", str(src), "-e", "0.1", "--seed", "9"]) == 0
    out, err = capsys.readouterr()
    assert "must NOT be published" in err and "research mode" in out
    assert main(["run", "-a", "identity", "-i", str(src), "-e", "0.1", "--noise", "float"]) == 2
    assert "release mode needs exact noise" in capsys.readouterr().err
