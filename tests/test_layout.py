"""Names and layout (issue 14 item 5): what the top level exports, where the reference data are
found, which module validates input, and the import order of the datasets package."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pytest

import dphist
from dphist import InvalidParameter, Partition, validation, workloads
from dphist.intervals import centred_prefix_sums

TOOLKIT = Path(dphist.__file__).resolve().parent


def test_top_level_exports_the_modelling_api_only():
    """Kills: re-exporting the kernel's internals at the top level (they stay in dphist.kernel)."""
    for name in ("PrivateKernel", "DataHandle", "NoiseSource", "SeededLaplace"):
        assert not hasattr(dphist, name) and name not in dphist.__all__
        assert hasattr(dphist.kernel, name)
    for name in ("Pipeline", "Partitioner", "Context", "make_algorithm", "register", "VettedMechanism", "Ledger"):
        assert name in dphist.__all__


def test_no_fixed_data_folder_in_library_code():
    """No library module builds the path of the reference-data folder (``../shared``): tests,
    notebooks and benchmarks find it (tests/conftest.py) and pass a path.  Kills: a library
    function that searches for ``shared`` again."""
    offenders = []
    for path in TOOLKIT.rglob("*.py"):
        code = path.read_text()
        if re.search(r"""\.\./shared|["']shared["']|["']peer-dpbench["']""", code):
            offenders.append(str(path.relative_to(TOOLKIT)))
    assert offenders == []
    import dphist.datasets as datasets
    assert not hasattr(datasets, "shared_dpbench_dir") and not hasattr(datasets.files, "shared_dpbench_dir")


def _imports(path: Path) -> set[str]:
    """Sibling modules of the datasets package imported anywhere in ``path`` (function level included)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            out.add(node.module.split(".")[0])
    return out


def test_datasets_package_has_no_import_cycle():
    """The sibling imports of dphist.datasets form a DAG, counting imports inside functions (which
    hid the old base <-> files cycle).  Kills: files importing lookup/base back, or any new cycle."""
    pkg = TOOLKIT / "datasets"
    graph = {p.stem: _imports(p) & {q.stem for q in pkg.glob("*.py")} for p in pkg.glob("*.py") if p.stem != "__init__"}
    seen, done = set(), set()

    def visit(node, stack):
        assert node not in stack, f"import cycle: {' -> '.join(stack + [node])}"
        if node in done:
            return
        for nxt in graph.get(node, ()):
            visit(nxt, stack + [node])
        done.add(node)

    for node in graph:
        visit(node, [])
    assert "files" in graph["lookup"] and "lookup" not in graph["files"]


def test_plain_and_centred_prefix_sums_have_distinct_names():
    """``workloads.prefix_sums`` are plain sums; the centred ones are ``intervals.centred_prefix_sums``
    and sortaki no longer calls them ``prefix_sums``.  Kills: re-introducing the clashing alias."""
    x = np.array([1.0, 2.0, 3.0])
    assert np.array_equal(workloads.prefix_sums(x), [0, 1, 3, 6])
    p, _ = centred_prefix_sums(x)
    assert not np.array_equal(p, [0, 1, 3, 6])
    sortaki = pytest.importorskip("dphist_sortaki")
    assert not hasattr(sortaki, "prefix_sums")
    assert not hasattr(sortaki.error_formulas, "prefix_sums")


@pytest.mark.parametrize("order, ok", [([2, 0, 1], True), ([0, 0, 1], False), ([0, 1, 3], False),
                                       ([-1, 0, 1], False), ([0, 1], False)])
def test_permutation_rule(order, ok):
    """Kills: a permutation check that misses repeats, out-of-range or missing bins."""
    assert validation.is_permutation(np.array(order, dtype=np.int64), 3) is ok


@pytest.mark.parametrize("n", [1 << 16, (1 << 16) + 37])
def test_permutation_rule_of_large_orders(n):
    """The compiled bitmap pass (from 2^16 bins, ``validation._COMPILED_PERMUTATION``) gives the same answers
    as the byte scatter, on a length that fills its last word of bits and one that does not, and for
    read-only and strided orders.  Kills: a repeat not looked for (a repeat with a bin missing passes), the
    range check dropped (bin n, bin -1: a write outside the bitmap), the size not compared (n - 1 entries),
    the last partial word not allocated."""
    from dphist import _order_jit
    rng = np.random.default_rng(n)
    good = rng.permutation(n)
    assert validation.is_permutation(good, n) is True
    assert _order_jit.is_permutation_bits(good, n)                       # the compiled route is the one taken
    frozen = good.copy()
    frozen.setflags(write=False)
    assert validation.is_permutation(frozen, n) is True
    wide = np.empty(2 * n, dtype=np.int64)
    wide[::2] = good
    assert validation.is_permutation(wide[::2], n) is True
    for position, value in [(5, n - 1), (n - 1, 0), (7, n), (9, -1), (3, 1 << 40), (0, good[1])]:
        bad = good.copy()
        bad[position] = value if value != n - 1 else good[position + 1]   # a repeat: one bin twice, one missing
        assert validation.is_permutation(bad, n) is False, (position, value)
        assert not _order_jit.is_permutation_bits(bad, n)
    assert validation.is_permutation(good[:-1], n) is False
    assert validation.is_permutation(np.r_[good, 0], n) is False


@pytest.mark.parametrize("bounds, ok", [([0, 2, 5], True), ([0, 5], True), ([1, 5], False), ([0, 2, 2, 5], False),
                                        ([0, 3], False), ([0, 4, 2, 5], False), ([0], False)])
def test_bounds_rule(bounds, ok):
    """Kills: accepting empty groups, a wrong start or end, a decreasing bound."""
    assert validation.are_strict_bounds(np.array(bounds, dtype=np.int64), 5) is ok


def test_one_rule_serves_partition_kernel_and_engine():
    """The same rule refuses the same bad input in Partition, the kernel's gate and the engine, each
    with its own message naming the parameter."""
    from dphist import segmentation
    from dphist.kernel.private import checked_partition
    bad = Partition(np.array([0, 0, 1]), np.array([0, 1, 3]), validate=False)
    with pytest.raises(InvalidParameter, match="permutation"):
        bad.validate()
    with pytest.raises(InvalidParameter, match="permutation"):
        checked_partition(bad, 3)
    with pytest.raises(InvalidParameter, match="unit bounds"):
        segmentation.optimal(segmentation.SSEPenalty(np.ones(3), np.zeros(4)), [0, 2, 2, 3])
    with pytest.raises(InvalidParameter, match="values must be finite"):
        validation.finite_vector([1.0, np.nan], "values")


TEMPLATE = TOOLKIT.parent.parent / "plugins" / "_template"


def test_the_plugin_template_passes_its_own_tests(monkeypatch):
    """The template (not installed: folders starting with ``_`` are skipped by ``make``) passes
    its conformance tests, including ``check_algorithm`` on its preset.  Kills: a template whose
    component or preset breaks the kit, or whose test file loses the preset check."""
    from dphist import release_records
    from dphist.registry import default_registry
    monkeypatch.syspath_prepend(str(TEMPLATE))
    module = release_records.load_script(TEMPLATE / "tests" / "test_template.py")
    tests = [getattr(module, t) for t in dir(module) if t.startswith("test_")]
    assert {t.__name__ for t in tests} >= {"test_conformance", "test_preset_conformance"}
    try:
        for test in tests:
            test()
    finally:
        default_registry.unregister("algorithm", "template-equiwidth")


def test_the_plugin_template_ships_a_readme_and_a_notebook_stub(monkeypatch, tmp_path):
    """The README explains the copy steps; the notebook stub runs top to bottom against the template
    (seeded, with an assert).  Kills: a missing file, a stub that no longer executes."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    readme = (TEMPLATE / "README.md").read_text()
    for must in ("notebook_stub.ipynb", "check_algorithm", "notebooks/<name>.ipynb", "pyproject.toml"):
        assert must in readme
    nb = nbformat.read(TEMPLATE / "notebook_stub.ipynb", as_version=4)
    assert any("assert" in c.source for c in nb.cells if c.cell_type == "code")
    monkeypatch.setenv("PYTHONPATH", str(TEMPLATE))
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()


def test_one_noun_for_a_set_of_merged_bins():
    """The library and the plugins call a set of bins merged by a partitioner a *group*: no
    ``bucket`` (except DAWA's parameter ``bucket_penalty`` and the notes naming the paper's word)
    and no ``cluster`` (except the experiment engine's Dask cluster).  Kills: a module reintroducing the papers'
    nouns (DAWA's bucket, AHP's cluster)."""
    roots = [TOOLKIT] + sorted((TOOLKIT.parent.parent / "plugins").glob("*/dphist_*"))
    offenders = []
    for root in roots:
        for path in root.rglob("*.py"):
            if "experiments" in path.parts:          # a Dask cluster of workers, another meaning
                continue
            text = path.read_text().replace("bucket_penalty", "")
            # the naming notes ("the paper's *bucket* is our *group*") may say the paper's word
            text = re.sub(r"\*(bucket|cluster)\w*\*|paper's (bucket|cluster)", "", text)
            # ... and cite the reference code's file names (DPBench's ``Clustering.py``)
            text = re.sub(r"(?i)[\w/]*(bucket|cluster)\w*\.(py|c|cpp|h)\b", "", text)
            for word in ("bucket", "cluster"):
                if re.search(rf"(?i)\b{word}(s|ing)?\b", text):
                    offenders.append(f"{path.name}: {word}")
    assert offenders == []
