"""Plugins depend on the core only; a preset needing an absent plugin is listed as unavailable, with
the reason, everywhere (registry, `dphist list`, make_algorithm, the demo, the audit).

An absent plugin is simulated with ``Registry.without`` (its names hidden, nothing uninstalled).
Each test names, in its docstring, the mutation it kills.
"""
import ast
import tomllib
from pathlib import Path

import numpy as np
import pytest

from dphist import Pipeline, cli, preset, testing
from dphist.errors import InvalidParameter, UnavailableComponent, UnknownComponent
from dphist.presets import make_algorithm
from dphist.registry import default_registry

ROOT = Path(__file__).resolve().parents[1]
PLUGINS = sorted(p for p in (ROOT / "plugins").iterdir() if (p / "pyproject.toml").is_file())
T_PRESETS = ("tGAHP", "stGAHP", "tGWF", "stGWF", "tDAHP", "stDAHP", "tDWF", "stDWF")


@pytest.mark.parametrize("plugin", PLUGINS, ids=lambda p: p.name)
def test_plugins_declare_and_import_the_core_only(plugin):
    """Kills: a plugin listing another plugin as a distribution dependency (sortaki's dphist-ahp and
    dphist-dawa before this change), or importing another plugin's package."""
    project = tomllib.loads((plugin / "pyproject.toml").read_text())["project"]
    others = [d for d in project["dependencies"] if d.replace("_", "-").lower().startswith("dphist-")]
    assert not others, f"{plugin.name} depends on other plugins: {others}"
    own = f"dphist_{plugin.name.lstrip('_')}"
    for path in plugin.rglob("*.py"):
        if "tests" in path.parts:
            continue  # a plugin's tests may compare with another plugin when it is installed (importorskip)
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
            for name in names:
                top = name.split(".")[0]
                assert not (top.startswith("dphist_") and top != own), f"{path} imports {name}"


def test_with_every_plugin_installed_every_preset_is_available():
    """Kills: a requirement check that marks available presets unavailable (e.g. reading the wrong kind)."""
    assert default_registry.unavailable("algorithm") == {}
    assert set(default_registry.available_names("algorithm")) == set(default_registry.names("algorithm"))


def _declaring(prefix: str) -> set[str]:
    """The presets (of other plugins than the one named by ``prefix``) whose ``requires`` name one of its components."""
    return {name for name in default_registry.names("algorithm")
            if any(r.split(":", 1)[1].startswith(prefix)
                   for r in getattr(default_registry.get("algorithm", name), "requires", ()))}


def test_without_dawa_sdawa_is_unavailable_and_says_which_plugin_is_missing():
    """Kills: a preset needing an absent plugin reported as available (or failing with a raw
    UnknownComponent about 'dawa.l1' deep inside the factory), and other presets hidden with it."""
    needing_dawa = _declaring("dawa.")
    with default_registry.without("dphist-dawa"):
        missing = default_registry.unavailable("algorithm")
        assert "sDAWA" in missing and set(missing) == needing_dawa
        assert all("needs dphist-dawa" in reason for reason in missing.values())
        with pytest.raises(UnavailableComponent, match=r"'sDAWA' \(from dphist-sortaki\) is unavailable: "
                                                       r"it needs dphist-dawa \(partitioner 'dawa.l1'"):
            make_algorithm("sDAWA")
        assert "sDAWA" not in default_registry.available_names("algorithm")
        assert make_algorithm("sDWF").partitioner.name == "sortaki.dp"      # the rest of sortaki works
    assert make_algorithm("sDAWA").partitioner.name == "dawa.l1"            # restored after the block


def test_without_ahp_the_thresholded_presets_are_unavailable():
    """Kills: a requirement declared on the wrong presets (e.g. on 'sGAHP', whose 's' is not a 't'),
    or a missing one on a 't' preset."""
    with default_registry.without("dphist-ahp"):
        missing = default_registry.unavailable("algorithm")
        assert set(missing) == set(T_PRESETS)
        assert all("needs dphist-ahp (initializer 'ahp.threshold'" in r for r in missing.values())
        for name in ("GAHP", "sGAHP", "sDAHP", "DWF", "SReB_GCA"):
            make_algorithm(name)
        # a parameter that reaches for the absent plugin gets a pointer to it, not only "unknown name"
        with pytest.raises(UnknownComponent, match="come from the plugin dphist-ahp, which is not installed"):
            make_algorithm("SReB_GCA", threshold=True)


def test_dphist_list_shows_unavailable_presets_with_the_reason(capsys):
    """Kills: `dphist list` showing an unusable preset as if it worked (or miscounting them)."""
    with default_registry.without("dphist-dawa"):
        assert cli.main(["list", "--kind", "algorithm"]) == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.split()[:1] == ["sDAWA"])
    assert "UNAVAILABLE: needs dphist-dawa" in line
    assert "DAWA-approx" not in out                         # the hidden plugin's own presets are gone
    assert f"unavailable presets ({len(_declaring('dawa.'))})" in out


def test_the_demo_skips_unavailable_presets_with_a_note():
    """Kills: the demo running (and crashing on) a preset whose plugin is absent, or dropping it silently."""
    from dphist.experiments.demo import runnable_presets
    with default_registry.without("dphist-ahp"):
        presets, notes = runnable_presets()
    assert not set(T_PRESETS) & set(presets) and "AHP" not in presets and "sGAHP" in presets
    needs = [n for n in notes if "needs" in n]
    assert len(needs) == len(T_PRESETS) and all("skipped, it needs dphist-ahp" in n for n in needs)


def test_the_demo_skips_presets_without_1d_with_a_note():
    """The demo's datasets are 1-D.  Kills: a 2-D-only preset (UG) probed on them and reported as broken,
    or dropped without a word; or a preset that runs on any shape (identity) dropped."""
    from dphist.experiments.demo import runnable_presets
    presets, notes = runnable_presets()
    assert "UG" not in presets and "identity" in presets and "DAWA" in presets
    assert ("UG: skipped, it supports 2-D histograms only and the demo's datasets are 1-D "
            "(it runs in the demo's 2-D part)") in notes
    # the 2-D part: kills a 1-D-only preset (DAWA) planned on the grid, or a grid preset (UG) missing
    grid, _ = runnable_presets(2)
    # auto declares grids too (its grid model): it runs in both parts
    assert {"UG", "AG", "DAWA-2D", "MWEM-2D", "identity", "auto"} <= set(grid) and "DAWA" not in grid


def test_the_audit_of_all_presets_skips_unavailable_ones_with_the_reason(monkeypatch, capsys):
    """Kills: `dphist audit --all` crashing on an unavailable preset or skipping it without a word."""
    import dphist.audit.auditor as auditor
    audited = []

    class Passed:
        passed = True

        def __init__(self, name):
            self.algorithm = name

        def __str__(self):
            return f"{self.algorithm}: PASS (stub)"

    monkeypatch.setattr(auditor, "audit", lambda name, *a, **k: audited.append(name) or Passed(name))
    with default_registry.without("dphist-dawa"):
        assert cli.main(["audit", "--all", "--fast", "--seed", "1"]) == 0
    err = capsys.readouterr().err
    assert "sDAWA" not in audited and "sDWF" in audited and "identity" in audited
    assert "skipped sDAWA: it needs dphist-dawa" in err


def test_the_kit_requires_other_plugins_components_to_be_declared():
    """Kills: check_algorithm not checking requirements (a preset forgetting requires= would be listed
    as available without the plugin and fail only when run)."""
    def make():
        return Pipeline(None, None, "dawa.l1", "group-mean", (0.0, 0.5, 0.5))

    undeclared = preset("test-undeclared-requirement")(make)
    declared = preset("test-declared-requirement", requires=("partitioner:dawa.l1",))(make)
    for p in (undeclared, declared):
        default_registry.register(p)
    try:
        with pytest.raises(AssertionError, match="uses partitioner 'dawa.l1' of dphist-dawa without declaring it"):
            testing.check_requirements("test-undeclared-requirement", make())
        testing.check_requirements("test-declared-requirement", make())
        with default_registry.without("dphist-dawa"):
            assert "test-declared-requirement" in default_registry.unavailable()
            assert "test-undeclared-requirement" not in default_registry.unavailable()
    finally:
        for p in (undeclared, declared):
            default_registry.unregister("algorithm", p.name)


def test_malformed_requirements_and_distributions_are_refused():
    """Kills: a requirement without its kind accepted (it could never be checked), or ``without``
    silently doing nothing for a misspelt distribution (the test would then prove nothing)."""
    with pytest.raises(InvalidParameter, match="'kind:name'"):
        preset("test-bad-requirement", requires=("dawa.l1",))
    with pytest.raises(InvalidParameter, match="no registered name comes from dphist-dawaa"):
        with default_registry.without("dphist-dawaa"):
            pass
    assert np.isfinite(make_algorithm("DAWA").run(np.arange(8), 1.0, seed=0).estimate).all()
