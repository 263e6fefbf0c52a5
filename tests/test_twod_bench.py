"""2-D sweeps in the experiment engine (DPBench's 2-D benchmark) and the auditor's search over grid pairs.

Each test names the mutation it kills."""
import numpy as np
import pytest

from dphist import InvalidParameter, Pipeline, make_algorithm, metrics
from dphist.audit import audit, auditor
from dphist.audit.pairs import GRID_PAIRS
from dphist.audit.search import MAX_CELLS, SIDES, mutate, random_grid_pair
from dphist.audit.twins import AxisSwapLaplaceFinalizer
from dphist.experiments.cells import Cell
from dphist.experiments.config import SweepConfig
from dphist.experiments.engine import run_sweep
from dphist.workloads import dpbench_random_rectangles


@pytest.fixture
def grid_source(tmp_path):
    """A 16 x 16 grid in a data directory (a data directory's ``.npy`` loads with its shape)."""
    from dphist.datasets import files
    path = tmp_path / "grid16.npy"
    np.save(path, np.random.default_rng(0).integers(0, 40, (16, 16)))
    before = list(files._extra_dirs)
    files.add_data_dir(tmp_path)
    yield path
    files._extra_dirs[:] = before


def test_a_sweep_over_a_grid_reduces_per_axis_and_scores_rectangles(grid_source):
    """Kills: a grid's domain taken as a number of cells instead of a side per axis (16x16 -> 8 cells),
    the sample drawn flat (the grid lost before the pipeline), the workload built as 1-D ranges over
    the flattened cells instead of DPBench's rectangles, or a seed that differs from the cell's own."""
    path = grid_source
    cfg = SweepConfig.from_mapping(dict(algorithms=["UG"], datasets=[{"name": "grid16", "label": "g"}],
                                        epsilons=[1.0], scales=[1000], domains=[8], trials=2, seed=5,
                                        workloads=["dpbench-random-2000"], metrics=["scaled-l2"], executor="serial"))
    res = run_sweep(cfg, output=False, progress=False).results
    assert res["domain"].tolist() == [64, 64]
    source = np.load(path)
    p = source.reshape(8, 2, 8, 2).sum(axis=(1, 3)).astype(float)
    p /= p.sum()
    w = dpbench_random_rectangles((8, 8), 2000)
    for t, value in zip(res["trial"], res["value"]):
        cell = Cell("UG", "g", 64, 1000, True, 1.0, int(t), 5)
        counts = np.random.default_rng(cell.data_seed()).multinomial(1000, p.reshape(-1)).reshape(8, 8)
        est = make_algorithm("UG").run(counts, 1.0, seed=cell.algorithm_seed()).estimate
        assert value == pytest.approx(metrics.scaled_error(w, counts, est, 2), rel=1e-12)


def test_a_sweep_refuses_a_1d_preset_on_a_grid_before_any_cell(grid_source):
    """Kills: the plan's dims check removed (every cell of the 1-D preset would fail while running)."""
    cfg = SweepConfig.from_mapping(dict(algorithms=["Hb"], datasets=["grid16"], trials=1, executor="serial",
                                        workloads=["identity"], metrics=["mse"]))
    with pytest.raises(InvalidParameter, match="algorithm 'Hb' on dataset .*supports 1-D.*nothing was spent"):
        run_sweep(cfg, output=False, progress=False)


def test_grid_search_moves_stay_neighbouring_grid_pairs():
    """Kills: a 2-D move that leaves a negative count, a cell outside its grid or more than MAX_CELLS
    cells, a grid flattened to a vector, or moves that never change the grid's shape or never move
    the changed cell along both axes, or no transpose (checked by hand: the transpose move removed fails)."""
    rng = np.random.default_rng(1)
    p = random_grid_pair(rng)
    shapes, rows_moved, cols_moved, reshaped, transposed = set(), 0, 0, 0, 0
    for _ in range(3000):
        moved = rng.random() < 0.9
        q = mutate(p, rng) if moved else random_grid_pair(rng)
        assert q.shape is not None and len(q.shape) == 2 and 1 <= len(q.x) <= MAX_CELLS
        assert 0 <= q.bin < len(q.x) and min(q.x) >= 0 and q.counts_prime.min() >= 0
        if moved and q.shape == p.shape:
            (a, b), (c, d) = divmod(p.bin, p.shape[1]), divmod(q.bin, q.shape[1])
            rows_moved += a != c
            cols_moved += b != d
        elif moved:
            reshaped += 1
            transposed += q.shape == p.shape[::-1]
        shapes.add(q.shape)
        p = q
    assert rows_moved > 50 and cols_moved > 50 and reshaped > 50 and transposed > 10
    assert any(r > c for r, c in shapes) and any(r < c for r, c in shapes)
    assert {r for r, _ in shapes} >= set(SIDES) - {1}


@pytest.fixture
def small_search(monkeypatch):
    """The default level with search evaluations of 3,000 batched runs a side and no confirmations
    (the level's own: 20,000 and two), to keep the tests cheap; pairs, moves and restarts unchanged."""
    from dataclasses import replace
    monkeypatch.setitem(auditor.LEVELS, "default", replace(auditor.LEVELS["default"], search_samples=(3000, 100),
                                                           confirm=0))


def test_the_search_over_grid_pairs_catches_a_leak_the_fixed_grid_pairs_miss(small_search):
    """The axis-swap twin leaks only on tall grids below their first ``columns`` rows: the fixed grid
    pairs (square or wide) miss it; the default level's search finds such a grid and the audit,
    on fresh runs, certifies the loss.

    Kills: the search left off for 2-D pipelines (the audit passes), a search that proposes 1-D pairs
    for a 2-D-only pipeline (every case refused, a pass), moves that never transpose or reshape a
    grid, or the search's pairs audited on the search's own runs (the origin would not be "search")."""
    pipe = Pipeline(None, None, "singleton", AxisSwapLaplaceFinalizer(), dims=(2,), name="axis-swap")
    fixed = audit(pipe, seed=3, pairs=list(GRID_PAIRS), samples=3000, selection=1000, noise="float",
                  stop_on_failure=False)
    assert fixed.passed
    r = audit(pipe, seed=3, samples=3000, selection=1000, noise="float")
    assert not r.passed and r.witness.origin == "search"
    rows, cols = r.witness.pair.shape
    assert rows > cols and r.witness.pair.bin // cols >= cols
    assert r.witness.epsilon_lower_bound > 1.5
    assert any("search over grid pairs" in n for n in r.notes)


def test_an_honest_grid_mechanism_passes_the_audit_with_the_search(small_search):
    """Kills: a search over grids whose scores leak into the final bound (an in-sample estimate on the
    searched pairs would exceed epsilon on a correct mechanism), or search slots left out of the
    number of tests."""
    good = audit(Pipeline(None, None, "singleton", "group-mean", dims=(2,), name="laplace-2d"), seed=3,
                 samples=3000, selection=1000, noise="float")
    assert good.passed and good.searched
    assert all(s["pair"].get("shape") for s in good.searched)
    assert good.tests >= 2 * len(good.searched)
