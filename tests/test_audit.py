"""dphist.audit: the bound, the pairs, the sampling paths, the broken twins it must catch, bad input.

Each test names the mutation it kills.  All audits are seeded (deterministic).
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.stats import binom

import dphist
from dphist import InvalidParameter, Pipeline, UnknownComponent, make_algorithm
from dphist.audit import FAST_PAIRS, FULL_PAIRS, STRUCTURED_PAIRS, Pair, audit, parse_pair, twins
from dphist.audit.search import hill_climb, mutate, random_pair
from dphist.audit.bounds import (cp_lower, cp_upper, detectable_epsilon, epsilon_lower_bound,
                                 per_side_level)
from dphist.audit.events import Event, row_hash
from dphist.audit.sampling import batch_capable, canonical_labels, run_batched, run_looped
from dphist.audit.report import audit_table, write_reports


# ------------------------------------------------------------------ bounds
def test_clopper_pearson_matches_binomial_tails():
    """Kills: swapping a and 1 - a, or the Beta parameters, in cp_lower / cp_upper."""
    n, a = 50, 0.01
    for k in (1, 7, 25, 49):
        lo, hi = float(cp_lower(k, n, a)), float(cp_upper(k, n, a))
        # L is the p with P[Bin(n, p) >= k] = a; U the p with P[Bin(n, p) <= k] = a
        assert math.isclose(binom.sf(k - 1, n, lo), a, rel_tol=1e-6)
        assert math.isclose(binom.cdf(k, n, hi), a, rel_tol=1e-6)
    assert cp_lower(0, n, a) == 0.0 and cp_upper(n, n, a) == 1.0


def test_lower_bound_covers_at_its_level():
    """Kills: a bound that is too optimistic (e.g. a normal approximation, or level a used twice).

    20,000 simulated audits of a pair of Bernoulli(0.3) vs Bernoulli(0.3 e^-0.5) proportions at
    a = 0.05 per side: the bound exceeds the true log-ratio 0.5 in at most 2a = 10 % of them.
    """
    rng = np.random.default_rng(7)
    n, a, p1, p2 = 400, 0.05, 0.3, 0.3 * math.exp(-0.5)
    k1, k2 = rng.binomial(n, p1, 20_000), rng.binomial(n, p2, 20_000)
    exceed = np.mean(epsilon_lower_bound(k1, n, k2, n, a) > math.log(p1 / p2))
    assert exceed <= 2 * a, exceed
    assert exceed > 0.001  # and is not vacuous


def test_bonferroni_level_and_detectable_ceiling():
    """Kills: dropping the Bonferroni factor (level = alpha) or the union over the two bounds."""
    assert per_side_level(1e-3, 240) == pytest.approx(1e-3 / 480)
    a = per_side_level(1e-3, 100)
    assert detectable_epsilon(1000, a) == pytest.approx(float(epsilon_lower_bound(1000, 1000, 0, 1000, a)))
    r = audit("identity", samples=1000, seed=1, pairs=FAST_PAIRS[:2])
    assert r.tests == 2 * 6 * 2 and r.level == pytest.approx(r.alpha / (2 * r.tests))


# ------------------------------------------------------------------ pairs
@pytest.mark.parametrize("pair", FULL_PAIRS, ids=lambda p: p.name)
def test_pairs_are_neighbours(pair):
    """Kills: a pair differing by more than one record, or a negative count."""
    d = pair.counts_prime - pair.counts
    assert np.abs(d).sum() == 1 and d[pair.bin] == pair.change and pair.counts_prime.min() >= 0


def test_pair_family_covers_the_brief():
    sizes = {len(p.x) for p in FULL_PAIRS}
    assert {1, 2, 3, 5, 8} <= sizes
    assert any(p.change < 0 for p in FULL_PAIRS) and any(p.change > 0 for p in FULL_PAIRS)
    assert any(p.bin == 0 for p in FULL_PAIRS) and any(p.bin == len(p.x) - 1 for p in FULL_PAIRS)
    with pytest.raises(InvalidParameter):
        Pair("bad", (0, 0), 1, -1)


# ------------------------------------------------------------------ sampling
def test_batched_and_looped_runs_agree_in_distribution():
    """Kills: a batched path whose noise scale or ledger differs from Pipeline.run's.

    4,000 trials each; the variance of Laplace(1/eps) is 2/eps^2 = 8 at eps = 0.5; the sample
    variance's standard error is about 8 * sqrt(5/4000) = 0.28; tolerance 1.2 (> 4 SE).
    """
    pipe = make_algorithm("identity")
    x = np.array([3, 0, 7])
    b = run_batched(pipe, x, 0.5, 4000, np.random.default_rng(1))
    seeds = np.random.SeedSequence(2).generate_state(4000, np.uint64)
    lo = run_looped(pipe, x, 0.5, seeds)
    for out in (b, lo):
        assert out.estimate.shape == (4000, 3)
        assert np.allclose(out.estimate.mean(axis=0), x, atol=0.25)
        assert np.allclose(out.estimate.var(axis=0), 8.0, atol=1.2)


def test_batch_capability_is_declared_not_guessed():
    """Kills: batching a data-dependent component (its partition would be the same for every trial)."""
    assert batch_capable(make_algorithm("identity")) and batch_capable(make_algorithm("uniform"))
    assert not batch_capable(make_algorithm("AHP"))
    assert not batch_capable(Pipeline("laplace", "noisy-count", "singleton", "group-mean", (0.5, 0, 0.5)))


def test_canonical_labels_identify_set_partitions():
    a = dphist.Partition.from_labels([2, 2, 0, 1])
    b = dphist.Partition.from_labels([0, 0, 5, 9])
    assert np.array_equal(canonical_labels(a), canonical_labels(b))
    assert np.array_equal(canonical_labels(a), [0, 0, 1, 2])
    h = row_hash(np.array([[0, 0, 1], [0, 1, 1], [0, 0, 1]]))
    assert h[0] == h[2] != h[1]


def test_canonical_labels_match_first_appearance_on_random_partitions():
    """Kills: a group's first bin taken as its last (``maximum.reduceat``) or as its first in the order;
    the singleton or one-group shortcut wrong under a shuffled order."""
    rng = np.random.default_rng(7)
    for n in (1, 2, 5, 17, 64):
        for k in {1, n, min(n, 3), max(1, n // 2)}:
            cuts = np.sort(rng.choice(np.arange(1, n), size=k - 1, replace=False)) if k > 1 else []
            part = dphist.Partition(rng.permutation(n), np.r_[0, cuts, n])
            plain, seen = [], {}
            for g in part.labels():      # the first group met in domain order gets 0, the next 1, ...
                plain.append(seen.setdefault(g, len(seen)))
            assert np.array_equal(canonical_labels(part), plain), (n, k)


def test_events_are_fixed_sets():
    e = Event("bin", "above", threshold=1.0)
    assert e.hits(np.array([0.0, 1.0, 2.0, 3.0])) == 2
    e = Event("partition", "in", values=(5, 9))
    assert e.hits(np.array([5, 6, 9, 9], dtype=np.uint64)) == 3


# ------------------------------------------------------------------ reproducibility
def test_seeded_audit_is_reproducible_and_records_os_seed():
    """Kills: a draw outside the root SeedSequence; a seed not recorded; results depending on workers
    (three cases on two workers: the last one runs with its runs split over the workers, which must
    give the rows one worker gives: every seed run once, none twice)."""
    r1 = audit("identity", samples=500, pairs=FAST_PAIRS[:3])          # seed from the OS
    r2 = audit("identity", samples=500, pairs=FAST_PAIRS[:3], seed=r1.seed)
    assert r1.rows == r2.rows and r1.epsilon_lower_bound == r2.epsilon_lower_bound
    pipe = make_algorithm("AHP")
    one = audit(pipe, samples=300, selection=300, pairs=FAST_PAIRS[:3], seed=5, workers=1)
    two = audit(pipe, samples=300, selection=300, pairs=FAST_PAIRS[:3], seed=5, workers=2)
    assert one.rows == two.rows


def test_audit_presets_gives_each_presets_own_audit():
    """Kills: a seed handed to another preset's audit, settings not passed on, results returned under
    the wrong names; a run-time estimate that cannot tell a long run from a short one."""
    from dphist.audit import audit_presets
    from dphist.audit.many import run_seconds
    names, seeds = ["uniform", "H", "Hb"], {"uniform": 3, "H": 4, "Hb": 5}
    many = audit_presets(names, level="fast", samples=200, seeds=seeds, workers=2)
    assert list(many) == names
    for n in names:
        one = audit(n, level="fast", samples=200, seed=seeds[n], workers=1)
        assert many[n].rows == one.rows and many[n].samples == 200 and many[n].seed == seeds[n]
    assert run_seconds("MWEM") > run_seconds("uniform")   # MWEM's run is tens of times uniform's
    with pytest.raises(InvalidParameter, match="seeds given for presets not audited: AHP"):
        audit_presets(["H"], seeds={"AHP": 1})
    with pytest.raises(InvalidParameter, match="workers"):
        audit_presets(["H"], workers=0)


# ------------------------------------------------------------------ must catch
def _assert_caught(result, epsilon=1.0):
    assert not result.passed and result.epsilon_lower_bound > epsilon, str(result)
    w = result.witness
    assert w is not None and w.epsilon_lower_bound == result.epsilon_lower_bound
    k1, k2 = w.hits
    assert k1 > k2 and w.bounds[0] > w.bounds[1] * math.exp(epsilon)
    return w


def test_catches_half_scale_laplace_finalizer():
    """The default audit of the component (batched, 200,000 samples per side; time: benchmarks/bench_audit.py).

    Kills: an auditor blind to a 2x under-scaled Laplace mechanism behind an honest initializer.
    """
    w = _assert_caught(audit(twins.BatchedHalfScaleLaplace(), seed=3))
    assert w.event.feature in {"bin", "bin-and-noisy", "total"}


def test_catches_half_scale_laplace_looped_too():
    """The conformance kit's twin as it is (no batch declaration: looped): the path is not the detector."""
    from dphist.testing.twins import HalfScaleLaplaceFinalizer
    pipe = Pipeline(None, None, "singleton", HalfScaleLaplaceFinalizer(), (0, 0, 1))
    _assert_caught(audit(pipe, samples=3000, pairs=FAST_PAIRS[:2], seed=4, workers=1))


def test_catches_partitioner_on_true_counts():
    """Kills: an auditor without partition events (the sham vetted mechanism adds no noise at all)."""
    w = _assert_caught(audit(twins.TrueRunsPartitioner(), samples=300, level="fast", seed=3, workers=1))
    assert w.event.feature in {"partition", "group", "shape"}


def test_catches_efpa_coefficient_count_with_too_little_noise():
    """Kills: an auditor that looks only at single bins and totals (k shows in the output's shape/order)."""
    w = _assert_caught(audit(twins.CoarseEFPAFinalizer(), samples=1000, level="fast", seed=3, workers=1))
    assert w.event.feature in {"shape", "order", "partition", "group", "bin-and-noisy"}


def dpbench_dawa(ratio):
    """DAWA with the DPBench calibration: the dawa plugin's option when it exists, else the labelled twin."""
    try:
        return make_algorithm("DAWA", calibration="dpbench", ratio=ratio), "dawa plugin"
    except (InvalidParameter, TypeError):
        return twins.dpbench_dawa(ratio), "twin (dphist.audit.twins.DPBenchL1Partitioner)"


def test_catches_dawa_partition_under_dpbench_calibration():
    """eps_1 = 1 (ratio 0.5 of epsilon 2), the issue's [5,5,5,5,5] +1 at the middle bin.

    Kills: an auditor without group-membership / partition events, or with too few samples to see
    a loss of several epsilon on an event of probability ~3 %.
    """
    pipe, source = dpbench_dawa(0.5)
    pair = next(p for p in FULL_PAIRS if p.name == "flat5-middle")
    w = _assert_caught(audit(pipe, epsilon=2.0, samples=10_000, pairs=[pair], seed=1), epsilon=2.0)
    assert w.event.feature in {"partition", "group", "shape", "order"}, (source, w.describe())


# ------------------------------------------------------------------ no false alarms
def test_no_false_alarm_over_repeated_audits_of_identity():
    """50 independent audits of the Laplace mechanism at alpha = 1e-3: 0 false alarms (measured: 0).

    Kills: a bound computed on the selection runs (reused samples make the chosen event look
    better than it is), a missing Bonferroni factor, a mis-scaled batched noise source.
    """
    root = np.random.SeedSequence(2026)
    results = [audit("identity", samples=5000, level="fast", noise="float", seed=int(s.generate_state(1)[0]))
               for s in root.spawn(50)]
    alarms = sum(not r.passed for r in results)
    assert alarms == 0, [str(r) for r in results if not r.passed]
    # the audit is not vacuous: it comes close to the true loss 1 on most runs
    assert np.median([r.epsilon_lower_bound for r in results]) > 0.7


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("kwargs, message", [
    (dict(epsilon=0), "epsilon"), (dict(epsilon=-1), "epsilon"), (dict(alpha=0), "alpha"),
    (dict(alpha=1), "alpha"), (dict(samples=99), "samples"), (dict(samples=1.5e3), "samples"),
])
def test_bad_settings_are_refused(kwargs, message):
    with pytest.raises(InvalidParameter, match=message):
        audit("identity", **kwargs)


def test_unknown_name_suggests_close_matches():
    with pytest.raises(UnknownComponent, match="AHP"):
        audit("AHPP")


def test_reports_are_written_whole(tmp_path):
    r = audit("identity", samples=300, pairs=FAST_PAIRS[:1], seed=1)
    out = write_reports([r], tmp_path / "rep")
    data = json.loads((out / "audit.json").read_text())
    assert data[0]["seed"] == str(r.seed) and data[0]["passed"] is True and data[0]["rows"]
    assert "identity" in (out / "audit.md").read_text()
    with pytest.raises(InvalidParameter, match="exists"):
        write_reports([r], out)
    assert "| identity | 1 |" in audit_table([r])


# ------------------------------------------------------------------ command line
def _cli(*argv):
    from dphist.cli import main
    return main(["audit", *argv])


@pytest.mark.parametrize("argv, message", [
    (["identity", "--pair", "0,3:+2@1"], "one record"), (["identity", "--pair", "1,2;3,4"], "not neighbours"),
    (["identity", "--pair", "0,-1:+1@0"], "negative count"), (["identity", "--pair", "1,2;1,2,3"], "2 and 3 bins"),
    (["identity", "--time-budget", "0"], "time budget"), (["identity", "--time-budget", "-5"], "time budget"),
    (["identity", "--level", "fast", "--thorough"], "disagree"),
    (["AHPP"], "AHP"), (["identity", "--epsilon", "0"], "epsilon"), (["identity", "-e", "-1"], "epsilon"),
    (["identity", "--alpha", "1"], "alpha"), (["identity", "--alpha", "0"], "alpha"),
    (["identity", "--samples", "99"], "samples"), (["identity", "--samples", "many"], "samples"),
    ([], "at least one"), (["identity", "--all"], "not both"),
])
def test_cli_bad_input_is_refused_before_anything_runs(argv, message, capsys, tmp_path):
    out = tmp_path / "rep"
    assert _cli(*argv, "--output", str(out)) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_cli_refuses_existing_output_without_force(tmp_path, capsys):
    out = tmp_path / "rep"
    out.mkdir()
    (out / "keep.txt").write_text("x")
    assert _cli("identity", "--fast", "--seed", "1", "--output", str(out)) == 2
    assert "--force" in capsys.readouterr().err and (out / "keep.txt").exists()
    assert _cli("identity", "--fast", "--seed", "1", "--output", str(out), "--force",
                "--table", str(tmp_path / "AUDIT.md")) == 0
    assert sorted(p.name for p in out.iterdir()) == ["audit.json", "audit.md"]
    assert "| identity |" in (tmp_path / "AUDIT.md").read_text()


def test_cli_pair_and_level_options_match_python(tmp_path):
    """Kills: --pair parsed differently from pairs= (the same seed must give the same rows)."""
    out = tmp_path / "rep"
    assert _cli("identity", "--pair", "0,3,5:+1@2", "--samples", "300", "--seed", "9", "--output", str(out)) == 0
    data = json.loads((out / "audit.json").read_text())[0]
    assert data["audit_level"] == "pairs" and {r["pair"] for r in data["rows"]} == {"0,3,5:+1@2"}
    child = int(np.random.SeedSequence([9, *b"identity"]).generate_state(2, np.uint64)[0])
    same = audit("identity", pairs=["0,3,5:+1@2"], samples=300, seed=child)
    assert [r["epsilon_lower_bound"] for r in data["rows"]] == [r["epsilon_lower_bound"] for r in same.rows]


def test_cli_exit_status_is_1_when_an_algorithm_fails(monkeypatch, capsys):
    """Kills: a CLI that reports FAIL but exits 0 (make audit would stay green)."""
    from dphist import register, preset
    @preset("twin-true-runs-for-cli")
    def twin():
        return Pipeline("laplace", None, twins.TrueRunsPartitioner(), "group-mean", (0.4, 0.2, 0.4))
    register(twin, kind="algorithm")
    try:
        assert _cli("twin-true-runs-for-cli", "--fast", "--seed", "2") == 1
        assert "FAIL" in capsys.readouterr().out
    finally:
        dphist.default_registry.unregister("algorithm", "twin-true-runs-for-cli")


def test_partition_expand_keeps_leading_axes():
    """Kills: a batched finalizer whose spread mixes trials (the batched path's one core change)."""
    part = dphist.Partition([2, 0, 1, 3], [0, 1, 3, 4])
    totals = np.array([[3.0, 4.0, 5.0], [6.0, 8.0, 1.0]])
    out = part.spread(totals)
    assert out.shape == (2, 4)
    for t in range(2):
        assert np.array_equal(out[t], part.spread(totals[t]))
    single = dphist.Partition.singletons(3, order=[2, 0, 1])
    assert np.array_equal(single.expand(np.array([[1.0, 2.0, 3.0]]))[0], single.expand(np.array([1.0, 2.0, 3.0])))


# ------------------------------------------------------------------ your own pairs, levels, time budget
def test_parse_pair_reads_both_spellings():
    """Kills: a parser that swaps the bin and the change, or numbers bins from 1."""
    p = parse_pair("0,3,5:+1@2")
    assert p.x == (0, 3, 5) and p.bin == 2 and p.change == +1
    assert p.counts_prime.tolist() == [0, 3, 6]
    q = parse_pair("4,4:-1@0")
    assert q.counts_prime.tolist() == [3, 4]
    r = parse_pair("0,3,5;0,2,5")
    assert r.bin == 1 and r.change == -1


@pytest.mark.parametrize("text, message", [
    ("0,3,5:+2@1", "one record"), ("0,3:-1@0", "cannot remove"), ("0,-3:+1@1", "negative count"),
    ("1,2;1,2,3", "2 and 3 bins"), ("1,2;3,4", "not neighbours"), ("1,2;1,2", "not neighbours"),
    ("1,2:+1@5", "outside a domain of 2 bins"), ("1,2", "cannot read"), ("a,b:+1@0", "cannot read"),
])
def test_malformed_pairs_are_refused_with_the_problem_named(text, message):
    """Kills: a malformed pair that reaches the audit (a bound about histograms that are not neighbours)."""
    with pytest.raises(InvalidParameter, match=message):
        parse_pair(text)


def test_user_pairs_replace_the_families_and_search():
    """Kills: pairs= ignored (the level's families run instead) or (x, x') histograms misread."""
    r = audit("identity", pairs=["0,3,5:+1@2", ([1, 1], [1, 2])], samples=300, seed=1)
    assert r.audit_level == "pairs" and r.pairs == 2 and not r.searched
    assert {row["pair"] for row in r.rows} == {"0,3,5:+1@2", "user-1"}


@pytest.mark.parametrize("budget", [0, -1, "soon", float("nan")])
def test_time_budget_must_be_positive(budget):
    with pytest.raises(InvalidParameter, match="time budget"):
        audit("identity", time_budget=budget)


def test_time_budget_skips_cases_but_keeps_the_number_of_tests():
    """Kills: a time budget that shrinks m after the fact (the Bonferroni level would be wrong)."""
    full = audit("identity", level="fast", samples=300, noise="float", seed=2)
    cut = audit("identity", level="fast", samples=300, noise="float", seed=2, time_budget=1e-6)
    assert cut.tests == full.tests and cut.level == full.level
    assert cut.skipped > 0 and not cut.complete and full.complete


def test_old_pairs_spelling_still_works_with_a_deprecation_warning():
    with pytest.warns(DeprecationWarning, match="level='fast'"):
        r = audit("identity", pairs="fast", samples=300, noise="float", seed=1)
    assert r.audit_level == "fast"
    with pytest.raises(InvalidParameter, match="unknown audit level"):
        audit("identity", level="quick")


def test_structured_families_cover_the_shapes_of_the_brief():
    """Kills: a family reduced to small domains (the >16-bin leak of the prototypes would pass)."""
    sizes = {len(p.x) for p in STRUCTURED_PAIRS}
    assert min(sizes) <= 2 and max(sizes) >= 256 and any(16 < s < 256 for s in sizes)
    assert max(max(p.x) for p in STRUCTURED_PAIRS) >= 1 << 20
    ties = [p for p in STRUCTURED_PAIRS if "tie" in p.name]
    assert ties and all(len(set(p.counts_prime.tolist())) < len(p.x) or len(set(p.x)) < len(p.x) for p in ties)
    ends = [p for p in STRUCTURED_PAIRS if p.name.startswith("ends")]
    assert ends and all(p.x[0] > 0 and p.x[-1] > 0 and sum(p.x[1:-1]) == 0 for p in ends)
    assert any(p.x == p.x[::-1] for p in STRUCTURED_PAIRS)                         # symmetric
    for p in STRUCTURED_PAIRS:
        d = p.counts_prime - p.counts
        assert np.abs(d).sum() == 1 and p.counts_prime.min() >= 0


def test_search_moves_stay_neighbouring_pairs_within_the_domain_limits():
    """Kills: a move that leaves a negative count, an out-of-range bin or more than 256 bins."""
    rng = np.random.default_rng(0)
    p = random_pair(rng)
    for _ in range(3000):
        p = mutate(p, rng) if rng.random() < 0.9 else random_pair(rng)
        assert 1 <= len(p.x) <= 256 and 0 <= p.bin < len(p.x) and min(p.x) >= 0
        assert p.counts_prime.min() >= 0


def test_hill_climb_moves_towards_a_higher_score_and_is_reproducible():
    """Kills: a search that ignores its scores (random pairs only) or draws outside its generator.

    A synthetic score (the changed bin's count, capped) rewards pairs no start has.
    """
    def evaluate(pairs, first):
        return [min(p.x[p.bin], 10_000) / 100 for p in pairs]

    starts = [Pair("start", (1, 1, 1, 1), 0)]
    a = hill_climb(evaluate, starts, np.random.default_rng(5), evaluations=60, keep=3, restarts=0)
    b = hill_climb(evaluate, starts, np.random.default_rng(5), evaluations=60, keep=3, restarts=0)
    assert [x[0] for x in a] == [x[0] for x in b]
    assert a[0][1] > 1.0 and len({(p.x, p.bin, p.change) for p, _ in a}) == 3


def test_the_search_hands_fresh_pairs_to_the_audit():
    """Kills: search slots left out of m, or search pairs audited on the search's own runs."""
    r = audit("identity", seed=4, samples=2000, selection=500, noise="float", stop_on_failure=False)
    assert r.searched and r.passed
    assert any(row["origin"] == "search" for row in r.rows)
    assert r.tests >= 2 * 4 * len(r.searched)
