"""The `auto` preset (dphist.selection): features' sensitivities, the regret tree, the runs, bad input.

The conformance kit runs `auto` like every preset (tests/test_conformance.py), and so does the CI's fast
audit (tests/test_audit_presets.py).
"""
import itertools
import json

import numpy as np
import pytest

from dphist import default_registry, make_algorithm
from dphist.errors import InvalidParameter
from dphist.selection import (DEFAULT_MODEL, DEFAULT_SHARE, FEATURE_NAMES, MODEL_VERSION, RegretTree, ShapeStatistics, coarse_l1,
                              describe, fit, l1_sensitivity, l1_to_uniform, load_model, statistic_sensitivities,
                              statistics, within_block_l1)
from dphist.selection.auto import TRAINING_CONFIG, AutoPipeline, FeatureFinalizer
from dphist.pipeline import Pipeline


def _neighbour_pairs(n, top=3):
    """Every histogram on n bins with counts 0..top, and each one with a record added to each bin."""
    xs = np.array(list(itertools.product(range(top + 1), repeat=n)), dtype=float)
    for j in range(n):
        y = xs.copy()
        y[:, j] += 1
        yield xs, y


def _brute_force(feature, n):
    worst = 0.0
    for x, y in _neighbour_pairs(n):
        worst = max(worst, float(np.max(np.abs(feature(y) - feature(x)))))
    return worst


def _block_l1_rows(v, starts):
    """Per row of v: sum over bins of |count - the mean of its block| (blocks starting at ``starts``)."""
    sizes = np.diff(np.append(starts, v.shape[1]))
    means = np.add.reduceat(v, starts, axis=1) / sizes
    return np.abs(v - np.repeat(means, sizes, axis=1)).sum(axis=1)


def _coarse_rows(v, blocks):
    """Per row of v: the L1 distance of the sums over ``blocks`` contiguous blocks to uniform's."""
    n = v.shape[1]
    bounds = (np.arange(blocks + 1) * n) // blocks
    sums = np.add.reduceat(v, bounds[:-1], axis=1)
    return np.abs(sums - v.sum(axis=1, keepdims=True) * np.diff(bounds) / n).sum(axis=1)


@pytest.mark.parametrize("n", [2, 3, 5, 6])
def test_charged_sensitivities_match_brute_force(n, monkeypatch):
    """The features are one vector (the total and three statistics) charged with L1 sensitivity 1: each
    part's sensitivity is its largest change over every neighbouring pair on n bins (counts 0..3), and
    the charged vector's L1 change is at most 1, reached.  n = 5 and 6 have blocks of two sizes (coarse blocks of one
    and two bins, fine blocks of 4 and 1 or 2).  The statistics are recomputed here independently, row
    by row of all histograms at once, and checked against the library's.  Kills: an understated
    sensitivity (e.g. 1 for the L1 distance, the (1 - 1/n) factor's bound to 1/n, the coarse one
    computed from the largest block instead of the smallest, the fine one from the domain instead of
    the block), an overstated one, a vector scaled so that its L1 sensitivity exceeds the charged 1
    (e.g. the total's weight left out of its scale), and a statistic computed otherwise than defined."""
    monkeypatch.setattr("dphist.selection.features.COARSE_BLOCKS", 4)      # blocks of several bins at small n
    release = Pipeline(None, None, "singleton", FeatureFinalizer(), (0, 0, 1)).run(np.arange(n), 1.0, seed=1)
    charged = {e.primitive: e.sensitivity for e in release.ledger}
    assert list(charged) == ["custom:selection.shape-statistics"]         # the total rides in the one vector
    stats = [lambda v: v.sum(axis=1), lambda v: _block_l1_rows(v, [0]), lambda v: _coarse_rows(v, min(4, n)),
             lambda v: _block_l1_rows(v, np.arange(0, n, 4))]
    sample = np.random.default_rng(n).integers(0, 9, (20, n))
    assert np.allclose(np.column_stack([f(sample.astype(float)) for f in stats[1:]]),
                       [statistics(row) for row in sample])
    brute = [_brute_force(f, n) for f in stats]
    assert brute[0] == pytest.approx(1.0) and statistic_sensitivities(n) == pytest.approx(brute[1:])
    assert l1_sensitivity(n) == pytest.approx(brute[1])
    scale = ShapeStatistics(n).scale
    assert scale == pytest.approx(np.array(brute) / np.array([0.4, 0.2, 0.2, 0.2]))
    worst = 0.0
    for x, y in _neighbour_pairs(n):
        worst = max(worst, float(np.max(sum(np.abs(f(y) - f(x)) / s for f, s in zip(stats, scale)))))
    assert charged["custom:selection.shape-statistics"] == pytest.approx(1.0) == pytest.approx(worst)
    assert l1_to_uniform([3, 0, 0]) == pytest.approx(4.0) and coarse_l1([3, 0, 0, 1], 2) == pytest.approx(2.0)
    assert within_block_l1([3, 0, 0, 1, 5], 4) == pytest.approx(4.0)


@pytest.mark.parametrize("n, dtype", [(1024, np.int64), (1027, np.int64), (1000, float), (130, np.int32)])
def test_statistics_at_the_packaged_block_sizes(n, dtype):
    """The statistics with the packaged blocks (16 coarse, fine blocks of 4) against the definitions
    recomputed here, on domains whose coarse cuts fall between fine blocks (1024) or not (1000: cuts at
    62, 125, ...; 130), with a shorter last fine block (1027) and integer or float counts.  Kills: the
    coarse sums taken from the fine blocks' sums when the cuts do not fall between them, the shorter
    last block dropped from D or W, W against a column's mean instead of its block's."""
    x = np.random.default_rng(n).poisson(np.linspace(1, 40, n) ** 1.5).astype(dtype)
    v = x[None, :].astype(float)
    expected = [_block_l1_rows(v, [0])[0], _coarse_rows(v, 16)[0], _block_l1_rows(v, np.arange(0, n, 4))[0]]
    assert statistics(x) == pytest.approx(expected, rel=1e-12)
    assert within_block_l1(x, 3) == pytest.approx(_block_l1_rows(v, np.arange(0, n, 3))[0], rel=1e-12)


@pytest.mark.parametrize("shape", [(32, 24), (14, 10), (15, 8)])
def test_grid_statistics_at_the_packaged_block_sizes(shape):
    """The grid statistics with the packaged blocks (4 x 4 coarse, 2 x 2 fine) against the membership-matrix
    definitions, on even sides whose coarse cuts fall between fine blocks (32 x 24) or not (14 x 10: cuts
    at 3, 7, ...), and an odd side (15 x 8: the other route).  Kills: the coarse sums taken from the fine
    blocks' sums across a cut inside a block, a 2 x 2 view left out of the block sums or of D and W, W
    against the uniform mean instead of the block means."""
    from dphist.selection.features import grid_statistics
    x = np.random.default_rng(shape[0]).poisson(np.linspace(1, 30, shape[0] * shape[1]) ** 1.3).reshape(shape)
    expected = _grid_rows(shape, 4, 2)(x.reshape(1, -1).astype(float))[0]
    assert grid_statistics(x, shape) == pytest.approx(expected, rel=1e-12)


def test_tree_minimises_summed_regret_not_wins():
    """One region where preset A wins most cells by a hair but loses the rest by 100x: the leaf must be
    B (least summed regret), not A (most wins).  Kills: a leaf label by majority of best labels."""
    R = np.array([[1.0, 1.01]] * 30 + [[100.0, 1.0]] * 10)
    X = np.zeros((40, len(FEATURE_NAMES)))
    tree = fit(X, R, ["A", "B"], FEATURE_NAMES, max_depth=3, min_leaf=5)
    assert tree.feature.size == 1 and tree.labels[tree.predict(X[:1])[0]] == "B"
    # a feature that separates the two groups is found and each side gets its own best
    X[30:, 0] = 1.0
    tree = fit(X, R, ["A", "B"], FEATURE_NAMES, max_depth=3, min_leaf=5)
    assert [tree.labels[i] for i in tree.predict(X[[0, 35]])] == ["A", "B"]
    assert tree.threshold[0] == pytest.approx(0.5)


def test_tree_round_trip_and_path():
    """to_dict/from_dict predicts the same; the path's leaf is the predicted one; the one-row walk and
    the scalar feature row agree with the array routes.  Kills: thresholds or children lost in the
    file, a path or walk that goes the other way at equality (<= is left), a scalar feature formula
    that differs from the training one (e.g. the noisy total not clipped at 1, shares not clipped)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, len(FEATURE_NAMES)))
    R = 1 + np.abs(rng.normal(size=(400, 3))) + np.where(X[:, :1] > 0, [0, 5, 0], [5, 0, 0])
    tree = fit(X, R, ["a", "b", "c"], FEATURE_NAMES, max_depth=3, min_leaf=10)
    again = RegretTree.from_dict(json.loads(json.dumps(tree.to_dict())))
    assert np.array_equal(tree.predict(X), again.predict(X))
    x = X[7].copy()
    x[tree.feature[0]] = tree.threshold[0]          # exactly at the root's threshold: goes left
    leaf = tree.leaves(x)[0]
    assert tree.path(x)[0].startswith(f"{FEATURE_NAMES[tree.feature[0]]} = ")
    assert "<=" in tree.path(x)[0] and tree.path(x)[-1].startswith(f"leaf {leaf}:")
    # the one-row walk (auto's choice) agrees with the array route on every row, and at the threshold
    assert tree.walk(x) == (leaf, tree.path(x))
    assert [again.walk(row)[0] for row in X] == list(again.leaves(X))
    # the scalar feature row equals the array one (auto's choice uses the row, training the matrix)
    from dphist.selection.features import feature_row, feature_vector
    for total, stats, n, e in ((-5.0, (3.0, -1.0, 7.0), 64, 0.09), (1234.5, (500.0, 80.0, 4000.0), 4096, 0.9)):
        assert np.allclose(feature_row(total, stats, n, e), feature_vector(total, stats, n, e), rtol=1e-12)


def test_auto_ledger_notes_and_modes(monkeypatch):
    """Both parts in the ledger: the features' share under 'selector', the chosen preset's shares of
    the rest; the release names the preset and the tree's path; reruns repeat; release mode keeps
    no seed; the input is checked and copied once (one kernel).  Kills: features charged to the
    chosen preset's stages, the share not taken from the chosen preset's budget, the chosen part run
    on a fresh noise stream equal to its own run's, a second kernel for the chosen preset."""
    x = np.random.default_rng(2).poisson(40, 200)      # below the skip rule's 256 bins: the tree chooses
    pipe = make_algorithm("auto", workload="prefix", share=0.2)
    r = pipe.run(x, 0.5, seed=4)
    stages = r.ledger.by_stage()
    assert stages.pop("selector") == pytest.approx(0.1)
    assert sum(stages.values()) == pytest.approx(0.4) and r.ledger.total == pytest.approx(0.5)
    a = r.notes["auto"]
    assert a["preset"] in default_registry.names("algorithm") and a["path"][-1].startswith("leaf ")
    assert a["preset"] in describe(r) and r.spec["chosen"]["name"] == a["preset"]
    assert np.array_equal(r.rerun(x).estimate, r.estimate)
    chosen = make_algorithm(a["preset"], **a["params"]).run(x, 0.4, seed=4)
    assert not np.array_equal(chosen.estimate, r.estimate)     # the features' draws came first
    import dphist.pipeline as pipeline_module
    made = []
    real = pipeline_module.PrivateKernel
    monkeypatch.setattr(pipeline_module, "PrivateKernel", lambda *a, **k: made.append(1) or real(*a, **k))
    pipe.run(x, 0.5, seed=4)
    assert len(made) == 1
    released = pipe.run(x, 0.5)
    assert released.mode == "release" and released.seed is None and released.pipeline is None


def _model_file(tmp_path, **changes):
    model = json.loads(DEFAULT_MODEL.read_text())
    model.update(changes)
    path = tmp_path / "model.json"
    path.write_text(json.dumps(model))
    return path


def test_bad_input_is_refused_before_anything_runs(tmp_path):
    """Unknown workload, shares outside (0, 1), a missing, foreign, old or mismatched model: each a
    clear error naming the problem.  Kills: a share of 0 or 1 accepted (no features, or no release),
    a model of another version or feature set read silently."""
    with pytest.raises(InvalidParameter, match="unknown workload 'all-ranges'"):
        make_algorithm("auto", workload="all-ranges")
    for share in (0, 1, 1.5, -0.1, True):
        with pytest.raises(InvalidParameter, match="share"):
            make_algorithm("auto", share=share)
        with pytest.raises(InvalidParameter, match="share"):       # the class checks too, not only the preset
            AutoPipeline("prefix", share=share)
    with pytest.raises(InvalidParameter, match="does not exist"):
        make_algorithm("auto", model=str(tmp_path / "absent.json"))
    with pytest.raises(InvalidParameter, match="version 0"):
        make_algorithm("auto", model=str(_model_file(tmp_path, version=0)))
    # the format before per-workload shares (one share for the whole model): refused, saying why
    with pytest.raises(InvalidParameter, match="version 3; this dphist reads version 4 .*feature share.*make selector"):
        make_algorithm("auto", model=str(_model_file(tmp_path, version=3)))
    bad = json.loads(DEFAULT_MODEL.read_text())
    for share in (None, 0, 1.0, "0.1"):         # a workload's share missing or outside (0, 1)
        if share is None:
            del bad["workloads"]["prefix"]["share"]
        else:
            bad["workloads"]["prefix"]["share"] = share
        (tmp_path / "share.json").write_text(json.dumps(bad))
        with pytest.raises(InvalidParameter, match="workload 'prefix'.*(malformed|feature share)"):
            make_algorithm("auto", model=str(tmp_path / "share.json"))
    with pytest.raises(InvalidParameter, match="not a dphist-selector model"):
        make_algorithm("auto", model=str(_model_file(tmp_path, format="other")))
    with pytest.raises(InvalidParameter, match="trained on features"):
        make_algorithm("auto", model=str(_model_file(tmp_path, feature_names=["log10_total"])))
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(InvalidParameter, match="not readable JSON"):
        make_algorithm("auto", model=str(tmp_path / "bad.json"))


def test_each_workload_runs_with_its_models_share(tmp_path):
    """A model with a share per workload: ``auto`` without ``share=`` charges each workload's features its
    own share of epsilon and runs the choice with the rest (the ledger's selector row, the notes, the
    kit's books), an explicit ``share=`` overrides it, and the packaged model states its shares.  Kills:
    one share for every workload (the first entry's, or ``DEFAULT_SHARE``), the explicit share ignored,
    the books or the notes stating another share than the ledger spent."""
    from dphist.selection.train import SHARES_1D
    model = json.loads(DEFAULT_MODEL.read_text())
    shares = {"identity": 0.03, "prefix": 0.07, "dpbench-random-2000": 0.11}
    for wl, share in shares.items():
        model["workloads"][wl]["share"] = share
        model["workloads"][wl].pop("skip", None)          # the tree's path on every input
    path = tmp_path / "shares.json"
    path.write_text(json.dumps(model))
    x = np.random.default_rng(3).poisson(30, 512)
    for wl, share in shares.items():
        pipe = make_algorithm("auto", workload=wl, model=str(path))
        r = pipe.run(x, 0.5, seed=1)
        stages = r.ledger.by_stage()
        assert stages.pop("selector") == pytest.approx(0.5 * share), wl
        assert sum(stages.values()) == pytest.approx(0.5 * (1 - share)), wl
        assert r.notes["auto"]["share"] == share
        assert r.notes["auto"]["epsilon_chosen"] == pytest.approx(0.5 * (1 - share))
        assert pipe.books(r)["selector"] == pytest.approx(0.5 * share)
        given = make_algorithm("auto", workload=wl, model=str(path), share=0.2).run(x, 0.5, seed=1)
        assert given.ledger.by_stage()["selector"] == pytest.approx(0.1), wl
    packaged = load_model()["trees"]
    assert {wl: e["share"] for wl, e in packaged.items()} == SHARES_1D
    assert {wl: e["share"] for wl, e in load_model(dims=2)["trees"].items()} == dict.fromkeys(SHARES_1D, DEFAULT_SHARE)


def _one_leaf_model(tmp_path, label_order):
    """A model whose only tree (prefix) is one leaf choosing label_order[0]."""
    presets = {"DAWA-approx@prefix": {"name": "DAWA-approx", "params": {"workload": "prefix"}},
               "Hb": {"name": "Hb", "params": {}}, "identity": {"name": "identity", "params": {}}}
    labels = list(presets)
    tree = RegretTree([-1], [0.0], [-1], [-1], [labels.index(label_order[0])], [10], [1.0], labels, FEATURE_NAMES)
    regret = [[1.0 + label_order.index(lab) for lab in labels]]
    model = {"format": "dphist-selector", "version": MODEL_VERSION, "feature_names": list(FEATURE_NAMES),
             "workloads": {"prefix": {"presets": presets, "tree": tree.to_dict(), "leaf_regret": regret,
                                      "share": 0.1}}}
    path = tmp_path / "one-leaf.json"
    path.write_text(json.dumps(model))
    return str(path)


def test_missing_plugin_falls_back_with_a_note(tmp_path):
    """Without dphist-dawa the leaf's DAWA-approx is replaced by the installed candidate of least
    training regret in that leaf (Hb before identity), and the release says so; a model file rewritten
    in place is read again.  Kills: an error instead of the fallback, a fallback to the first installed
    label rather than the least regret, a model cache keyed by the path alone (a stale tree)."""
    model = _one_leaf_model(tmp_path, ["DAWA-approx@prefix", "Hb", "identity"])
    x = np.arange(32)
    assert make_algorithm("auto", model=model).run(x, 1.0, seed=1).notes["auto"]["preset"] == "DAWA-approx"
    with default_registry.without("dphist-dawa"):
        r = AutoPipeline("prefix", model=model).run(x, 1.0, seed=1)
    assert r.notes["auto"]["preset"] == "Hb" and "not installed" in r.warnings[-1]
    with default_registry.without("dphist-dawa", "dphist-boost"):
        assert AutoPipeline("prefix", model=model).run(x, 1.0, seed=1).notes["auto"]["preset"] == "identity"
    # the same file rewritten with another tree: read again (the cache is per file version, not per path)
    assert _one_leaf_model(tmp_path, ["Hb", "identity", "DAWA-approx@prefix"]) == model
    assert make_algorithm("auto", model=model).run(x, 1.0, seed=1).notes["auto"]["preset"] == "Hb"


def test_packaged_model_matches_its_training_configuration():
    """The shipped models (1-D and grids) load, have a tree per workload over installed presets (the grid
    model's: every preset of its sweep, all installed 2-D presets), and were trained from the shipped
    configurations (their SHA-256), the grid model with the grid trees' size.  Kills: a training TOML edited
    without retraining, a preset of the 2-D sweep left out of the grid model's candidates, a grid model
    trained with the 1-D tree size (depth 5, 20 rows a leaf)."""
    import hashlib
    model = load_model()
    assert set(model["trees"]) == {"identity", "prefix", "dpbench-random-2000"}
    assert model["training"]["config_sha256"] == hashlib.sha256(TRAINING_CONFIG.read_bytes()).hexdigest()
    assert model["training"]["excluded_sources"] == []
    for entry in model["trees"].values():
        assert entry["tree"].depth <= model["training"]["max_depth"]
    from dphist.selection.auto import TRAINING_CONFIG_2D
    grid = load_model(dims=2)
    assert grid["dims"] == 2 and set(grid["trees"]) == {"identity", "prefix", "dpbench-random-2000"}
    assert grid["training"]["config_sha256"] == hashlib.sha256(TRAINING_CONFIG_2D.read_bytes()).hexdigest()
    assert grid["training"]["excluded_sources"] == []
    from dphist.selection.train import MAX_DEPTH_2D, MIN_LEAF_2D    # the grid trees' own, smaller size
    assert (grid["training"]["max_depth"], grid["training"]["min_leaf"]) == (MAX_DEPTH_2D, MIN_LEAF_2D)
    assert all(entry["tree"].depth <= MAX_DEPTH_2D and entry["tree"].cells.min() >= MIN_LEAF_2D
               for entry in grid["trees"].values())
    from dphist.experiments.config import SweepConfig
    swept = {a.name for a in SweepConfig.from_toml(TRAINING_CONFIG_2D).algorithms}
    assert {name for name, _ in grid["trees"]["prefix"]["presets"].values()} == swept
    assert swept <= set(default_registry.available_names("algorithm")) and {"AHP-2D", "DAWA-2D"} <= swept


def test_parts_of_one_run_are_held_to_the_whole_epsilon():
    """Pipeline.prepare/execute (what auto runs on): a part spending more than the prepared run's epsilon
    is refused, and a part whose own shares fit but whose kernel already holds another part's charges
    is refused when the ledger would exceed the run's epsilon.  Kills: execute auditing the total
    against the part's epsilon only (the features' charge unchecked), or not at all."""
    from dphist.errors import PrivacyViolation
    x = np.arange(16)
    pipe = make_algorithm("identity")
    prepared = pipe.prepare(x, 1.0, seed=1)
    with pytest.raises(InvalidParameter, match="more than the run's"):
        pipe.execute(prepared, 1.5)
    prepared.kernel.handle("other", "selector", 0.5).laplace_identity(0.5)
    with pytest.raises(PrivacyViolation, match="ledger totals"):
        pipe.execute(prepared, 0.6)
    assert pipe.execute(pipe.prepare(x, 1.0, seed=1), 0.4).ledger.total == pytest.approx(0.4)


def _grid_pairs(shape, top=2):
    """Every grid of ``shape`` with counts 0..top (rows, flattened), and each with a record added to each cell."""
    n = shape[0] * shape[1]
    xs = np.array(list(itertools.product(range(top + 1), repeat=n)), dtype=float)
    for j in range(n):
        y = xs.copy()
        y[:, j] += 1
        yield xs, y


def _membership(shape, row_starts, col_starts):
    """(cells x blocks) 0/1 matrix of the blocks cut at ``row_starts`` x ``col_starts`` (row-major cells)."""
    r = np.searchsorted(row_starts, np.arange(shape[0]), side="right") - 1
    c = np.searchsorted(col_starts, np.arange(shape[1]), side="right") - 1
    block = (r[:, None] * len(col_starts) + c[None, :]).ravel()
    return np.eye(len(row_starts) * len(col_starts))[block]


def _grid_rows(shape, coarse_side, fine_side):
    """(D, C, W) of every row of v, from block-membership matrices (an independent formulation)."""
    n = shape[0] * shape[1]
    coarse = _membership(shape, *[(np.arange(min(coarse_side, s) + 1) * s // min(coarse_side, s))[:-1] for s in shape])
    fine = _membership(shape, *[np.arange(0, s, fine_side) for s in shape])
    cs, fs = coarse.sum(axis=0), fine.sum(axis=0)

    def stats(v):
        t = v.sum(axis=1, keepdims=True)
        d = np.abs(v - t / n).sum(axis=1)
        c = np.abs(v @ coarse - t * cs / n).sum(axis=1)
        w = np.abs(v - ((v @ fine) / fs) @ fine.T).sum(axis=1)
        return np.column_stack([d, c, w])
    return stats


@pytest.mark.parametrize("shape", [(1, 3), (2, 2), (3, 2), (3, 3)])
def test_grid_sensitivities_match_brute_force(shape, monkeypatch):
    """On a grid, each statistic's sensitivity is its largest change over every neighbouring pair (counts
    0..2) and the charged vector's L1 change is at most 1, reached.  With 2 x 2 coarse blocks a 3 x 3 grid
    has coarse blocks of 1, 2 and 4 cells and fine blocks of 4, 2 and 1.  The statistics are recomputed
    from block-membership matrices and checked against the library's.  Kills: the coarse sensitivity from
    the largest block (or one axis's smallest length alone), the fine one from the domain or from 1-D's
    4-bin blocks, the 1-D statistics used on the flattened cells, 2-D blocks cut along one axis only."""
    from dphist.selection.features import grid_statistic_sensitivities, grid_statistics
    monkeypatch.setattr("dphist.selection.features.COARSE_SIDE", 2)
    stats = _grid_rows(shape, 2, 2)
    sample = np.random.default_rng(shape[0] * 7 + shape[1]).integers(0, 9, (20, shape[0] * shape[1]))
    assert np.allclose(stats(sample.astype(float)), [grid_statistics(row, shape) for row in sample])
    brute = np.zeros(3)
    for x, y in _grid_pairs(shape):
        brute = np.maximum(brute, np.abs(stats(y) - stats(x)).max(axis=0))
    assert grid_statistic_sensitivities(shape) == pytest.approx(brute)
    scale = ShapeStatistics(shape[0] * shape[1], shape).scale
    vector = lambda v: np.column_stack([v.sum(axis=1), stats(v)])    # noqa: E731
    worst = max(float((np.abs(vector(y) - vector(x)) / scale).sum(axis=1).max()) for x, y in _grid_pairs(shape))
    grid = np.arange(shape[0] * shape[1]).reshape(shape)
    release = Pipeline(None, None, "singleton", FeatureFinalizer(), (0, 0, 1), dims=(1, 2)).run(grid, 1.0, seed=1)
    charged = {e.primitive: e.sensitivity for e in release.ledger}
    assert charged == {"custom:selection.shape-statistics": pytest.approx(1.0)} and worst == pytest.approx(1.0)


def test_auto_on_a_grid_uses_the_grid_model(tmp_path):
    """On a grid: the 2-D tree chooses among the 2-D presets, from the grid statistics; the ledger holds
    both parts (a linearised choice, DAWA-2D, runs on the run's one kernel reordered: the same as its own
    run seeded alike, one ledger); a grid model given as the 1-D one, or a 2-D model without a tree for
    the workload, is refused naming the problem, before anything is spent.  Kills: the 1-D tree or 1-D
    statistics used on grids, a linearised choice run on a second kernel whose ledger misses the
    features, a grid silently run through the 1-D model, a kernel reordered by a non-permutation."""
    from dphist.selection.auto import DEFAULT_MODEL_2D
    from dphist.selection.features import grid_statistics
    x = np.random.default_rng(3).poisson(20, (32, 32))
    pipe = make_algorithm("auto", workload="dpbench-random-2000")
    assert pipe.dims == (1, 2)
    r = pipe.run(x, 2.0, seed=2)          # epsilon 2: beyond the skip rule's range, the tree chooses
    a = r.notes["auto"]
    assert a["dims"] == 2 and r.shape == (32, 32) and a["label"] in load_model(None, dims=2)["trees"][
        "dpbench-random-2000"]["presets"]
    assert r.ledger.by_stage()["selector"] == pytest.approx(0.2) and r.ledger.total == pytest.approx(2.0)
    assert a["features"]["log2_domain"] == 10
    # the tree's coarse input is the grid's C (4 x 4 blocks) over the noisy total, not the 1-D C of the
    # flattened cells (16 runs of two rows): a ramp along the columns tells them apart
    ramp = np.random.default_rng(4).poisson(5 + 4 * np.arange(32))[None, :].repeat(32, axis=0)
    f = pipe.run(ramp, 2.0, seed=3).notes["auto"]["features"]
    grid_c, flat_c = grid_statistics(ramp, ramp.shape)[1], statistics(ramp.ravel())[1]
    assert f["coarse_tvd"] == pytest.approx(grid_c / (2 * ramp.sum()), abs=0.02)
    assert grid_c / (2 * ramp.sum()) > flat_c / (2 * ramp.sum()) + 0.1
    # a linearised choice on the run's kernel: DAWA-2D forced by a one-leaf model
    model = json.loads(DEFAULT_MODEL_2D.read_text())
    entry = model["workloads"]["prefix"]
    labels = entry["tree"]["labels"]
    one = RegretTree([-1], [0.0], [-1], [-1], [labels.index("DAWA-2D")], [10], [1.0], labels, FEATURE_NAMES)
    model["workloads"] = {"prefix": {"presets": entry["presets"], "tree": one.to_dict(),
                                     "leaf_regret": [[1.0] * len(labels)], "share": 0.1}}
    path = tmp_path / "grid.json"
    path.write_text(json.dumps(model))
    auto = make_algorithm("auto", workload="prefix", grid_model=str(path))
    r = auto.run(x, 1.0, seed=2)
    assert r.notes["auto"]["preset"] == "DAWA-2D" and r.notes["linearise"] == "hilbert"
    stages = r.ledger.by_stage()
    assert stages.pop("selector") == pytest.approx(0.1) and sum(stages.values()) == pytest.approx(0.9)
    dawa = make_algorithm("DAWA-2D")
    alone = dawa.run(x, 1.0, seed=7)
    assert np.array_equal(dawa.execute(dawa.prepare(x, 1.0, seed=7)).estimate, alone.estimate)
    with pytest.raises(InvalidParameter, match="permutation"):       # a cell twice would count its records twice
        dawa.prepare(x, 1.0, seed=7).kernel.reordered(np.zeros(x.size, dtype=np.int64))
    with pytest.raises(InvalidParameter, match="serves 2-D"):
        make_algorithm("auto", model=str(DEFAULT_MODEL_2D))
    no_tree = make_algorithm("auto", workload="identity", grid_model=str(path))
    with pytest.raises(InvalidParameter, match="supports 1-D histograms only.*not 'identity'"):
        no_tree.run(x, 1.0, seed=1)



def test_nonzero_candidate_feature_in_the_training_rows():
    """The candidate feature that ``benchmarks/selector_variants.py --nonzero`` measures: off, the training
    rows are the packaged procedure's (same columns, same draws); on, one more column, the noisy count of
    non-zero bins over ``n`` with Laplace noise of scale ``1 / (w share eps)`` (sensitivity 1), and the
    statistics' noise grown by the weight they give up.  Kills: the count replaced by another statistic
    (the total over ``n``), its noise scale not divided by its weight, the statistics' weights not reduced,
    the packaged rows' draws moved by the option."""
    from dphist.experiments.cells import Cell, cell_data
    from dphist.experiments.config import SweepConfig
    from dphist.experiments.engine import plan
    from dphist.selection.train import cell_features
    config = SweepConfig.from_mapping({
        "algorithms": [{"name": "identity"}], "domains": [64], "scales": [200], "epsilons": [100.0], "trials": 1,
        "datasets": [{"name": "synthetic", "shape": "zipf", "n": 64, "seed": 1, "label": "s"}],
        "workloads": ["identity"], "metrics": ["scaled-l2"], "seed": 3})
    index = [("s", 64, 200, 100.0)]
    counts, _ = cell_data(Cell("-", "s", 64, 200, True, 100.0, 0, 3), plan(config).job.sources["s"])
    off, _ = cell_features(index, config, 0.1, 4000, 5)
    packaged, _ = cell_features(index, config, 0.1, 4000, 5, nonzero=None)
    on, _ = cell_features(index, config, 0.1, 4000, 5, nonzero=0.3)
    assert off.shape[1] == len(FEATURE_NAMES) and np.array_equal(off, packaged)
    assert on.shape[1] == len(FEATURE_NAMES) + 1 and np.array_equal(on[:, 0], off[:, 0])   # the total's draws kept
    z = np.count_nonzero(counts) / 64
    assert 0.1 < z < 0.9 and abs(np.median(on[:, -1]) - z) < 0.002
    # Laplace(b) has mean absolute deviation b: here b = 1 / (0.3 * 0.1 * 100) / 64, far inside [0, 1]
    assert abs(np.abs(on[:, -1] - z).mean() / (1 / 3 / 64) - 1) < 0.1
    # the shape statistics' noise: weight (1 - 0.4 - 0.3) / 3 = 0.1 instead of 0.2, twice the spread
    spread = lambda X: np.median(np.abs(X[:, 3] - np.median(X[:, 3])))
    assert 1.6 < spread(on) / spread(off) < 2.5


def _exact_statistics(x, shape=None):
    """``(T, D, C, W)`` from the definitions in exact rational arithmetic (Python integers and Fractions),
    with the packaged blocks: 1-D 16 coarse blocks and runs of 4 bins, grids 4 x 4 and 2 x 2 blocks."""
    from fractions import Fraction
    rows, cols = (1, x.size) if shape is None else shape
    cells = [[int(v) for v in x.ravel()[i * cols:(i + 1) * cols]] for i in range(rows)]
    n, total = rows * cols, sum(map(sum, cells))
    mean = Fraction(total, n)

    def runs(length, side, coarse):
        if coarse:
            b = min(side, length)
            return [(i * length // b, (i + 1) * length // b) for i in range(b)]
        return [(s, min(s + side, length)) for s in range(0, length, side)]

    def blocks(coarse):
        sides = (1, 16 if coarse else 4) if shape is None else (4 if coarse else 2,) * 2
        row_runs = [(0, 1)] if shape is None else runs(rows, sides[0], coarse)
        for r0, r1 in row_runs:
            for c0, c1 in runs(cols, sides[1], coarse):
                yield [cells[i][j] for i in range(r0, r1) for j in range(c0, c1)]

    d = sum(abs(v - mean) for row in cells for v in row)
    c = sum(abs(sum(b) - mean * len(b)) for b in blocks(True))
    w = sum(abs(v - Fraction(sum(b), len(b))) for b in blocks(False) for v in b)
    return [float(total), float(d), float(c), float(w)]


def _exactness_inputs():
    """Vectors and grids (odd sides, shorter last runs, blocks of 1, 2 and 4 cells) of small counts, spikes
    and counts near the kernel's cap (totals near 2^50: products ``n X_j`` beyond int64)."""
    from dphist.kernel.private import count_cap
    rng = np.random.default_rng(11)
    shapes = [None] * 9 + [(1, 3), (3, 1), (2, 2), (3, 5), (4, 6), (7, 7), (15, 8), (16, 16)]
    sizes = [2, 3, 5, 6, 7, 13, 64, 130, 259]
    out = []
    for i, shape in enumerate(shapes):
        n = sizes[i] if shape is None else shape[0] * shape[1]
        for kind in range(3):
            x = [rng.poisson(3, n), rng.poisson(0.3, n) * rng.integers(1, 10 ** 6, n),
                 rng.integers(count_cap(n) - 5, count_cap(n) + 1, n)][kind].astype(np.int64)
            out.append((x, shape))
    return out


def test_statistics_are_exact_on_both_routes(monkeypatch):
    """The statistics of integer counts are the floats nearest their exact values, on the numpy route and
    on the compiled pass's source alike (so a process that switches to the compiled pass releases the same
    bits), through the kernel's entry (``checked``) and the public helpers.  The compiled functions run
    as Python here (``py_func``: the same source, no compilation in the tests; the benchmark's set-up
    compares the compiled pass itself with the numpy route).  Kills: the remainder's correction of ``D``
    or ``W`` with the wrong sign or left out, ``q`` rounded instead of floored, the shorter last run of
    bins left out of ``W``, an odd grid side's 2 x 1, 1 x 2 or 1 x 1 blocks taken as 2 x 2 or left out,
    ``C`` from floats (wrong near the cap on 2^15 bins), a compiled pass whose
    integers differ from the numpy route's, on either of its block sums (one int64, or split at 4 for
    totals of 2^61 and more), or a mechanism's release that differs between the routes (its direct use
    of the compiled integers)."""
    from types import SimpleNamespace
    from dphist.selection import _statistics_jit as jit
    from dphist.selection import features
    from dphist.selection.features import _vector, grid_statistics
    for name in ("coarse_sums", "coarse_parts", "deviations", "above_block", "line_sums", "grid_sums"):
        monkeypatch.setattr(jit, name, getattr(jit, name).py_func)
    source = SimpleNamespace(line_statistics=jit.line_statistics.py_func, grid_statistics=jit.grid_statistics.py_func)
    cases = [(x, shape, _exact_statistics(x, shape)) for x, shape in _exactness_inputs()]
    from dphist.kernel import SeededLaplace
    released = {}
    for route, split in ((None, None), (source, None), (source, 0)):   # split 0: the block sums split at 4
        monkeypatch.setattr(features, "_compiled", lambda n, first, route=route: route)
        if split is not None:
            monkeypatch.setattr(jit, "SPLIT_TOTAL", split)
        for i, (x, shape, expected) in enumerate(cases):
            assert list(_vector(x, shape, checked=True)) == expected, (route, split, shape, x.size)
            public = statistics(x) if shape is None else grid_statistics(x, shape)
            assert list(public) == expected[1:]
            if i % 3 == 2:          # the mechanism's own run on the kernel's (read-only) counts near the cap
                frozen = x.copy()
                frozen.setflags(write=False)
                out = ShapeStatistics(x.size, shape).run(frozen, 0.5, SeededLaplace(np.random.default_rng(i)))
                assert np.array_equal(out, released.setdefault(i, out)), (route, split, shape, x.size)
    from dphist.kernel.private import count_cap
    from fractions import Fraction
    monkeypatch.setattr(features, "_compiled", lambda n, first: None)
    n = 1 << 15     # n X_j and T s_j beyond 2^63, C's terms far below T (the routes share C's arithmetic)
    x = np.random.default_rng(5).integers(count_cap(n) - 9, count_cap(n) + 1, n)
    sums = [int(b.sum()) for b in np.split(x, 16)]
    assert _vector(x, checked=True)[2] == float(sum(abs(b - Fraction(sum(sums), 16)) for b in sums))


def test_compiled_pass_once_the_numpy_route_has_paid_for_it(monkeypatch):
    """The compiled pass serves domains of 2^14 bins or more once the process has measured COMPILED_BINS
    bins of such domains by the numpy route (the probe, asked before the counts are read, does not count),
    never smaller domains.  Kills: numba's compiler started by a single run (compiled from the first
    measurement, or the probe counted as one), small domains counted or compiled."""
    from dphist.selection import _statistics_jit, features
    big = features.COMPILED_MIN
    monkeypatch.setattr(features, "_jit", None)
    monkeypatch.setattr(features, "_numpy_bins", 0)
    monkeypatch.setattr(features, "COMPILED_BINS", 3 * big)
    assert features._compiled(big - 1, False) is None and features._compiled(big, True) is None
    assert [features._compiled(big, False) for _ in range(3)] == [None] * 3     # 3 big measurements: 3 * big
    assert features._compiled(big, True) is None and features._compiled(big - 1, False) is None
    assert features._compiled(big, False) is _statistics_jit
    assert features._compiled(big, True) is _statistics_jit and features._compiled(big - 1, False) is None


def test_probe_histogram_is_recognised_without_a_pass(monkeypatch):
    """The kernel's probe histogram (read-only, all zero, kept per domain) is measured once, then
    recognised; writeable zeros are measured every time, and data are.  Kills: the recognition dropped
    (a pass over the probe on every run), writeable arrays remembered (they may change)."""
    from dphist.selection import features
    calls = []
    real = features._exact_vector
    monkeypatch.setattr(features, "_exact_vector", lambda *a: calls.append(1) or real(*a))
    x = np.random.default_rng(3).poisson(5, 300)
    for _ in range(3):
        Pipeline(None, None, "singleton", FeatureFinalizer(), (0, 0, 1)).run(x, 1.0, seed=1)
    assert len(calls) == 4                   # the probe once, the data every run
    zeros = np.zeros(300, dtype=np.int64)
    for _ in range(2):
        assert not features._vector(zeros, checked=True).any()
    assert len(calls) == 6


def test_pooled_training_errors():
    """``train.expected_errors``: the presets of ``DATA_INDEPENDENT`` release the same error vector on any
    data of a size (same seed), so their errors may be averaged over sources; the pooling averages those
    columns over every dataset and every setting of one domain size and signal ``scale x epsilon``, and
    nothing else.  Kills: a data-dependent preset (``uniform``, ``AHP``) added to ``DATA_INDEPENDENT``;
    pooling across domain sizes or signals; the other candidates' columns pooled too; the packaged 1-D
    model trained with pooled labels (``benchmarks/selector_variants.py --labels`` found no gain: its
    training record names no pooled candidates)."""
    import pandas as pd

    from dphist.selection.train import DATA_INDEPENDENT, expected_errors
    rng = np.random.default_rng(4)
    x1, x2 = rng.poisson(50, 64), rng.zipf(1.5, 64).clip(0, 10**6)
    for name in DATA_INDEPENDENT:
        err = [make_algorithm(name).run(x, 0.5, seed=9).estimate - x for x in (x1, x2)]
        assert np.allclose(err[0], err[1], rtol=0, atol=1e-9 * np.abs(err[0]).max()), name
    for name in ("uniform",):           # the check can tell a data-dependent preset
        err = [make_algorithm(name).run(x, 0.5, seed=9).estimate - x for x in (x1, x2)]
        assert not np.allclose(err[0], err[1], rtol=0, atol=1e-6), name
    index = pd.MultiIndex.from_tuples(
        [(d, n, s, e) for d in ("a", "b") for n in (64, 128) for s, e in ((1000, 0.1), (100, 1.0), (1000, 1.0))],
        names=["dataset", "domain", "scale", "epsilon"])
    table = pd.DataFrame({"Hb": np.arange(12.0) + 1, "AHP": np.arange(12.0) + 1,
                          "identity": rng.random(12) + 1}, index=index)
    out = expected_errors(table)
    assert out["AHP"].equals(table["AHP"])
    for name in ("Hb", "identity"):
        for n in (64, 128):
            same = (index.get_level_values("domain") == n) & (index.get_level_values("scale")
                                                              * index.get_level_values("epsilon") == 100)
            assert np.allclose(out[name][same], table[name][same].mean())           # 2 datasets x 2 settings
            other = (index.get_level_values("domain") == n) & ~same
            assert np.allclose(out[name][other], table[name][other].mean())        # the signal 1,000 alone
    assert "pooled_errors" not in load_model()["training"]                     # the packaged labels: own means


def _rule_model(tmp_path, rule_label="Hb", regret=(1.3, 1.1, 1.5), tree_regret=1.2):
    """A one-leaf prefix model (the tree chooses identity) with a skip rule over 256 / 1,024 bins and
    epsilon 0.1 / 1: the cell (256, 1) names ``rule_label`` (regrets of DAWA-approx, Hb, identity at the
    whole epsilon: ``regret``), the other cells none."""
    path = _one_leaf_model(tmp_path, ["identity", "Hb", "DAWA-approx@prefix"])
    model = json.loads(open(path).read())
    cells = [{"domain": n, "epsilon": e, "settings": 12, "tree_regret": tree_regret, "regret": list(regret),
              "label": rule_label if (n, e) == (256, 1.0) else None} for n in (256, 1024) for e in (0.1, 1.0)]
    model["workloads"]["prefix"]["skip"] = {"domains": [256, 1024], "epsilons": [0.1, 1.0], "cells": cells}
    out = tmp_path / f"rule-{rule_label}.json"
    out.write_text(json.dumps(model))
    return str(out)


def test_skip_rule_runs_the_preset_with_the_whole_epsilon(tmp_path):
    """Where the public rule covers a run, nothing is measured: the ledger has the chosen preset's stages
    only (no 'selector' row) and totals epsilon, the preset's own run with the whole epsilon and the same
    seed is reproduced bit for bit, and the note and ``describe`` give the rule's cell and the training
    regrets that justified it; release mode the same.  Kills: features still measured (or charged) on the
    skip path, the preset run with (1 - share) epsilon, the rule looked up after the features, a note
    without the rule or its regrets."""
    model = _rule_model(tmp_path)
    x = np.random.default_rng(5).poisson(20, 256)
    r = make_algorithm("auto", model=model).run(x, 1.0, seed=3)
    assert "selector" not in r.ledger.by_stage() and r.ledger.total == pytest.approx(1.0, rel=1e-12)
    a = r.notes["auto"]
    assert a["preset"] == "Hb" and a["epsilon_features"] == 0 and a["epsilon_chosen"] == 1.0 and a["features"] == {}
    assert a["rule"] == {"domain": 256, "epsilon": 1.0, "settings": 12, "regret": 1.1, "tree_regret": 1.2}
    alone = make_algorithm("Hb").run(x, 1.0, seed=3)
    assert np.array_equal(alone.estimate, r.estimate) and r.ledger.by_stage() == alone.ledger.by_stage()
    text = describe(r)
    assert "public skip rule" in text and "1.100 against the tree's 1.200" in text and "no features measured" in text
    assert AutoPipeline("prefix", model=model).books(r) == pytest.approx(r.ledger.by_stage())
    released = make_algorithm("auto", model=model).run(x, 1.0)
    assert released.mode == "release" and released.notes["auto"]["rule"]["domain"] == 256
    assert "selector" not in released.ledger.by_stage() and released.ledger.total == pytest.approx(1.0, rel=1e-12)
    # the cells without a label leave the choice to the tree, with the features measured
    tree = make_algorithm("auto", model=model).run(x, 0.1, seed=3)
    assert tree.notes["auto"]["rule"] is None and tree.ledger.by_stage()["selector"] == pytest.approx(0.01)


def test_skip_rule_cells_and_off_grid():
    """``rule_cell``: a run falls in the cell nearest in log domain size and log epsilon, a geometric
    midpoint to the lower cell; outside the trained range of either, no cell (the tree chooses).  On the
    packaged random-ranges model: epsilon 1 at 4,096 bins skips, epsilon 2 (beyond the grid), 8,192 bins and 16
    bins measure the features.  Kills: outer buckets left open (a rule at epsilon 2), linear instead of
    geometric buckets, midpoints sent up, the rule keyed on (1 - share) epsilon, or on epsilon alone with
    ``k`` records per person (whose noise is that of ``epsilon / k``)."""
    from dphist.selection.auto import rule_cell
    cells = {(n, e): {"label": f"{n}:{e:g}"} for n in (256, 1024, 4096) for e in (0.01, 0.1, 1.0)}
    rule = {"domains": [256, 1024, 4096], "epsilons": [0.01, 0.1, 1.0], "cells": cells}
    at = lambda n, e: (rule_cell(rule, n, e) or {"label": None})["label"]
    assert at(512, 0.1) == "256:0.1" and at(513, 0.1) == "1024:0.1"       # 512 = sqrt(256 x 1,024)
    assert at(2000, 0.3) == "1024:0.1" and at(2100, 0.33) == "4096:1"     # linear midpoints would say 0.55
    assert at(4096, 1.0 + 1e-12) == "4096:1" and at(256, 0.01) == "256:0.01"
    assert at(4096, 0.9) == "4096:1" and at(300, 0.0316) == "256:0.01" and at(300, 0.0317) == "256:0.1"
    for n, e in ((4096, 1.01), (4096, 2.0), (4096, 0.009), (8192, 1.0), (255, 1.0), (16, 1.0)):
        assert at(n, e) is None, (n, e)
    pipe = make_algorithm("auto", workload="dpbench-random-2000")
    share = load_model()["trees"]["dpbench-random-2000"]["share"]
    x = np.random.default_rng(1).poisson(30, 8192)
    for eps in (1.0, 0.33):         # 0.33 lies above the midpoint 0.316 of 0.1 and 1; 0.95 x 0.33 below it
        assert pipe.run(x[:4096], eps, seed=1).notes["auto"]["rule"]["epsilon"] == 1.0
    for y, eps in ((x[:4096], 2.0), (x, 1.0), (x[:16], 1.0)):
        r = pipe.run(y, eps, seed=1)
        assert r.notes["auto"]["rule"] is None and r.ledger.by_stage()["selector"] == pytest.approx(share * eps)
    # four records per person: the noise of epsilon 1/4 per record, the cell of epsilon 0.1 (no rule there)
    assert pipe.run(x[:4096], 1.0, seed=1, contributions=4).notes["auto"]["rule"] is None


def test_skip_rule_with_a_missing_preset_or_a_bad_file(tmp_path):
    """A rule naming a preset that is not installed: the installed candidate of least whole-epsilon
    training regret in its cell runs, if still below the tree's, with a note; else the tree chooses
    (features measured), with a note.  A malformed rule is refused naming it.  Kills: an error instead
    of the fallback, a fallback that ignores the tree's regret, a rule label outside the candidates read
    silently."""
    x = np.arange(256)
    model = _rule_model(tmp_path, "DAWA-approx@prefix", regret=(1.0, 1.1, 1.5))
    assert make_algorithm("auto", model=model).run(x, 1.0, seed=1).notes["auto"]["preset"] == "DAWA-approx"
    with default_registry.without("dphist-dawa"):
        r = AutoPipeline("prefix", model=model).run(x, 1.0, seed=1)
    assert r.notes["auto"]["preset"] == "Hb" and r.notes["auto"]["rule"]["regret"] == 1.1
    assert "skip rule names DAWA-approx@prefix" in r.warnings[-1] and "selector" not in r.ledger.by_stage()
    with default_registry.without("dphist-dawa", "dphist-boost"):     # identity's 1.5 is above the tree's 1.2
        r = AutoPipeline("prefix", model=model).run(x, 1.0, seed=1)
    assert r.notes["auto"]["rule"] is None and r.ledger.by_stage()["selector"] == pytest.approx(0.1)
    assert "no installed candidate beats the tree" in r.warnings[-1] and r.notes["auto"]["preset"] == "identity"
    good = json.loads(open(model).read())
    for change, match in ((lambda s: s["cells"][0].update(label="PHP"), "malformed skip rule"),
                          (lambda s: s["cells"][0].update(regret=[1.0]), "malformed skip rule"),
                          (lambda s: s.update(epsilons=[1.0, 0.1]), "increasing|malformed"),
                          (lambda s: s.pop("cells"), "malformed skip rule")):
        bad = json.loads(json.dumps(good))
        change(bad["workloads"]["prefix"]["skip"])
        (tmp_path / "bad-rule.json").write_text(json.dumps(bad))
        with pytest.raises(InvalidParameter, match=match):
            make_algorithm("auto", model=str(tmp_path / "bad-rule.json"))


def test_training_writes_the_skip_rule(monkeypatch):
    """``train_models`` learns the rule that ``make selector`` writes: per (domain, epsilon), the candidate
    of least mean regret at the whole epsilon, where below the tree's own mean regret on those training
    rows at ``(1 - share)`` epsilon; recomputed here by brute force from the table and the written tree.
    The packaged models: the 1-D rule is consistent with its stored regrets and covers the sweep's grid;
    the grid model has its own (none for identity cells).  Kills: the tree's regret taken at the whole
    epsilon (or the candidates' at the reduced one), a cell averaged over another cell's rows, a rule kept
    where it does not beat the tree, the rule not written (or left out of the grid model)."""
    import pandas as pd

    import dphist.selection.train as T
    from dphist.experiments.config import SweepConfig
    config = SweepConfig.from_toml(TRAINING_CONFIG)
    labels = list(T.candidates(config, "prefix"))
    index = pd.MultiIndex.from_tuples([(d, n, s, e) for d in "abcd" for n in (256, 4096) for s in (10**3, 10**6)
                                       for e in (0.01, 0.1, 1.0)], names=["dataset", "domain", "scale", "epsilon"])
    rng = np.random.default_rng(8)
    eps = index.get_level_values("epsilon").to_numpy()
    errors = (1 + rng.random((len(index), len(labels)))) / eps[:, None]
    big = (index.get_level_values("domain") == 4096) & (eps == 1.0)
    errors[big, labels.index("Hb")] = errors[big].min(axis=1) * 0.95        # Hb best there: a rule
    table = pd.DataFrame(errors, index=index, columns=labels)
    rows = {}

    def features(ix, config, share, draws, seed):           # informative rows: the tree can learn something
        rows["share"] = share
        setting = np.repeat(np.arange(len(ix)), draws)
        X = np.random.default_rng(seed).random((setting.size, len(FEATURE_NAMES)))
        X[:, 0] = np.asarray(errors).argmin(axis=1)[setting]
        rows["X"], rows["S"] = X, setting
        return X, setting
    monkeypatch.setattr(T, "cell_features", features)
    entry = T.train_models({"prefix": table}, config, draws=2, min_leaf=3)["workloads"]["prefix"]
    # the workload's own share (the packaged procedure's): its features' noise, its regrets, its entry
    share = T.SHARES_1D["prefix"]
    assert rows["share"] == share == entry["share"] != T.SHARES_1D["identity"]
    tree = RegretTree.from_dict(entry["tree"])
    chosen = tree.predict(rows["X"])
    at = T.errors_at(table, 1 - share).to_numpy()
    written = {(c["domain"], c["epsilon"]): c for c in entry["skip"]["cells"]}
    assert set(written) == {(n, e) for n in (256, 4096) for e in (0.01, 0.1, 1.0)}
    for (n, e), cell in written.items():
        here = (index.get_level_values("domain") == n) & (eps == e)
        full = (errors[here] / errors[here].min(axis=1, keepdims=True)).mean(axis=0)
        mine = here[rows["S"]]
        tree_regret = np.mean(at[rows["S"][mine], chosen[mine]] / errors[rows["S"][mine]].min(axis=1))
        assert cell["tree_regret"] == pytest.approx(tree_regret, abs=1e-6)
        assert cell["regret"] == pytest.approx(full, abs=1e-6)
        assert cell["label"] == (labels[int(np.argmin(full))] if full.min() < tree_regret else None)
    assert written[(4096, 1.0)]["label"] == "Hb" and None in [c["label"] for c in written.values()]
    assert "skip" not in T.train_models({"prefix": table}, config, draws=2, skip=False)["workloads"]["prefix"]
    assert T.SKIP_RULE == {1: True, 2: True}
    packaged = json.loads(DEFAULT_MODEL.read_text())
    assert packaged["training"]["skip_rule"] == T.SKIP_RULE_TEXT
    for wl, entry in packaged["workloads"].items():
        cells = entry["skip"]["cells"]
        assert {(c["domain"], c["epsilon"]) for c in cells} == {(n, e) for n in config.domains for e in config.epsilons}
        for c in cells:
            best = int(np.argmin(c["regret"]))
            assert c["label"] == (entry["tree"]["labels"][best] if c["regret"][best] < c["tree_regret"] else None)
    assert packaged["workloads"]["dpbench-random-2000"]["skip"]["cells"][-1]["label"] == "Hb"   # 4,096 bins, eps 1
    from dphist.selection.auto import DEFAULT_MODEL_2D
    grid = json.loads(DEFAULT_MODEL_2D.read_text())
    assert grid["training"]["skip_rule"] == T.SKIP_RULE_TEXT
    assert all(c["label"] is None for c in grid["workloads"]["identity"]["skip"]["cells"])   # no gain: none
    assert {c["label"] for c in grid["workloads"]["prefix"]["skip"]["cells"]} == {None, "DAWA-2D"}


def test_skip_rule_on_a_grid():
    """The grid model's skip rule: a 32 x 32 grid at epsilon 1 (the cell of 1,024 cells and epsilon 1) runs
    the rule's DAWA-2D with the whole epsilon on the run's kernel reordered along its curve, bit for bit its
    own run, no features; the conformance kit's checks (books, reproducibility, release mode) pass on that
    path.  Kills: the rule looked up with the 1-D model on grids, the linearised choice given (1 - share)
    epsilon or a second kernel on the skip path, books that still expect a selector stage."""
    from dphist.testing import check_pipeline
    x = np.random.default_rng(6).poisson(20, (32, 32))
    pipe = make_algorithm("auto", workload="prefix")
    r = pipe.run(x, 1.0, seed=2)
    a = r.notes["auto"]
    assert a["dims"] == 2 and a["preset"] == "DAWA-2D" and a["rule"]["domain"] == 1024 and "cells" in a["path"][0]
    assert "selector" not in r.ledger.by_stage() and r.ledger.total == pytest.approx(1.0, rel=1e-12)
    assert np.array_equal(make_algorithm("DAWA-2D").run(x, 1.0, seed=2).estimate, r.estimate)
    check_pipeline(pipe, epsilon=1.0, histograms={"poisson-32x32": x})


def test_the_path_text_kept_per_leaf_is_the_tree_walks():
    """``auto``'s choice finds the leaf by comparisons and writes the path from each leaf's steps kept with
    the loaded model: the same leaf and text as ``RegretTree.walk``, on inputs built for every leaf of every
    packaged tree from its nodes (each on its thresholds, the ties, or just above them) and on random ones.
    Kills: a kept step whose test, threshold text or feature drifts from the walk's, a tie sent the other
    way, the leaf's own line changed."""
    from dphist.selection.auto import load_model
    rng = np.random.default_rng(8)
    for dims in (1, 2):
        for entry in load_model(dims=dims)["trees"].values():
            tree, explain = entry["tree"], entry["explain"]
            rows, stack = [], [(0, {})]
            while stack:                        # per leaf, each feature's interval (lo, hi] on its path
                node, box = stack.pop()
                f = int(tree.feature[node])
                if f < 0:
                    base = rng.uniform(-3, 8, len(FEATURE_NAMES))
                    for pick in (1, 0):         # on the upper ends (ties), or just above the lower ends
                        x = base.copy()
                        for g, (lo, hi) in box.items():
                            x[g] = hi if pick and hi < np.inf else np.nextafter(lo, np.inf) if lo > -np.inf else hi
                        rows.append(list(map(float, x)))
                    continue
                t = float(tree.threshold[node])
                lo, hi = box.get(f, (-np.inf, np.inf))
                stack.append((int(tree.left[node]), {**box, f: (lo, min(hi, t))}))
                stack.append((int(tree.right[node]), {**box, f: (max(lo, t), hi)}))
            rows += [list(map(float, r)) for r in rng.uniform(-3, 8, (200, len(FEATURE_NAMES)))]
            assert [explain(r) for r in rows] == [tree.walk(r) for r in rows]
            assert {explain(r)[0] for r in rows} == set(np.flatnonzero(tree.feature < 0).tolist())
