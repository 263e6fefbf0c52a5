"""Declared parameters (dphist.params): constraints, validation at construction, preset overrides,
the CLI's --param and `dphist describe`.

Each test names, in its docstring, the mutation it kills.
"""
import math

import numpy as np
import pytest

from dphist import InvalidParameter, Partitioner, Pipeline, cli, preset, testing
from dphist.params import (UNIT_SHARE, ComponentParameter, InstanceOf, Interval, Options, Satisfies,
                           make_constraint)
from dphist.presets import make_algorithm
from dphist.registry import default_registry

COMPONENT_KINDS = ("initializer", "sorter", "partitioner", "finalizer")


class _NotAnything:
    """A value no declared constraint of the project accepts (not a number, name, bool, callable...)."""

    def __repr__(self):
        return "<not-anything>"


# ------------------------------------------------------------------ constraints
@pytest.mark.parametrize("closed, low_in, high_in", [
    ("both", True, True), ("left", True, False), ("right", False, True), ("neither", False, False)])
def test_interval_ends_follow_closed(closed, low_in, high_in):
    """Kills: an Interval that ignores ``closed`` (open ends accepted or closed ends refused)."""
    c = Interval(float, 0, 1, closed=closed)
    assert c.accepts(0) is low_in and c.accepts(0.0) is low_in
    assert c.accepts(1) is high_in
    assert c.accepts(0.5) and not c.accepts(-1e-12) and not c.accepts(1 + 1e-12)
    assert str(c) == f"a real number in {'[' if low_in else '('}0, 1{']' if high_in else ')'}"


def test_interval_refuses_booleans_nan_infinities_and_wrong_kinds():
    """Kills: booleans counted as numbers (True is not an integer >= 1), NaN slipping through the
    comparisons (NaN < 0 is False), floats accepted as integers, strings compared as numbers."""
    ints = Interval(int, 1, None)
    assert ints.accepts(1) and ints.accepts(np.int64(7))
    for bad in (True, np.bool_(True), 1.0, 2.5, "3", None):
        assert not ints.accepts(bad), bad
    reals = Interval(float, 0, None)
    assert reals.accepts(0) and reals.accepts(np.float32(2.5)) and reals.accepts(3)
    for bad in (math.nan, math.inf, -math.inf, False, "1.0", None, -0.1):
        assert not reals.accepts(bad), bad
    assert str(ints) == "an integer >= 1" and str(Interval(float, 0, None, closed="neither")) == "a real number > 0"


def test_options_compare_type_and_value():
    """Kills: Options matching by equality alone (1 == True, 1 == 1.0) or by substring."""
    c = Options("exact", "tree")
    assert c.accepts("exact") and not c.accepts("exac") and not c.accepts("EXACT")
    assert not Options(1).accepts(True) and not Options(1).accepts(1.0) and not Options(True).accepts(1)
    assert c.accepts(np.str_("tree"))
    assert str(c) == "one of 'exact', 'tree'"


def test_shorthands_and_alternatives():
    """Kills: a shorthand mapped to the wrong constraint (None accepting anything, bool accepting 0)."""
    assert make_constraint(None).accepts(None) and not make_constraint(None).accepts(0)
    assert make_constraint(bool).accepts(np.bool_(False)) and not make_constraint(bool).accepts(0)
    assert make_constraint(callable).accepts(len) and not make_constraint(callable).accepts("len")
    assert make_constraint(dict).accepts({}) and not make_constraint(dict).accepts([])
    assert Satisfies(lambda v: v > 2, "more than 2").accepts(3)
    assert not Satisfies(lambda v: v > 2, "more than 2").accepts("x")   # TypeError inside = refusal
    assert InstanceOf((int, str)).accepts("a")
    with pytest.raises(TypeError, match="cannot use"):
        make_constraint(3.5)


def test_a_malformed_declaration_fails_when_the_class_is_defined():
    """Kills: declarations normalised lazily (a typo would surface only at the first construction)."""
    with pytest.raises(TypeError, match="param_constraints"):
        class Broken(Partitioner):
            name = "test.broken-declaration"
            param_constraints = {"width": "an integer"}

            def __init__(self, width=1):
                self.width = width


# ------------------------------------------------------- validation at construction
def _registered_classes():
    out = []
    for kind in COMPONENT_KINDS:
        for name in default_registry.names(kind):
            out.append(default_registry.get(kind, name))
    return out


@pytest.mark.parametrize("cls", _registered_classes(), ids=lambda c: c.name)
def test_every_declared_constraint_is_enforced_at_construction(cls):
    """Kills: a component whose constraint is dropped (or whose declaration is not wired into
    construction): each declared parameter given a value nothing accepts must be refused, naming
    the class, the parameter and the value."""
    for param in cls.declared_constraints():
        with pytest.raises(InvalidParameter) as info:
            cls(**{param: _NotAnything()})
        message = str(info.value)
        assert cls.__name__ in message and f"parameter {param!r}" in message and "<not-anything>" in message
        assert "expected" in message


def test_validation_runs_before_init_and_covers_defaults_and_positional_arguments():
    """Kills: validation after ``__init__`` (a constructor with side effects would run on bad input),
    validation of keyword arguments only (a positional value or a bad default would pass)."""
    calls = []

    class Spy(Partitioner):
        name = "test.spy"
        param_constraints = {"width": Interval(int, 1, None), "mode": Options("a", "b")}

        def __init__(self, width=2, mode="a"):
            calls.append(width)
            self.width, self.mode = width, mode

        def partition(self, bins, ctx):
            return bins

    with pytest.raises(InvalidParameter, match=r"Spy \(test.spy\): parameter 'width' = 0 is invalid; "
                                                r"expected an integer >= 1"):
        Spy(0)
    with pytest.raises(InvalidParameter, match="'mode' = 'c'"):
        Spy(3, "c")
    assert calls == []

    class BadDefault(Spy):
        name = "test.bad-default"

        def __init__(self, width=0, mode="a"):
            super().__init__(width, mode)

    with pytest.raises(InvalidParameter, match="'width' = 0"):
        BadDefault()
    assert calls == []
    assert Spy(4, "b").get_params() == {"width": 4, "mode": "b"} and calls == [4]


def test_unknown_or_extra_arguments_are_invalid_parameters_not_type_errors():
    """Kills: Python's raw TypeError for an unknown keyword (the issue's complaint)."""
    from dphist.components.builtin import NoisyCountSorter, SingletonPartitioner
    with pytest.raises(InvalidParameter, match="has no parameter.*'ascending'.*its parameters are: descending"):
        NoisyCountSorter(ascending=True)
    with pytest.raises(InvalidParameter, match="takes no parameters"):
        SingletonPartitioner(3)


def test_inherited_declarations_merge_and_a_subclass_entry_wins():
    """Kills: declarations read from the class itself only (a subclass would lose its parent's)."""
    class Base(Partitioner):
        name = "test.base"
        param_constraints = {"a": Interval(int, 0, None), "b": bool}

        def __init__(self, a=0, b=True):
            self.a, self.b = a, b

    class Child(Base):
        name = "test.child"
        param_constraints = {"a": Interval(int, 5, None)}

    assert set(Child.declared_constraints()) == {"a", "b"}
    with pytest.raises(InvalidParameter, match="'b' = 1"):
        Child(a=5, b=1)
    with pytest.raises(InvalidParameter, match="'a' = 0"):
        Child(a=0)


# ----------------------------------------------------------------- preset overrides
def test_make_algorithm_applies_component_overrides():
    """Kills: overrides silently ignored (the pipeline's component keeps its default, the release
    is the default's)."""
    x = np.r_[np.zeros(40, int), np.full(40, 50), np.arange(48)]
    base = make_algorithm("DAWA", calibration="postprocess")     # the calibration that has a group penalty
    tuned = make_algorithm("DAWA", calibration="postprocess", partitioner__bucket_penalty=40.0, finalizer__granularity=10)
    assert tuned.partitioner.bucket_penalty == 40.0 and tuned.finalizer.granularity == 10
    assert base.partitioner.bucket_penalty is None
    assert tuned.spec["partitioner"]["params"]["bucket_penalty"] == 40.0
    assert tuned.name == "DAWA" and tuned.shares == base.shares
    a, b = base.run(x, 0.5, seed=1), tuned.run(x, 0.5, seed=1)
    assert b.partition.n_groups < a.partition.n_groups   # a larger group penalty merges more


def test_override_wins_over_the_preset_parameter_it_sets():
    """Kills: overrides applied before the preset's own parameters (which would undo them)."""
    pipe = make_algorithm("DAWA", calibration="noisy-min", partitioner__calibration="postprocess")
    assert pipe.partitioner.calibration == "postprocess"


@pytest.mark.parametrize("overrides, words", [
    ({"partitioner__bucket_penalty": -1}, r"preset 'DAWA', partitioner override: L1Partitioner \(dawa.l1\): "
                                          r"parameter 'bucket_penalty' = -1 is invalid; expected None or a real"),
    ({"partitioner__bucket_penalti": 2}, "has no parameter.*'bucket_penalti'.*bucket_penalty"),
    ({"initializer__eta": 1}, r"has no initializer; its stages are: partitioner \(dawa.l1\), finalizer"),
    ({"partitoner__bucket_penalty": 1}, "unknown stage 'partitoner'.*stages are initializer, sorter, "
                                        "partitioner, finalizer"),
    ({"bucket_penalty": 1}, "has no parameter 'bucket_penalty'; its parameters are: ratio, workload, branching, "
                            "calibration.*partitioner__bucket_penalty"),
    ({"ratio": 1.0}, r"preset 'DAWA': parameter 'ratio' = 1.0 is invalid; expected a real number in \(0, 1\)"),
])
def test_bad_overrides_get_errors_listing_what_is_valid(overrides, words):
    """Kills: a raw TypeError for an unknown stage/parameter, an error that does not list the valid
    stages or parameters, a preset parameter outside its declaration reaching the factory."""
    with pytest.raises(InvalidParameter, match=words):
        make_algorithm("DAWA", **overrides)


def test_preset_declarations_are_checked_before_the_factory_runs():
    """Kills: a preset wrapper that calls the factory first (its side effects would run on bad input)."""
    calls = []

    @preset("test-declared-preset", params={"gamma_in": UNIT_SHARE})
    def factory(gamma_in: float = 0.5) -> Pipeline:
        calls.append(gamma_in)
        return Pipeline("laplace", None, "singleton", "group-mean", (gamma_in, 0.0, 1 - gamma_in))

    for bad in (0.0, 1.0, "0.5", True):
        with pytest.raises(InvalidParameter, match="preset 'test-declared-preset': parameter 'gamma_in'"):
            factory(gamma_in=bad)
    assert calls == []
    with pytest.raises(TypeError, match="not parameters of its factory"):
        preset("test-typo", params={"gama_in": UNIT_SHARE})(factory.__wrapped__)


def test_a_refused_override_spends_nothing(monkeypatch, tmp_path, capsys):
    """Kills: validation moved out of construction into the stage (the kernel would exist and the
    initializer spend before the error), for the API and the CLI."""
    import dphist.pipeline as pipeline_module
    made = []
    real = pipeline_module.PrivateKernel
    monkeypatch.setattr(pipeline_module, "PrivateKernel", lambda *a, **k: made.append(1) or real(*a, **k))
    with pytest.raises(InvalidParameter):
        make_algorithm("AHP-optimal", partitioner__max_bins=0).run(np.arange(16), 1.0, seed=0)
    src = tmp_path / "x.npy"
    np.save(src, np.arange(16))
    code = cli.main(["run", "-a", "AHP-optimal", "-i", str(src), "-e", "1", "--seed", "0",
                     "--param", "partitioner.max_bins=0", "-o", str(tmp_path / "out.npy")])
    assert code == 2 and "'max_bins' = 0 is invalid" in capsys.readouterr().err
    assert made == [] and not (tmp_path / "out.npy").exists()


# ----------------------------------------------------------------------- the CLI
def test_cli_param_reaches_the_component(tmp_path):
    """Kills: the CLI's --param ignored (or STAGE.NAME not translated to an override): the output
    must equal make_algorithm's with the same override and differ from the default's."""
    x = np.r_[np.zeros(40, int), np.full(40, 50), np.arange(48)]
    src = tmp_path / "x.npy"
    np.save(src, x)
    out = tmp_path / "out.npy"
    assert cli.main(["run", "-a", "DAWA", "-i", str(src), "-e", "0.5", "--seed", "1", "-o", str(out),
                     "--param", "partitioner.bucket_penalty=40", "--param", "ratio=0.3",
                     "--param", "calibration=postprocess"]) == 0
    expected = make_algorithm("DAWA", ratio=0.3, calibration="postprocess",
                              partitioner__bucket_penalty=40).run(x, 0.5, seed=1).estimate
    default = make_algorithm("DAWA", ratio=0.3, calibration="postprocess").run(x, 0.5, seed=1).estimate
    assert np.array_equal(np.load(out), expected) and not np.array_equal(expected, default)


@pytest.mark.parametrize("item, key, value", [
    ("partitioner.bucket_penalty=2", "partitioner__bucket_penalty", 2),
    ("gamma_in=0.5", "gamma_in", 0.5),
    ("calibration=noisy-min", "calibration", "noisy-min"),
    ("calibration='noisy-min'", "calibration", "noisy-min"),
    ("level_budgets=[1, 2.5]", "level_budgets", [1, 2.5]),
    ("measure_epsilon=None", "measure_epsilon", None),
    ("flag=true", "flag", True),
    ("x=__import__('os').getcwd()", "x", "__import__('os').getcwd()"),
])
def test_cli_values_are_literals_never_code(item, key, value):
    """Kills: eval() of --param values (the last case would run code), a parser that keeps numbers
    as strings, or one that drops the STAGE. prefix."""
    assert cli.parse_param(item) == (key, value)


def test_cli_param_needs_a_name_and_a_value():
    """Kills: a malformed --param accepted as an empty override."""
    for bad in ("bucket_penalty", "=2", "partitioner.=2"):
        with pytest.raises(InvalidParameter, match="--param"):
            cli.parse_param(bad)


def test_describe_shows_each_stage_with_declared_constraints_and_values(capsys):
    """Kills: `dphist describe` without the stages' declared parameters (or without their
    constraints, or showing the class default instead of the preset's value)."""
    assert cli.main(["describe", "DAWA-approx"]) == 0
    out = capsys.readouterr().out
    assert "ratio = 0.25  [a real number in (0, 1)]" in out
    assert "partitioner  dawa.l1" in out and "finalizer    dawa.greedy-h" in out
    assert "variant = 'power-of-two'  [one of 'exact', 'power-of-two', 'tree']" in out
    assert "bucket_penalty = None  [None or a real number >= 0]" in out
    assert "partitioner.<parameter>" in out or "<stage>.<parameter>" in out
    assert cli.main(["describe", "dawa.l1"]) == 0
    assert "branching = 2  [an integer >= 2]" in capsys.readouterr().out


# ---------------------------------------------------------- the conformance kit
def test_the_kit_requires_every_preset_parameter_to_be_declared():
    """Kills: check_algorithm without the declared-parameters check (a preset forgetting one)."""
    @preset("test-undeclared-preset")
    def undeclared(width: int = 4) -> Pipeline:
        return Pipeline(None, None, "singleton", "group-mean", (0.0, 0.0, 1.0))

    default_registry.register(undeclared)
    try:
        with pytest.raises(AssertionError, match=r"\['width'\] not declared"):
            testing.check_algorithm("test-undeclared-preset")
    finally:
        default_registry.unregister("algorithm", "test-undeclared-preset")


def test_the_kit_refuses_a_declaration_naming_no_parameter():
    """Kills: check_contract checking only one direction (a stale declaration left after a rename)."""
    class Stale(Partitioner):
        name = "test.stale"
        citation = "test"
        param_constraints = {"width": Interval(int, 1, None), "widht": Interval(int, 1, None)}

        def __init__(self, width=1):
            self.width = width

        def partition(self, bins, ctx):
            return bins

    with pytest.raises(AssertionError, match=r"names \['widht'\], which are not constructor parameters"):
        testing.check_contract(Stale)


def test_every_registered_preset_declares_its_parameters():
    """Kills: a registered preset with an undeclared parameter (the same check the kit runs)."""
    from dphist.presets import preset_params
    for name in default_registry.names("algorithm"):
        factory = default_registry.get("algorithm", name)
        testing.check_declared(name, preset_params(factory), getattr(factory, "param_constraints", {}))


def test_component_parameter_defers_to_the_registered_component():
    """Kills: a ComponentParameter that accepts anything (or fails) instead of asking the component."""
    c = ComponentParameter("partitioner", "dawa.l1", "variant")
    assert c.accepts("tree") and not c.accepts("bogus")
    assert str(c) == "one of 'exact', 'power-of-two', 'tree'"
    missing = ComponentParameter("partitioner", "no-such.partitioner", "variant")
    assert not missing.accepts("tree") and "not installed" in str(missing)


def test_a_workload_name_is_checked_without_assuming_a_domain_size():
    """Kills: a declared check that builds the workload for some fixed n (big-ranges needs n >= 100,
    so DAWA with workload="big-ranges" would be refused although valid on the histogram)."""
    from dphist import workloads
    assert make_algorithm("DAWA-approx", workload="big-ranges").finalizer.workload == "big-ranges"
    assert all(workloads.is_name(w) for w in ("identity", "prefix", "all-ranges", "small-ranges", "ranges-5%"))
    assert not any(workloads.is_name(w) for w in ("ranges-0%", "ranges-x%", "ranges-101%", "nope", 3))
