"""Public binning specs (dphist.binning): edges, policies, calendar, categories, 2-D, JSON, bad specs.

Each test names the mutation of dphist/binning.py or dphist/binkernels.py it kills.
"""
import json

import numpy as np
import pytest

from dphist import InvalidParameter
from dphist import binning as b


def test_decimal_widths_follow_the_published_edges():
    """Kills: dropping the correction step of binkernels._bin (0.3 / 0.1 = 2.999... lands in bin 2)."""
    spec = b.parse("0:1:0.1")
    v = np.array([0.0, 0.1, 0.2, 0.3, 0.6, 0.7, 0.9999])
    assert spec.index(v).tolist() == [0, 1, 2, 3, 6, 7, 9]
    rng = np.random.default_rng(0)
    x = rng.standard_normal(200_000) * 3
    e = np.asarray(b.parse("-8:8/4096").edges)
    ref = np.clip(np.searchsorted(e, x, side="right") - 1, 0, 4095)
    assert np.array_equal(b.parse("-8:8/4096").index(x), ref)
    # the same value through the explicit-edges path agrees (searchsorted vs the compiled loop)
    assert np.array_equal(b.edges(list(e)).index(x), ref)
    # every edge and its floating-point neighbours: where scaling lands one bin off, both ways
    for text in ("0:1:0.1", "-1:1:0.1", "0:3:0.3", "0.1:0.9/7", "-8:8/4096", "1e-3:2e-3/9"):
        spec = b.parse(text, outside="drop")
        e = np.asarray(spec.edges)
        v = np.concatenate([np.nextafter(e, -np.inf), e, np.nextafter(e, np.inf)])
        want = np.searchsorted(e, v, side="right") - 1
        want[(want < 0) | (want >= spec.n)] = -1
        assert np.array_equal(spec.index(v), want), text


@pytest.mark.parametrize("outside, expected", [("clamp", [0, 0, 4, 4, 2]), ("drop", [-1, 0, 4, -1, 2])])
def test_outside_policy(outside, expected):
    """Kills: swapping clamp and drop, or treating hi as inside ([lo, hi) is half-open)."""
    spec = b.parse("0:5:1", outside=outside)
    assert spec.index(np.array([-3.0, 0.0, 4.5, 5.0, 2.0])).tolist() == expected
    counts = spec.count(np.array([-3.0, 0.0, 4.5, 5.0, 2.0]))
    assert counts.sum() == (5 if outside == "clamp" else 3)


def test_clamp_is_the_default_and_keeps_every_record():
    """Kills: a default of drop (the released total would no longer count every record)."""
    spec = b.parse("0:10:1")
    assert spec.outside == "clamp"
    assert spec.count(np.array([-100, 3, 1000])).sum() == 3


@pytest.mark.parametrize("missing, size, expected", [("drop", 3, [0, -1, 2]), ("bin", 4, [0, 3, 2])])
def test_missing_policy(missing, size, expected):
    """Kills: NaN binned as a number (clamped into bin 0) or the missing bin not appended after the domain."""
    spec = b.parse("0:3:1", missing=missing)
    assert spec.size == size and spec.labels()[-1] == ("missing" if missing == "bin" else "[2, 3)")
    assert spec.index(np.array([0.5, np.nan, 2.5])).tolist() == expected
    assert spec.count(np.array([0.5, np.nan, 2.5])).tolist() == ([1, 0, 1] if missing == "drop" else [1, 0, 1, 1])


def test_integer_units_and_explicit_edges():
    """Kills: integer bins excluding hi, or explicit edges binning with side='left'."""
    spec = b.parse("int:1..3")
    assert spec.n == 3 and spec.index(np.array([1, 2, 3])).tolist() == [0, 1, 2]
    assert b.edges([0, 1, 10, 100]).index(np.array([0.0, 1.0, 9.99, 10.0, 99.0])).tolist() == [0, 1, 1, 2, 2]


def test_categories_with_other_bin_and_type_checks():
    """Kills: categories matched by sorted position instead of the given order, or no 'other' bin."""
    spec = b.categories(["zebra", "apple"])
    v = np.array(["apple", "zebra", "kiwi", None], dtype=object)
    assert spec.index(v).tolist() == [1, 0, 2, -1]
    assert spec.labels() == ["zebra", "apple", "other"]
    assert b.categories([3, 1], outside="drop").index(np.array([1, 3, 2])).tolist() == [1, 0, -1]
    with pytest.raises(InvalidParameter, match="column 'c'.*text categories"):
        spec.index(np.array([1, 2]), "c")


def test_calendar_hours_and_months():
    """Kills: calendar bins computed in the values' own unit instead of the step's (minutes vs hours)."""
    spec = b.parse("2013-01-01:2013-01-03:1h")
    assert spec.n == 48
    t = np.array(["2013-01-01T05:30", "2013-01-02T23:59", "NaT", "2014-05-01"], dtype="datetime64[m]")
    assert spec.index(t).tolist() == [5, 47, -1, 47]
    months = b.calendar("2013-01", "2014-01", "1M")
    assert months.n == 12
    assert months.index(np.array(["2013-02-28", "2013-12-31"], dtype="datetime64[D]")).tolist() == [1, 11]
    assert b.calendar("2013-01-01", "2013-01-02", "15m").n == 96
    with pytest.raises(InvalidParameter, match="column 'x'.*calendar"):
        spec.index(np.array([1.0, 2.0]), "x")


def test_calendar_strings_with_offsets_are_utc():
    """Kills: an offset dropped (11:30+01:00 read as 11:30, bin 11 instead of 10), a naive string read in
    local time, or numpy's time-zone warning leaking to the user (turned into an error here)."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        spec = b.calendar("2024-01-01T00:00Z", "2024-01-03", "1h")
        t = np.array(["2024-01-01T10:00:00Z", "2024-01-01T11:30:00+01:00", "2024-01-01T09:59:00-00:30",
                      "2024-01-02T00:00:00"], dtype=object)
        assert spec.index(t).tolist() == [10, 10, 10, 24]


def test_grid_is_two_dimensional():
    """Kills: a grid flattening column-major (j * n1 + i) instead of row-major."""
    g = b.Grid(b.parse("0:2:1"), b.parse("0:3:1"))
    assert g.shape == (2, 3)
    assert g.index2(np.array([0, 1, 1]), np.array([2, 0, 7])).tolist() == [2, 3, 5]


def test_json_round_trip_of_every_kind():
    """Kills: a to_dict that forgets the policies (a spec read back with other defaults)."""
    specs = [b.parse("0:10:2", outside="drop", missing="bin"), b.edges([0, 1, 5]), b.parse("int:0..4"),
             b.categories(["a", "b"], outside="drop"), b.calendar("2013-01-01", "2013-02-01", "1d"),
             b.Grid(b.parse("0:2:1"), b.categories([1, 2]))]
    for spec in specs:
        back = b.from_dict(json.loads(json.dumps(spec.to_dict())))
        assert back.to_dict() == spec.to_dict() and back.shape == spec.shape


@pytest.mark.parametrize("spec, words", [
    ("0:10:0", "width must be positive"),
    ("0:10:-1", "width must be positive"),
    ("10:0:1", "hi .* must be above lo"),
    ("0:10:3", "whole number of widths"),
    ([0, 2, 1], "increase strictly; edge 2"),
    ([0, 1, 1], "increase strictly"),
    ("0:10/0", "positive integer"),
    ("nonsense", "cannot read"),
    ("2013-01-02:2013-01-01:1d", "must be after start"),
    ("2013-01-01:2013-01-02:1parsec", "not a count and a unit"),
])
def test_bad_specs_are_refused(spec, words):
    """Kills: accepting a non-increasing edge list, a width <= 0, or an unreadable spec silently."""
    with pytest.raises(InvalidParameter, match=words):
        b.parse(spec)


def test_numeric_bins_name_the_row_of_a_non_number():
    """Kills: a text value in a numeric column coerced to NaN (silently missing) instead of an error."""
    with pytest.raises(InvalidParameter, match=r"column 'age', row 12: 'abc' is not a number"):
        b.parse("0:10:1").index(np.array(["1", "2", "abc"], dtype=object), "age", row0=10)
    with pytest.raises(InvalidParameter, match="column 't' holds timestamps"):
        b.parse("0:10:1").index(np.array(["2013-01-01"], dtype="datetime64[D]"), "t")
