"""The exact searches of dphist.segmentation on threads give the serial loop's bits.

Mode (a) runs on threads by blocks (``search._sse_on_threads`` for SSE + penalty costs; blocks of
cost rows, ``Cost.rows_between``, for the others, L1Deviation's rows on one linked list per
thread).  The block sizes are shrunk here (``_small_blocks``) so that inputs of a few hundred units
cross many block boundaries, thread ranges and linked-list skips.  Inputs: random values, flat runs
and few distinct integers (exact ties everywhere: the tie rule decides), unit bounds that are not
single positions.  Each test names the mutation it kills.
"""
import multiprocessing
from pathlib import Path

import numpy as np
import pytest

from dphist import release_records
from dphist import segmentation as S
from dphist.errors import InvalidParameter
from dphist.kernel import private, streams
from dphist.segmentation import kernels, parallel, search

RNG = np.random.default_rng(2511)
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def _small_blocks(monkeypatch):
    monkeypatch.setattr(search, "PARALLEL_MIN_UNITS", 1)
    monkeypatch.setattr(search, "END_BLOCK", 7)          # odd: blocks and thread ranges of unequal length
    monkeypatch.setattr(search, "SMALLEST_BLOCK", 1)
    monkeypatch.setattr(search, "ROW_BLOCK", 3)          # odd: the even-run rule of the linked lists
    monkeypatch.setattr(private, "_PARTS_MIN_DRAWS", 0)  # report-noisy-min's noise in parts on threads


def _inputs():
    """(name, values, unit bounds) with ties: flat, few distinct integers, steps, random."""
    n = 230
    few = RNG.integers(0, 4, n).astype(float)
    steps = np.repeat(RNG.integers(0, 50, 23), 10).astype(float)
    rand = np.round(RNG.laplace(0, 20, n) + 100)
    units = np.unique(np.r_[0, RNG.choice(np.arange(1, n), 90, replace=False), n])
    return [("flat", np.full(n, 5.0), None), ("few", few, None), ("steps", steps, None),
            ("random", rand, None), ("random-units", rand, units), ("few-units", few, units),
            ("sorted", np.sort(rand)[::-1].copy(), None)]


@pytest.mark.parametrize("name,values,units", _inputs(), ids=[c[0] for c in _inputs()])
@pytest.mark.parametrize("penalty_last", [False, True])
@pytest.mark.parametrize("penalty", ["inverse", "zero"])
def test_sse_blocks_equal_the_serial_loop(_small_blocks, name, values, units, penalty_last, penalty):
    """Every entry of best and back (not only the traced optimum) equals the serial kernel's, on 2
    and 3 threads.  Kills: a shared part that stops one start short of the block (a lost candidate)
    or a finishing part that starts past the block's first end; a finishing scan that keeps the last
    of equal totals ("<=") or runs downwards (the tie rule, on the flat and few-valued inputs); thread
    ranges that skip or repeat an end; a finishing part reading ``best`` of an end not yet final."""
    # no penalty: every run of equal values costs exactly 0, so many segmentations tie exactly
    table = (lambda m: 3.0 + 40.0 / m) if penalty == "inverse" else (lambda m: 0.0 * m)
    cost = S.SSEPenalty(values, table, penalty_last=penalty_last)
    b = S.units_of(units, values.size)
    args = (b, cost.prefix, cost.prefix_sq, cost.penalty, cost.penalty_last)
    best, back = kernels.sse_all_intervals(*args)
    for threads in (2, 3):
        best_t, back_t = search._sse_on_threads(args, b.size - 1, threads)
        assert np.array_equal(best_t, best) and np.array_equal(back_t, back), (name, threads)
    if penalty == "zero" and name == "flat":
        assert np.all(back == 0)                        # the tie rule: the earliest start, everywhere
    one = S.optimal(cost, units, threads=1)
    two = S.optimal(cost, units, threads=2)
    assert np.array_equal(one.bounds, two.bounds) and one.cost == two.cost


@pytest.mark.parametrize("name,values,units", _inputs(), ids=[c[0] for c in _inputs()])
def test_l1_rows_on_threads_equal_rows_one_by_one(name, values, units):
    """Rows from per-thread linked lists, asked for in blocks of odd and even sizes with gaps (a
    skip forward) equal the serial rows bit for bit.  Kills: a skip that does not remove the units
    between two runs (or leaves the pointer unsettled), a run of rows written at the wrong offset,
    a block kernel that pairs rows wrongly at an odd end."""
    b = S.units_of(units, values.size)
    k = b.size - 1
    serial = S.L1Deviation(values)
    expected = [serial.rows_from(a, b) for a in range(k)]
    threaded = S.L1Deviation(values)
    starts = [0, 6, 7, 19, 40, 41, 70, k - 5]
    for lo, hi in zip(starts, starts[1:] + [k]):
        rows = threaded.rows_between(lo, hi, b, threads=2)
        assert len(rows) == hi - lo
        for a, row in zip(range(lo, hi), rows):
            assert np.array_equal(row, expected[a]), (name, a)
    for lo, hi in ((3, 40), (40, 44)):                  # going back: the lists are rebuilt
        for a, row in zip(range(lo, hi), S.L1Deviation(values).rows_between(lo, hi, b, threads=3)):
            assert np.array_equal(row, expected[a]), (name, a)


@pytest.mark.parametrize("name,values,units", _inputs(), ids=[c[0] for c in _inputs()])
def test_noisy_row_search_is_bit_identical(_small_blocks, name, values, units):
    """The exact search with noise drawn per row (DAWA's noisy-min, a seeded generator) gives the
    same bounds and cost on 1, 2 and 3 threads.  Kills: rows handed to the transform out of order
    or with another row's sizes (noise lands on other candidates), a block relaxed before its
    rows' first units are final."""
    found = []
    for threads in (1, 2, 3):
        rng = np.random.default_rng(5)
        cost = S.L1Deviation(values).then(lambda d, m: d + rng.laplace(0, 4.0, d.size) + 6.0 + 0.0 * m)
        found.append(S.optimal(cost, units, threads=threads))
    for other in found[1:]:
        assert np.array_equal(other.bounds, found[0].bounds) and other.cost == found[0].cost, name


@pytest.mark.parametrize("contributions", [1, 2])
def test_noisy_min_noise_in_parts_is_bit_identical(_small_blocks, monkeypatch, contributions):
    """The kernel's report-noisy-min on 2 and 3 threads draws its noise in parts (dphist.kernel.streams) and
    publishes the 1-thread release bit for bit: partition and estimate, whose finalizer noise is drawn
    after the search from the same generator (record or person level, k = 2).  Kills: a batch given
    another batch's noise or sizes, the clamp or group cost skipped on the threads, the generator not
    moved to the end of the search's draws (the finalizer's noise shifts); the route silently not taken
    (the compiled route's parts: ``LaplaceParts.prepare``)."""
    from dphist import Pipeline
    counts = np.random.default_rng(8).integers(0, 60, 150)
    taken = []
    prepare = streams.LaplaceParts.prepare
    monkeypatch.setattr(streams.LaplaceParts, "prepare", lambda self: taken.append(1) or prepare(self))

    def release(threads):
        parallel.set_threads(threads)
        try:
            return Pipeline(None, None, ("dawa.l1", {"variant": "exact", "calibration": "noisy-min"}),
                            "group-mean", (0.0, 0.5, 0.5)).run(counts, 0.5, seed=3, contributions=contributions)
        finally:
            parallel.set_threads(None)
    one = release(1)
    assert not taken
    for threads in (2, 3):
        other = release(threads)
        assert taken
        assert np.array_equal(other.partition.bounds, one.partition.bounds)
        assert np.array_equal(other.estimate, one.estimate)


def test_noisy_min_parts_with_a_size_cost_and_clamped_costs(_small_blocks, monkeypatch):
    """The parts route with a group cost that depends on the size (a table indexed by each candidate's
    size in bins, over units of unequal sizes) and costs beyond the clamp (``COST_CAP`` lowered to 2^10:
    with a declared sensitivity of 2^-6, deviations above 16 are clamped) equals the serial route, cut
    points and the generator's next draws.  Kills: a batch given another batch's sizes, the clamp
    skipped on the threads."""
    from dphist import Partition, segmentation
    from dphist.kernel import PrivateKernel, SeededLaplace
    rng = np.random.default_rng(9)
    x = rng.integers(0, 40, 300)
    units = Partition(rng.permutation(300), np.unique(np.r_[0, rng.choice(np.arange(1, 300), 110, replace=False), 300]))
    monkeypatch.setattr(private, "COST_CAP", 2.0 ** 10)
    found = []
    for threads in (1, 2, 3):
        parallel.set_threads(threads)
        try:
            rng = np.random.default_rng(12)
            kernel = PrivateKernel(x, SeededLaplace(rng))
            cuts = kernel.handle("test.parts", "partitioner", 1.0).noisy_min_segmentation(
                lambda v: segmentation.L1Deviation(v), 1.0, units=units, sensitivity=2.0 ** -6,
                group_cost=lambda m: 2.0 + 0.01 * m * m)
            found.append((cuts, rng.random(3)))
        finally:
            parallel.set_threads(None)
    for cuts, after in found[1:]:
        assert np.array_equal(cuts, found[0][0]) and np.array_equal(after, found[0][1])


class _SizeCost:
    """A stateless transform (``thread_safe``: applied on the threads) that weighs each candidate by
    its size, so a row finished with another row's sizes changes the totals."""

    thread_safe = True

    def __call__(self, dev, sizes):
        return dev * 1.5 + np.sqrt(sizes) * 3.0 + 2.0


@pytest.mark.parametrize("name,values,units", _inputs(), ids=[c[0] for c in _inputs()])
def test_thread_safe_transform_on_threads_is_bit_identical(_small_blocks, name, values, units):
    """A transform declared thread_safe is applied by the threads to their own rows; the search
    equals the serial one (bounds, cost).  Kills: a thread applying it with another row's sizes or
    first unit, a finished row stored at another row's place, the transform applied twice."""
    one = S.optimal(S.L1Deviation(values).then(_SizeCost()), units, threads=1)
    for threads in (2, 3):
        other = S.optimal(S.L1Deviation(values).then(_SizeCost()), units, threads=threads)
        assert np.array_equal(other.bounds, one.bounds) and other.cost == one.cost, (name, threads)


class _SizeOffsets:
    """A transform declaring ``size_offsets`` (as DAWA's postprocess costs do): ``(dev - minus[size]) + plus``,
    which the threads apply inside their compiled relax loop."""

    thread_safe = True

    def __init__(self, n):
        self.minus = np.sqrt(np.arange(n + 1)) * 3.0 - 0.25 * np.arange(n + 1)
        self.plus = 2.0

    def __call__(self, dev, sizes):
        out = dev - self.minus[sizes]
        out += self.plus
        return out

    def size_offsets(self, n, shared=None):
        return self.minus[:n + 1], self.plus


@pytest.mark.parametrize("name,values,units", _inputs(), ids=[c[0] for c in _inputs()])
def test_size_offsets_in_the_compiled_relax_is_bit_identical(_small_blocks, monkeypatch, name, values, units):
    """A transform with ``size_offsets`` is applied by the threads' relax loop itself (no rows finished in
    Python); the search equals the serial one, bounds and cost, and that route is taken.  Kills: the
    size read in units instead of positions (unequal units), ``plus`` or ``minus`` left out, the two
    operations reordered (other floats), the rows of one buffer read for the next block."""
    taken = []
    compiled = search._compiled_rows_on_threads
    monkeypatch.setattr(search, "_compiled_rows_on_threads", lambda *a: taken.append(1) or compiled(*a))
    one = S.optimal(S.L1Deviation(values).then(_SizeOffsets(values.size)), units, threads=1)
    for threads in (2, 3):
        other = S.optimal(S.L1Deviation(values).then(_SizeOffsets(values.size)), units, threads=threads)
        assert np.array_equal(other.bounds, one.bounds) and other.cost == one.cost, (name, threads)
    assert len(taken) == 2


# the exact-search algorithms of the recorded-release fixtures (recorded with one thread, serial code)
_RECORDED = {
    "dawa": ("DAWA-postprocess", "DAWA-noisy-min", "DAWA-dpbench", "dawa.l1-sorted-exact-noisy-min",
             "dawa.l1-knobs"),
    "ahp": ("AHP-optimal", "ahp.optimal-unsorted"),
    "sortaki": ("sDAHP-exact", "sortaki.dp-uee-exact-unsorted", "sortaki.dp-custom-exact"),
}


@pytest.mark.parametrize("plugin", sorted(_RECORDED))
def test_recorded_releases_on_threads(_small_blocks, plugin):
    """The plugins' recorded releases (written by the serial code) are reproduced with every exact
    search forced onto 2 threads and tiny blocks.  Kills: anything above that moves one boundary of
    a seeded release of DAWA, S1 (the same search), AHP-optimal or SORTaki's exact DPP."""
    parallel.set_threads(2)
    try:
        maker, recorded = release_records.fixture_of(ROOT / "plugins" / plugin / "tests")
        algorithms = maker.algorithms()
        chosen = {name: algorithms[name] for name in _RECORDED[plugin]}
        assert release_records.mismatches(recorded, chosen) == []
    finally:
        parallel.set_threads(None)


def _search_in_child(queue):
    x = np.round(np.random.default_rng(3).laplace(0, 30, 3000) + 50)
    found = S.optimal(S.L1Deviation(x).then(lambda d, m: d + 9.0), threads=2)
    queue.put(found.bounds.tolist())


def test_a_forked_child_searches_on_threads_after_the_parent():
    """After a threaded search in the parent (the pool is running), a forked child (the experiment
    engine's and the auditor's process executors) runs its own threaded search and gets the parent's
    result.  Kills: a pool inherited by the child without its threads (the child waits forever;
    the timeout fails the test), a threading layer that ends forked children."""
    x = np.round(np.random.default_rng(3).laplace(0, 30, 3000) + 50)
    parent = S.optimal(S.L1Deviation(x).then(lambda d, m: d + 9.0), threads=2).bounds.tolist()
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_search_in_child, args=(queue,))
    child.start()
    try:
        got = queue.get(timeout=30)
    finally:
        child.join(10)
        if child.is_alive():
            child.kill()
    assert child.exitcode == 0 and got == parent


def test_thread_counts_are_checked(monkeypatch):
    """Kills: a zero, negative, boolean or text thread count accepted (a search on no thread), a bad
    environment value ignored silently, the environment not read."""
    cost = S.SSEPenalty(np.arange(10.0), np.ones(11))
    for bad in (0, -2, True, "2", 1.5):
        with pytest.raises(InvalidParameter, match="threads"):
            S.optimal(cost, threads=bad)
    monkeypatch.setenv("DPHIST_THREADS", "many")
    with pytest.raises(InvalidParameter, match="DPHIST_THREADS"):
        parallel.default_threads()
    monkeypatch.setenv("DPHIST_THREADS", "3")
    assert parallel.default_threads() == 3
    monkeypatch.delenv("DPHIST_THREADS")
    monkeypatch.setenv("NUMBA_NUM_THREADS", "1")
    assert parallel.default_threads() == 1
    parallel.set_threads(4)
    try:
        assert parallel.default_threads() == 4
    finally:
        parallel.set_threads(None)


def test_run_graph_runs_each_node_after_its_needs():
    """Every node runs once, after all its needs, on 1 to 3 threads; an error stops the graph and is
    raised; needs that can never be met (a cycle) are refused, not waited on forever.  Kills: a node
    released when one of two needs is done, a node run twice, an error swallowed, a deadlock on a cycle."""
    import threading
    import time
    needs = {(r, c): [x for x in ((r - 1, c), (r, c - 1), (r - 2, c + 1)) if min(x) >= 0 and x[1] < 5]
             for r in range(6) for c in range(5)}
    for threads in (1, 2, 3):
        done, lock = [], threading.Lock()

        def work(node):
            with lock:
                assert all(other in done for other in needs[node]), node
            time.sleep(0.0002 * (node[1] == 4))        # a slow column: the others move on meanwhile
            with lock:
                done.append(node)
        parallel.run_graph(work, needs, threads)
        assert sorted(done) == sorted(needs)

    def fail(node):
        if node == (2, 2):
            raise KeyError("boom")
    with pytest.raises(KeyError):
        parallel.run_graph(fail, needs, 2)
    with pytest.raises(ValueError):
        parallel.run_graph(lambda node: None, {1: [2], 2: [1], 3: []}, 2)


def test_split_covers_the_range():
    """Kills: ranges that overlap, leave a gap, or cut a run of paired rows at an odd offset."""
    for lo, hi, parts, multiple in ((0, 10, 3, 1), (5, 6, 2, 1), (3, 40, 2, 2), (3, 41, 3, 2), (0, 0, 2, 1)):
        ranges = parallel.split(lo, hi, parts, multiple)
        covered = [i for a, b in ranges for i in range(a, b)]
        assert covered == list(range(lo, hi)) and len(ranges) <= parts
        assert all((a - lo) % multiple == 0 for a, _ in ranges)


@pytest.mark.parametrize("max_floats,tile_rows", [(10 ** 9, 5), (2_000, 2), (10 ** 9, 64)])
def test_structurefirst_layers_on_threads(monkeypatch, max_floats, tile_rows):
    """StructureFirst's prefix-cost layers (its own pruned dynamic program) filled by the wavefront
    on 2 and 3 threads equal the serial layers bit for bit, and so does the count of scored candidates
    (the same pruning), with every layer kept or with checkpoints recomputed up to a shrinking end, in
    cells of several layers (23 layers in tiles of 5, the last of 3; checkpoint blocks in tiles of 3) or
    of one.  Kills: a part that starts from another hint or reads the layer below before it is filled
    (a wavefront off by one diagonal), parts that skip or repeat ends, a layer freed too early, a tile
    that skips or repeats a layer."""
    voptimal = pytest.importorskip("dphist_structurefirst.voptimal")
    monkeypatch.setattr(voptimal, "THREAD_MIN_ENDS", 1)
    monkeypatch.setattr(voptimal, "TILE_ROWS", tile_rows)
    monkeypatch.setattr(voptimal, "PARTS_PER_THREAD", 3)
    monkeypatch.setattr(voptimal, "CHEAP_PER_END", 0)     # every table on the wavefront
    rng = np.random.default_rng(8)
    x = np.r_[np.round(rng.pareto(1.2, 150) * 20), np.full(60, 7.0), rng.integers(0, 3, 90)]
    k = 24
    serial = voptimal.PrefixCosts(x, k, max_floats=max_floats, threads=1)
    wanted = [(g, x.size - 3 * (k - g)) for g in range(k - 1, 0, -1)]
    expected = [serial.layer(g, upto).copy() for g, upto in wanted]
    for threads in (2, 3):
        costs = voptimal.PrefixCosts(x, k, max_floats=max_floats, threads=threads)
        for (g, upto), layer in zip(wanted, expected):
            got = costs.layer(g, upto)
            assert np.array_equal(got[:upto + 1], layer[:upto + 1]), (threads, g)
        assert costs.scored == serial.scored


def test_structurefirst_cheap_layers_stay_on_one_thread(monkeypatch):
    """Layers are filled on the calling thread up to the first that scores ``CHEAP_PER_END`` candidates per
    end or more, the rest by the wavefront from there: the all-zero histogram of the kernel's probe (two
    candidates per end, ``_flat_layer``) never reaches it; on real data whose first layer is cheap and later ones not, the
    wavefront starts right after the first costly layer.  The same layers and count either way.  Kills:
    the rule inverted or never applied (the probe's thousands of tiny cells handed between threads), the
    first layer's count taken for the whole table's (a cheap first layer keeping everything on one thread)."""
    voptimal = pytest.importorskip("dphist_structurefirst.voptimal")
    monkeypatch.setattr(voptimal, "THREAD_MIN_ENDS", 1)
    starts, filled, inside = [], [], []
    run_graph, layer_part = parallel.run_graph, voptimal.next_layer_part

    def graph(work, needs, *a, **kw):             # the first layer the wavefront fills
        inside.append(True)
        try:
            return run_graph(work, needs, *a, **kw)
        finally:
            inside.clear()
            starts.append(min(filled))
            filled.clear()

    def part(prev, g, *rest):
        if inside:
            filled.append(g)
        return layer_part(prev, g, *rest)

    monkeypatch.setattr(parallel, "run_graph", graph)
    monkeypatch.setattr(voptimal, "next_layer_part", part)
    k = 14
    x = np.random.default_rng(3).poisson(2000 / np.arange(1, 301) ** 1.1).astype(float)     # a power law
    serial = voptimal.PrefixCosts(x, k, threads=1)
    per_end, prev = [], serial.layer(1)
    for g in range(2, k):
        out = np.empty(x.size + 1)
        per_end.append(voptimal.next_layer(prev, g, serial.p, serial.p2, serial.inv, out, x.size) / (x.size + 1))
        prev = out
    first_costly = 2 + next(i for i, c in enumerate(per_end) if c >= voptimal.CHEAP_PER_END)
    assert 2 < first_costly < k - 1                     # layer 2 cheap, a later one not
    for values, expected in ((np.zeros(300), []), (x, [first_costly + 1])):
        starts.clear()
        serial = voptimal.PrefixCosts(values, k, threads=1)
        costs = voptimal.PrefixCosts(values, k, threads=2)
        for g in range(k - 1, 0, -1):
            assert np.array_equal(costs.layer(g), serial.layer(g))
        assert costs.scored == serial.scored
        assert starts == expected


class _Deviation:
    thread_safe = True

    def __call__(self, dev, sizes):
        return dev * 1.0


@pytest.mark.parametrize("thread_safe", [False, True])
def test_row_search_ties_keep_the_earliest_start(_small_blocks, thread_safe):
    """On flat values every segmentation costs exactly 0: the tie rule alone decides (one group).
    With steps of equal values, each step is a group at cost 0 and merges of steps cost more, so the
    earliest start of each zero-cost last group wins.  Kills: a block relaxation that keeps the last
    of equal totals ("<=") or relaxes a block's rows in another order."""
    fn = _Deviation() if thread_safe else (lambda d, m: d * 1.0)
    flat = np.full(200, 4.0)
    for threads in (1, 2, 3):
        assert S.optimal(S.L1Deviation(flat).then(fn), threads=threads).bounds.tolist() == [0, 200]
    steps = np.repeat(np.arange(20.0) * 3, 10)
    one = S.optimal(S.L1Deviation(steps).then(fn), threads=1)
    for threads in (2, 3):
        other = S.optimal(S.L1Deviation(steps).then(fn), threads=threads)
        assert np.array_equal(other.bounds, one.bounds) and other.cost == one.cost


def test_pool_workers_search_on_one_thread(monkeypatch):
    """The auditor's forked workers (and the sweep engine's, by the same call) run the searches on one
    thread each: the pool's processes already share the cores.  Kills: the limit dropped from the
    workers' start (2 workers x every core each), or set in the parent instead."""
    from dphist.audit.sampling import forked_pool
    monkeypatch.delenv("DPHIST_THREADS", raising=False)
    monkeypatch.setenv("NUMBA_NUM_THREADS", "2")
    with forked_pool(2) as pool:
        assert pool.submit(parallel.default_threads).result(timeout=60) == 1
    assert parallel.default_threads() == 2


def test_sse_graph_has_a_few_hundred_cells(monkeypatch):
    """The SSE search's graph on 2^15 units has 32 blocks of 1,024 ends (528 cells), on 2^13 units 16
    blocks of 512 (136 cells), on 2^17 units 128 blocks of 1,024: each cell's Python and scheduling stay under 2% of its work.  The graph is
    only built (``run_graph`` stubbed: no search is run).  Kills: the blocks capped at 512 ends whatever
    the size (2,080 cells at 2^15), blocks of k / 32 at every size (528 cells of 256 ends at 2^13),
    blocks without a cap (32 blocks of 4,096 ends at 2^17: a long chain of
    diagonal cells)."""
    seen = {}
    monkeypatch.setattr(parallel, "run_graph", lambda work, needs, threads, key=None: seen.update(needs=needs))
    for k, blocks in ((1 << 15, 32), (1 << 13, 16), (1 << 17, 128)):
        args = (np.arange(k + 1), np.zeros(k + 1), np.zeros(k + 1), np.zeros(k + 1), False)
        search._sse_on_threads(args, k, 2)
        assert len(seen["needs"]) == blocks * (blocks + 1) // 2, k
    assert search._sse_block_width(2048) == search.SMALLEST_BLOCK
