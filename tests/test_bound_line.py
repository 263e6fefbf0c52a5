"""The SVD bound of data-independent linear mechanisms as a line in the error-against-epsilon figures
(the experiment report's and the explorer's), checked against a bound computed here from the singular
values of the workload matrix itself."""
from __future__ import annotations

import numpy as np
import pytest

from dphist import plots
from dphist.experiments.results import COLUMNS, Results


def results(workload="prefix", n=32, datasets=("a", "b"), domains=None, metric="mse", unattributed=False):
    """Two presets x two epsilons x two trials on each dataset (values made up: only the axes matter)."""
    rows = []
    for d, ds in enumerate(datasets):
        dom = n if domains is None else domains[d]
        for alg in ("identity", "H"):
            for eps in (0.1, 1.0):
                for t in range(2):
                    row = {c: 0.01 if c.startswith("time") else 0 for c in COLUMNS}
                    row.update(algorithm=alg, dataset=ds, domain=dom, scale=1000, epsilon=eps, trial=t, seed=t,
                               sampled=False, unattributed=unattributed, workload=workload, metric=metric,
                               reference="sample", value=(1.0 + t) / eps ** 2)
                    rows.append(row)
    return Results.from_rows(rows)


def independent_bound(W, eps):
    """(2 / eps^2) (sum of singular values)^2 / (n m): per-query MSE (Li and Miklau 2013)."""
    m, n = W.shape
    return 2.0 / eps ** 2 * np.linalg.svd(W, compute_uv=False).sum() ** 2 / n / m


def prefix_matrix(n):
    return np.tril(np.ones((n, n)))


def all_ranges_matrix(n):
    return np.array([[1.0 if lo <= i < hi else 0.0 for i in range(n)] for lo in range(n) for hi in range(lo + 1, n + 1)])


def bound_lines_of(fig):
    return [line for ax in fig.axes for line in ax.get_lines() if line.get_label() == plots.BOUND_LABEL]


@pytest.mark.parametrize("workload,matrix", [("prefix", prefix_matrix), ("all-ranges", all_ranges_matrix)])
def test_the_report_figure_draws_the_bound_at_its_value(workload, matrix):
    """One dashed line per panel, its value at every epsilon equal to the bound from numpy's SVD of the
    workload matrix (n = 32).  Kills a bound per total instead of per query (m times too high), one
    without the 2 of Laplace's variance, without 1 / eps^2, or drawn against another domain size."""
    fig = plots.error_vs_epsilon(results(workload), metric="mse", workload=workload)
    lines = bound_lines_of(fig)
    assert len(lines) == 2                                          # one per dataset panel
    W = matrix(32)
    for line in lines:
        eps, y = line.get_data()
        np.testing.assert_allclose(y, independent_bound(W, np.asarray(eps)), rtol=1e-9)
        assert eps.min() == pytest.approx(0.1) and eps.max() == pytest.approx(1.0)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert plots.BOUND_LABEL in labels
    fam = plots.error_vs_epsilon_by_family(results(workload), {"x": ["identity", "H"]}, workload=workload)
    assert len(bound_lines_of(fam)) == 1


def test_the_skylines_draw_the_bound_at_their_epsilon():
    """The time-error skylines (the report's and the README's demo figures) draw the bound as a horizontal
    line at the skyline's epsilon, one per dataset panel, at the value numpy's SVD gives; none without an
    epsilon, with another metric or with ``bound=False``.  Kills the line drawn at another epsilon (a
    factor 100 between 0.1 and 1), at the error-against-epsilon line's first point, or whatever the metric."""
    W = prefix_matrix(32)
    fig = plots.skyline(results(), "mse", "prefix", 0.1)
    lines = bound_lines_of(fig)
    assert len(lines) == 2
    for line in lines:
        assert np.allclose(line.get_ydata(), independent_bound(W, 0.1), rtol=1e-9)
    fam = plots.skyline_by_family(results(), {"x": ["identity"], "y": ["H"]}, "mse", "prefix", 1.0)
    assert [np.allclose(line.get_ydata(), independent_bound(W, 1.0), rtol=1e-9) for line in bound_lines_of(fam)] \
        == [True, True]
    assert not bound_lines_of(plots.skyline(results(), "mse", "prefix", None))
    assert not bound_lines_of(plots.skyline(results(metric="scaled-l1"), "scaled-l1", "prefix", 0.1))
    assert not bound_lines_of(plots.skyline(results(), "mse", "prefix", 0.1, bound=False))


def test_the_line_is_absent_where_there_is_no_bound():
    """No line for: another metric (scaled-l1), unattributed releases (scored against the sorted truth), a
    dataset run at several domain sizes (no one bound), a workload the bound does not cover (a 2-D
    rectangle workload's name), and ``bound=False``.  Kills a line drawn whatever the figure shows."""
    assert not bound_lines_of(plots.error_vs_epsilon(results(metric="scaled-l1"), metric="scaled-l1",
                                                     workload="prefix"))
    assert not bound_lines_of(plots.error_vs_epsilon(results(unattributed=True), workload="prefix",
                                                     unattributed=True))
    mixed = plots.error_vs_epsilon(results(domains=(32, 64), datasets=("a", "a")), workload="prefix")
    assert not bound_lines_of(mixed)
    assert plots.linear_bound("all-rectangles", 64) is None
    assert not bound_lines_of(plots.error_vs_epsilon(results("all-rectangles"), workload="all-rectangles"))
    assert not bound_lines_of(plots.error_vs_epsilon(results(), workload="prefix", bound=False))


def test_the_bound_is_absent_without_the_hdmm_plugin(monkeypatch):
    """The core draws the bound only through the optional hdmm plugin: without it, no line and no error.
    Kills a hard dependency of the core's figures on the plugin."""
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "dphist_hdmm" else real(name, *a))
    monkeypatch.setattr(plots, "_BOUNDS", {})
    assert plots.linear_bound("prefix", 16) is None
    assert not bound_lines_of(plots.error_vs_epsilon(results(n=16), workload="prefix"))


def test_the_report_caption_explains_the_line(tmp_path):
    """The report's error-against-epsilon caption carries the bound's caption (what it bounds, Laplace
    against Gaussian) when the figure has the line.  Kills a line without its caveat."""
    from dphist.experiments.report import write_report
    write_report(results("prefix"), tmp_path / "report")
    text = next((tmp_path / "report").glob("*.md")).read_text()
    assert plots.BOUND_CAPTION in text and "Laplace" in plots.BOUND_CAPTION and "Gaussian" in plots.BOUND_CAPTION
