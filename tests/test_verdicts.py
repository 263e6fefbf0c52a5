"""Statistical verdicts: confidence intervals on mean errors, paired signed-rank tests with Holm's
correction, the report's verdict text and the figures' error bars and per-family panels."""
from __future__ import annotations

import numpy as np
import pytest
from matplotlib.container import ErrorbarContainer
from matplotlib.text import Text

from dphist import plots
from dphist.errors import InvalidParameter
from dphist.experiments import Results, SweepConfig, analysis, run_sweep
from dphist.experiments.analysis import holm, paired_comparison, signed_rank_test
from dphist.experiments.report import write_report

TIMES = {c: 0.0 for c in ("time_initializer", "time_sorter", "time_partitioner", "time_finalizer")}


def table(errors: dict, workloads=("all-ranges",), settings=None) -> Results:
    """Rows from ``errors[algorithm][(dataset, epsilon)] = values per trial`` (the same for every workload,
    scaled by the range length for ``ranges-<r>%``)."""
    rows = []
    for alg, by_setting in errors.items():
        for (ds, eps), values in by_setting.items():
            for trial, v in enumerate(values):
                if np.isnan(v):
                    continue   # a cell this method did not run
                for wl in workloads:
                    scale = float(wl[7:-1]) if wl.startswith("ranges-") else 1.0
                    rows.append({"algorithm": alg, "dataset": ds, "domain": 64, "scale": 1000, "epsilon": eps,
                                 "trial": trial, "seed": 0, "sampled": False, "unattributed": False,
                                 "workload": wl, "metric": "mse", "reference": "sample", "value": v * scale,
                                 "time_total": 1e-3 * (1 + len(alg)), **TIMES})
    return Results.from_rows(rows)


SETTINGS = [("d1", 0.1), ("d1", 1.0), ("d2", 0.1), ("d2", 1.0)]


def lognormal(rng, factor: float, trials: int = 10, sd: float = 0.5) -> dict:
    """Errors spanning four decades across the settings (as epsilon moves them), times ``factor``."""
    return {s: factor * 10.0 ** k * np.exp(rng.normal(0, sd, trials)) for k, s in enumerate(SETTINGS)}


# ------------------------------------------------------------------ the tests themselves
def test_holm_matches_a_hand_computation():
    """Kills: Bonferroni (m p for all: 0.04, 0.16, 0.12, 0.02), the step-down without the running
    maximum (0.04 for the largest p instead of 0.06), Hochberg's step-up, no cap at 1, results
    returned in sorted instead of input order."""
    # sorted: 0.005 x 4 = 0.02, 0.01 x 3 = 0.03, 0.03 x 2 = 0.06, 0.04 x 1 = 0.04 -> max(0.06, 0.04) = 0.06
    np.testing.assert_allclose(holm([0.01, 0.04, 0.03, 0.005]), [0.03, 0.06, 0.06, 0.02])
    # 0.4 x 3 = 1.2 -> 1; 0.45 x 2 = 0.9 -> max(1, 0.9) = 1; 0.9 -> 1
    np.testing.assert_allclose(holm([0.45, 0.4, 0.9]), [1.0, 1.0, 1.0])
    np.testing.assert_allclose(holm([0.02]), [0.02])
    with pytest.raises(InvalidParameter, match=r"\[0, 1\]"):
        holm([0.5, 1.5])


def test_signed_rank_test_equals_scipys_wilcoxon():
    """Kills: an off-by-one in the exact null table, the variance without the tie term, zeros kept
    (Wilcoxon drops them), NaN (absent cells) counted as observations, a one-sided p."""
    from scipy import stats
    rng = np.random.default_rng(3)
    rows = [rng.normal(0.4, 1, 9), rng.normal(0.2, 1, 50), rng.normal(-0.3, 1, 51), rng.normal(0.1, 1, 120),
            np.round(rng.normal(0.3, 1, 40), 1), np.r_[0.0, 0.0, rng.normal(1, 1, 12)]]
    width = max(map(len, rows))
    d = np.full((len(rows), width), np.nan)
    for i, r in enumerate(rows):
        d[i, :len(r)] = r
    n, _, p = signed_rank_test(d)
    for i, r in enumerate(rows):
        nz = r[r != 0]
        exact = len(nz) <= 50 and len(np.unique(np.abs(nz))) == len(nz)
        ref = stats.wilcoxon(nz, method="exact" if exact else "asymptotic").pvalue
        assert n[i] == len(nz) and p[i] == pytest.approx(ref, rel=1e-9, abs=1e-15), i
    assert signed_rank_test(np.full((1, 4), np.nan))[2][0] == 1.0


def test_paired_test_declares_a_planted_2x_gap_and_names_the_right_winner():
    """Kills: the winner read the wrong way round (B declared better), errors compared on the raw
    scale (the largest setting would decide alone: here raw differences are dominated by one
    setting but the verdict must use all), a ratio reported as b/a."""
    rng = np.random.default_rng(11)
    r = table({"A": lognormal(rng, 1.0), "B": lognormal(rng, 2.0)})
    c = paired_comparison(r, "mse", "all-ranges")
    v = c.verdict("A", "B")
    assert v["winner"] == "A" and v["p_adjusted"] < 0.01 and v["n"] == 40
    assert 0.3 < v["ratio"] < 0.8                 # median of error_A / error_B: about 1/2
    assert c.records[()] == {"A": {"wins": 1, "ties": 0, "losses": 0}, "B": {"wins": 0, "ties": 0, "losses": 1}}
    assert c.unbeaten() == ["A"]


def test_identical_algorithms_under_two_names_are_not_told_apart():
    """The same preset under two labels (independent noise streams): kills a verdict taken from the
    means alone (their means differ, as any two samples do), a one-sided test (half the p-value)
    and pairs compared without a test; the truly worse method (uniform) still loses."""
    cfg = SweepConfig.from_mapping({
        "algorithms": [{"name": "identity", "label": "A"}, {"name": "identity", "label": "B"}, "uniform"],
        "datasets": ["synthetic:shape=zipf,n=128,scale=20000", "synthetic:shape=steps,n=128,scale=5000"],
        "epsilons": [0.1, 1.0], "trials": 10, "workloads": ["prefix"], "metrics": ["mse"], "executor": "serial"})
    r = run_sweep(cfg, output=False, progress=False).results
    c = paired_comparison(r, "mse", "prefix")
    same = c.verdict("A", "B")
    means = r.filter(workload="prefix").aggregate(["algorithm"])
    assert means[("A",)]["mean"] != means[("B",)]["mean"]
    assert same["winner"] is None and same["n"] == 40 and same["p"] > 0.1
    assert c.verdict("A", "uniform")["winner"] == "A" and c.verdict("B", "uniform")["winner"] == "B"
    assert c.unbeaten() == ["A", "B"]


def test_pairs_are_the_common_cells_and_holm_covers_every_comparison():
    """Kills: pairing by position after a method skipped a cell (n would be 40 and the pairs
    misaligned), cells of different seeds paired, Holm applied per pair or per group instead of over
    every comparison, a verdict taken from the raw p-value."""
    rng = np.random.default_rng(5)
    errors = {"A": lognormal(rng, 0.8, sd=0.05), "B": lognormal(rng, 1.0, sd=0.05), "C": lognormal(rng, 1.02, sd=0.3)}
    errors["B"][SETTINGS[0]][9] = np.nan       # B did not run trial 9 of the first setting
    r = table(errors)
    c = paired_comparison(r, "mse", "all-ranges")
    assert c.verdict("A", "B")["n"] == 39 and c.verdict("A", "C")["n"] == 40
    assert c.verdict("A", "B")["winner"] == "A" and 0.75 < c.verdict("A", "B")["ratio"] < 0.85
    raw = [p["p"] for p in c.pairs]
    np.testing.assert_allclose([p["p_adjusted"] for p in c.pairs], holm(raw))
    assert all((p["winner"] is None) == (p["p_adjusted"] > c.alpha) for p in c.pairs)
    by_eps = paired_comparison(r, "mse", "all-ranges", by=("epsilon",))
    assert sorted(by_eps.records) == [(0.1,), (1.0,)] and len(by_eps.pairs) == 6
    np.testing.assert_allclose([p["p_adjusted"] for p in by_eps.pairs], holm([p["p"] for p in by_eps.pairs]))
    assert by_eps.verdict("A", "B", (0.1,))["n"] == 19
    with pytest.raises(InvalidParameter, match="several mse values"):
        paired_comparison(Results({k: np.concatenate([v, v]) for k, v in r.columns.items()}), "mse", "all-ranges")
    with pytest.raises(InvalidParameter, match="group by columns"):
        paired_comparison(r, "mse", "all-ranges", by=("trial",))


def test_a_raw_p_below_alpha_is_no_win_after_holm():
    """Kills: the verdict taken from the raw p-value.  A against B and against C: ten trials whose log
    error ratios are -0.1 x rank except rank 7 positive, W+ = 7, exact p = 0.037 < 0.05; three
    comparisons (B against C: no difference, p = 1), so Holm gives 3 x 0.037 = 0.11 to the first and
    max(0.11, 2 x 0.037) = 0.11 to the second: no win."""
    ranks = np.arange(1, 11)
    d = np.where(ranks == 7, 1, -1) * 0.1 * ranks
    r = table({"A": {("d1", 0.1): np.exp(d)}, "B": {("d1", 0.1): np.ones(10)}, "C": {("d1", 0.1): np.ones(10)}})
    c = paired_comparison(r, "mse", "all-ranges")
    for other in ("B", "C"):
        v = c.verdict("A", other)
        assert v["p"] == pytest.approx(0.037109375) and v["winner"] is None
    assert sorted(p["p_adjusted"] for p in c.pairs) == pytest.approx([3 * 0.037109375, 3 * 0.037109375, 1.0])
    assert c.unbeaten() == ["A", "B", "C"]


# ------------------------------------------------------------------ the report
def test_report_states_intervals_and_verdicts_from_the_paired_tests(tmp_path):
    """Kills: a mean printed without its interval, "A beats B" written from the ranking order alone
    (A and A-again are the same distribution: the report must call them a tie although one ranks
    above the other), wins/losses not taken from the tests, the unbeaten list missing."""
    rng = np.random.default_rng(2)
    errors = {"A": lognormal(rng, 1.0), "A-again": lognormal(rng, 1.0), "B": lognormal(rng, 4.0)}
    text = write_report(table(errors), tmp_path).read_text()
    cells = [line for line in text.splitlines() if line.startswith("| A") or line.startswith("| B")]
    table_cells = [cell for line in cells if "x) |" in line for cell in line.split("|")[2:-1]]
    assert len(table_cells) == 3 * 2 * 2 and all("±" in cell and "%" in cell for cell in table_cells)
    assert "## Which method beats which" in text and "Holm" in text
    assert "Not beaten by any method: A, A-again." in text
    assert "no significant difference" in text.split("Neighbours in the ranking above:")[1].splitlines()[2]
    assert "**A beats B**" in text or "**A-again beats B**" in text
    regret_rows = {line.split("|")[1].strip(): line.split("|")[-4:-1]
                   for line in text.split("## Regret (DPBench)")[1].split("##")[0].splitlines()
                   if line.startswith("| A") or line.startswith("| B")}
    assert [x.strip() for x in regret_rows["B"]] == ["0", "0", "2"]
    assert [x.strip() for x in regret_rows["A"]] == ["1", "1", "0"]


# ------------------------------------------------------------------ figures
def _text_sizes(fig) -> list[float]:
    return [t.get_fontsize() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]


def _named(ax) -> list[str]:
    return [c.get_label() for c in ax.containers if isinstance(c, ErrorbarContainer)]


def _grey_lines(ax) -> int:
    from matplotlib.collections import LineCollection
    return sum(len(c.get_segments()) for c in ax.collections
               if isinstance(c, LineCollection) and c.get_label() == "_others")


def test_error_vs_epsilon_names_the_best_few_with_confidence_bars_and_greys_the_rest():
    """Kills: error bars left out or drawn as standard errors (the bar must reach the t interval's
    ends), every method coloured (10 colours recycled over 12 lines), the best chosen by name instead
    of error, a 6-point legend."""
    rng = np.random.default_rng(4)
    errors = {f"m{11 - i:02d}": lognormal(rng, 1.0 + i) for i in range(12)}   # m11 lowest, m00 highest
    r = table(errors)
    fig = plots.error_vs_epsilon(r, highlight=5)
    for ax in fig.axes:
        assert _named(ax) == ["m11", "m10", "m09", "m08", "m07"] and _grey_lines(ax) == 7
    stats = r.aggregate(["algorithm", "dataset", "epsilon"])[("m11", "d1", 0.1)]
    bar = next(c for c in fig.axes[0].containers if c.get_label() == "m11")[2][0]   # the vertical bars
    low, high = bar.get_segments()[0][:, 1]
    assert low == pytest.approx(max(stats["ci_low"], stats["mean"] * plots.CI_FLOOR))
    assert high == pytest.approx(stats["ci_high"])
    assert min(_text_sizes(fig)) >= 8
    few = plots.error_vs_epsilon(table({k: errors[k] for k in ("m03", "m07")}))
    assert _named(few.axes[0]) == ["m03", "m07"] and _grey_lines(few.axes[0]) == 0


def test_by_family_figures_draw_one_panel_per_family_against_the_grey_others():
    """Kills: a family's method drawn in another panel, a method in no family dropped, the others not
    drawn grey behind each family, range-length curves without error bars, small print."""
    rng = np.random.default_rng(6)
    errors = {"a1": lognormal(rng, 1.0), "a2": lognormal(rng, 2.0), "b1": lognormal(rng, 3.0),
              "loose": lognormal(rng, 5.0)}
    r = table(errors, workloads=("all-ranges", "ranges-1%", "ranges-10%", "ranges-50%"))
    families = {"A": ["a1", "a2"], "B": ["b1", "not-run"]}
    for fig in (plots.error_vs_epsilon_by_family(r, families, dataset="d2"),
                plots.error_vs_range_length_by_family(r, families, epsilon=0.1, dataset="d2")):
        panels = {ax.get_title(): ax for ax in fig.axes if ax.get_visible()}
        assert list(panels) == ["A (2)", "B (1)", "other (1)"]
        assert _named(panels["A (2)"]) == ["a1", "a2"] and _grey_lines(panels["A (2)"]) == 2
        assert _named(panels["B (1)"]) == ["b1"] and _grey_lines(panels["B (1)"]) == 3
        assert _named(panels["other (1)"]) == ["loose"]
        assert min(_text_sizes(fig)) >= 8
    rl = plots.error_vs_range_length(r, epsilon=0.1)
    assert all(_named(ax) == ["a1", "a2", "b1", "loose"] for ax in rl.axes)
    with pytest.raises(InvalidParameter, match="no results for dataset 'nope'"):
        plots.error_vs_epsilon_by_family(r, families, dataset="nope")
    with pytest.raises(InvalidParameter, match="no ranges-<r>% workload"):   # kills a ZeroDivisionError
        plots.error_vs_range_length(r.filter(workload="all-ranges"))


def test_skyline_points_carry_their_confidence_bars():
    """Kills: skyline points drawn without error bars (one LineCollection of bars per method)."""
    from matplotlib.collections import LineCollection
    rng = np.random.default_rng(8)
    r = table({"a": lognormal(rng, 1.0), "b": lognormal(rng, 2.0), "c": lognormal(rng, 0.5)})
    for fig in (plots.skyline(r, epsilon=0.1), plots.skyline_by_family(r, {"x": ["a", "b", "c"]}, epsilon=0.1)):
        ax = fig.axes[0]
        assert sum(isinstance(c, LineCollection) for c in ax.collections) == 3
        assert min(_text_sizes(fig)) >= 8


def test_regret_report_figures_use_the_error_bars(tmp_path):
    """The report's figures are the ones above: kills a report that draws its own bar-less curves."""
    rng = np.random.default_rng(9)
    r = table({"a": lognormal(rng, 1.0), "b": lognormal(rng, 2.0)},
              workloads=("all-ranges", "ranges-1%", "ranges-10%"))
    text = write_report(r, tmp_path, families={"fa": ["a"], "fb": ["b"]}).read_text()
    for name in ("error-vs-epsilon", "error-vs-epsilon-by-family", "error-vs-range-length",
                 "error-vs-range-length-by-family"):
        assert f"figures/{name}.png" in text and (tmp_path / "figures" / f"{name}.png").exists()
    assert "95% Student-t confidence intervals" in text
    assert analysis.paired_comparison(r, "mse", "all-ranges").unbeaten() == ["a"]
