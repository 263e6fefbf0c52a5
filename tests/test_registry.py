"""Entry-point registry: broken plugins are reported, not fatal; names; runtime registration."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import dphist
from dphist import BrokenPlugin, DuplicateComponent, Partitioner, Pipeline, Registry, UnknownComponent


def make_dist(root: Path, name: str, entry_points: str, module: str | None = None, code: str = ""):
    """A throwaway installed distribution: a dist-info folder (and optionally a module) on a path."""
    info = root / f"{name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))
    if module:
        (root / f"{module}.py").write_text(textwrap.dedent(code))


@pytest.fixture
def plugin_path(tmp_path, monkeypatch):
    make_dist(tmp_path, "good_plugin", """
        [dphist.partitioners]
        good.halves = good_plugin:Halves
        """, "good_plugin", """
        from dphist import Partitioner
        class Halves(Partitioner):
            name = "good.halves"
            citation = "test plugin"
            def partition(self, bins, ctx):
                return bins.merge([0, max(1, bins.n_groups // 2)]) if bins.n_groups > 1 else bins
        """)
    make_dist(tmp_path, "import_fails", """
        [dphist.partitioners]
        broken.part = no_such_module_xyz:Thing
        """)
    make_dist(tmp_path, "malformed_meta", "this line has no section header\n")
    make_dist(tmp_path, "bad_target", """
        [dphist.finalizers]
        oops = not a valid target!!
        """)
    make_dist(tmp_path, "dupe_plugin", """
        [dphist.partitioners]
        whole = good_plugin:Halves
        """)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_broken_plugins_are_reported_and_the_rest_works(plugin_path):
    reg = Registry(strict=False, path=[p for p in sys.path if p != str(plugin_path)] + [str(plugin_path)])
    names = reg.names("partitioner")
    assert "good.halves" in names and "broken.part" in names and "singleton" in names
    problems = {p.distribution: str(p) for p in reg.problems(load=True)}
    assert "no_such_module_xyz" in problems["import-fails"]
    assert "MissingSectionHeader" in problems["malformed-meta"]
    assert "bad-target" in problems
    assert "also registered by dupe-plugin" in problems["dphist"]
    # everything else keeps working, including the good plugin from the same path
    cls = reg.get("partitioner", "good.halves")
    r = Pipeline(None, None, cls(), "group-mean", registry=reg).run(np.arange(8), 1.0, seed=0)
    assert r.partition.n_groups == 2
    with pytest.raises(BrokenPlugin, match="import-fails.*no_such_module_xyz"):
        reg.get("partitioner", "broken.part")
    with pytest.raises(DuplicateComponent, match="both dphist and dupe-plugin"):
        reg.get("partitioner", "whole")


def test_strict_mode_fails_on_any_broken_plugin(plugin_path):
    reg = Registry(strict=True, path=sys.path)
    with pytest.raises(BrokenPlugin, match="strict mode"):
        reg.names("partitioner")


def test_cli_list_reports_broken_plugin_with_its_distribution(plugin_path):
    env = {**os.environ, "PYTHONPATH": str(plugin_path), "DPHIST_STRICT_PLUGINS": "0"}
    out = subprocess.run([sys.executable, "-m", "dphist.cli", "list", "--kind", "partitioner"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "broken.part" in out.stdout and "BROKEN" in out.stdout
    assert "import-fails: partitioner 'broken.part': import of no_such_module_xyz:Thing failed" in out.stdout
    strict = subprocess.run([sys.executable, "-m", "dphist.cli", "list"], capture_output=True, text=True,
                            env={**env, "DPHIST_STRICT_PLUGINS": "1"}, timeout=120)
    assert strict.returncode == 2 and "strict mode" in strict.stderr


def test_listing_does_not_import(plugin_path, monkeypatch):
    monkeypatch.delitem(sys.modules, "good_plugin", raising=False)
    reg = Registry(strict=False, path=sys.path)
    reg.entries()
    assert "good_plugin" not in sys.modules


def test_unknown_name_suggests_closest():
    reg = Registry(strict=False)
    with pytest.raises(UnknownComponent, match="did you mean 'noisy-count'"):
        reg.get("sorter", "noisy_count")
    assert reg.get("algorithm", "IDENTITY").name == "identity"  # case-insensitive fallback


def test_runtime_registration_and_duplicates():
    reg = Registry(strict=False)

    class Pairs(Partitioner):
        name = "student.pairs"
        citation = "coursework"

        def partition(self, bins, ctx):
            return bins.merge(np.arange(0, bins.n_groups, 2))

    reg.register(Pairs)
    reg.register(Pairs)  # re-running a notebook cell registers the same class again: allowed
    assert reg.get("partitioner", "student.pairs") is Pairs
    with pytest.raises(DuplicateComponent, match="already registered by dphist"):
        reg.register(Pairs, name="singleton")
    r = Pipeline(None, None, "student.pairs", "group-mean", registry=reg).run(np.arange(6), 1.0, seed=1)
    assert r.partition.n_groups == 3


def test_register_decorator_uses_default_registry():
    @dphist.register
    class Thirds(Partitioner):
        name = "test.thirds"
        citation = "test"

        def partition(self, bins, ctx):
            return bins.merge(np.arange(0, bins.n_groups, 3))

    try:
        assert dphist.Pipeline(None, None, "test.thirds", "group-mean").run(np.arange(9), 1.0).partition.n_groups == 3
    finally:
        dphist.default_registry.unregister("partitioner", "test.thirds")
