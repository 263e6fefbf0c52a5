"""One way to load a prototype: ``dphist --import MODULE ...`` and a sweep's ``plugins = [...]``.

A prototype here is a module file outside any distribution that registers a partitioner and a
preset at runtime; every test imports it afresh (registrations and ``sys.modules`` cleared), so a
command that does not import it itself cannot borrow another command's import.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from dphist.cli import main
from dphist.errors import InvalidParameter
from dphist.experiments import SweepConfig, run_sweep
from dphist.registry import default_registry, import_modules

PROTO = "dphist_test_proto"
PRESET, PARTITIONER = "proto-halves", "proto.halves"
SOURCE = f'''
import dphist
from dphist import Partitioner, Pipeline
from dphist.presets import preset


@dphist.register
class Halves(Partitioner):
    """Two groups: the first half of the bins and the rest."""
    name = "{PARTITIONER}"
    citation = "a prototype"

    def partition(self, bins, ctx):
        return bins.merge([0, max(1, bins.n_groups // 2)]) if bins.n_groups > 1 else bins


@dphist.register
@preset("{PRESET}", citation="a prototype preset")
def proto_halves():
    return Pipeline("laplace", None, "{PARTITIONER}", "group-mean", shares=(0.5, 0, 0.5))
'''
ZIPF = "synthetic:shape=zipf,n=64,scale=2000"


def _forget():
    default_registry.unregister("algorithm", PRESET)
    default_registry.unregister("partitioner", PARTITIONER)
    sys.modules.pop(PROTO, None)


@pytest.fixture
def proto(tmp_path, monkeypatch):
    folder = tmp_path / "proto"
    folder.mkdir()
    (folder / f"{PROTO}.py").write_text(SOURCE)
    (folder / "dphist_test_raises.py").write_text("raise RuntimeError('half-written prototype')\n")
    monkeypatch.syspath_prepend(str(folder))
    _forget()
    yield folder
    _forget()
    sys.modules.pop("dphist_test_raises", None)


def _cli(capsys, *argv) -> tuple[int, str, str]:
    _forget()   # each command must import the module itself
    rc = main(["--import", PROTO, *argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_import_makes_a_prototype_visible_to_every_command(proto, tmp_path, capsys):
    """Kills: ``--import`` applied by some commands only (or after the command looked names up):
    each command runs with the module freshly forgotten, so list, describe, run, bench and audit
    each fail with "no algorithm named 'proto-halves'" unless the global option imported it."""
    assert PRESET not in default_registry.names("algorithm")
    rc, out, _ = _cli(capsys, "list")
    assert rc == 0 and f"<runtime> {PROTO}" in out and PARTITIONER in out   # where each name comes from
    rc, out, _ = _cli(capsys, "describe", PRESET)
    assert rc == 0 and "a prototype preset" in out and PARTITIONER in out
    counts = tmp_path / "counts.txt"
    counts.write_text("\n".join(map(str, [5, 0, 3, 40, 7, 7, 1, 2])) + "\n")
    rc, _, err = _cli(capsys, "run", "-a", PRESET, "-i", str(counts), "-e", "1", "--seed", "1",
                      "-o", str(tmp_path / "release.csv"))
    assert rc == 0 and (tmp_path / "release.csv").exists() and "2 groups" in err
    rc, out, err = _cli(capsys, "bench", "--algorithms", PRESET, "--datasets", ZIPF, "--trials", "2",
                        "--executor", "serial", "--output", str(tmp_path / "sweep"), "--no-progress")
    assert rc == 0, err
    assert f'"{PROTO}"' in (tmp_path / "sweep" / "config.json").read_text()   # the workers' import list
    rc, out, err = _cli(capsys, "audit", PRESET, "--fast", "--samples", "200", "--seed", "1")
    assert rc == 0 and f"PASS {PRESET}" in out, (out, err)


@pytest.mark.parametrize("module, words", [
    ("dphist_test_no_such_module", "no module named 'dphist_test_no_such_module'"),
    ("dphist_test_raises", "importing module 'dphist_test_raises' failed: RuntimeError: half-written prototype"),
    ("proto.py", "'proto.py' is not a module name"),
])
def test_a_module_that_cannot_be_imported_is_one_line_and_nothing_is_written(proto, tmp_path, capsys,
                                                                              module, words):
    """Kills: an import error surfacing as a traceback (main would raise), the import done after
    the command started (the release or the sweep folder would exist), a message not naming the module."""
    counts = tmp_path / "counts.txt"
    counts.write_text("1\n2\n3\n")
    for argv in (["run", "-a", "identity", "-i", str(counts), "-e", "1", "-o", str(tmp_path / "out.csv")],
                 ["bench", "--algorithms", "identity", "--datasets", ZIPF, "--output", str(tmp_path / "sweep"),
                  "--executor", "serial", "--no-progress"]):
        assert main(["--import", module, *argv]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and words in err and err.startswith("dphist: error: --import:")
    assert not (tmp_path / "out.csv").exists() and not (tmp_path / "sweep").exists()


def test_import_modules_reports_the_option_it_serves():
    """Kills: a string taken as a list of one-letter modules, the option's name lost from the error."""
    with pytest.raises(InvalidParameter, match="config key 'plugins': expected a list"):
        import_modules("json", where="config key 'plugins'")
    assert [m.__name__ for m in import_modules(["json", "os.path"])] == ["json", os.path.__name__]


def _sweep(**kw) -> SweepConfig:
    base = {"algorithms": [PRESET, "identity"], "datasets": [ZIPF], "epsilons": [0.1, 1.0], "trials": 4,
            "workloads": ["prefix"], "metrics": ["mse"], "executor": "serial"}
    return SweepConfig.from_mapping({**base, **kw})


def test_plugins_key_is_validated_with_the_other_keys_and_imported_before_planning(proto, tmp_path):
    """Kills: a string accepted as ``plugins`` (iterated letter by letter), the sweep planned before
    the modules are imported (the preset would be unknown), an unknown module found after the output
    folder was created."""
    for bad in ("json", ["bad name"], [3]):
        with pytest.raises(InvalidParameter, match="key 'plugins'"):
            _sweep(plugins=bad)
    toml = tmp_path / "sweep.toml"
    toml.write_text(f'algorithms = ["{PRESET}"]\ndatasets = ["{ZIPF}"]\nplugins = ["{PROTO}"]\n'
                    'trials = 2\nworkloads = ["prefix"]\nexecutor = "serial"\n')
    cfg = SweepConfig.from_toml(toml)
    assert cfg.plugins == [PROTO] and SweepConfig.from_mapping(cfg.to_dict()).plugins == [PROTO]
    out = run_sweep(cfg, output=tmp_path / "ok", progress=False)
    assert out.results.unique("algorithm") == [PRESET]
    with pytest.raises(InvalidParameter, match="config key 'plugins': no module named 'dphist_test_nope'"):
        run_sweep(_sweep(plugins=["dphist_test_nope"]), output=tmp_path / "never", progress=False)
    assert not (tmp_path / "never").exists()


SPAWNED = textwrap.dedent(f"""
    import multiprocessing, sys
    from dphist.experiments import SweepConfig, run_sweep
    if __name__ == "__main__":
        multiprocessing.set_start_method("spawn", force=True)   # workers start from nothing, as on Dask
        cfg = SweepConfig.from_mapping({{"algorithms": ["{PRESET}", "identity"], "datasets": ["{ZIPF}"],
                                        "epsilons": [0.1, 1.0], "trials": 30, "workloads": ["prefix"],
                                        "metrics": ["mse"], "executor": sys.argv[1], "workers": 2,
                                        "plugins": ["{PROTO}"]}})
        out = run_sweep(cfg, output=False, progress=False, dask_processes=True)
        assert out.cells_run == 120, out.cells_run
        print("rows", len(out.results))
""")


@pytest.mark.parametrize("executor", ["process", pytest.param("dask", marks=pytest.mark.skipif(
    subprocess.run([sys.executable, "-c", "import distributed"], capture_output=True).returncode != 0,
    reason="dask[distributed] is not installed"))])
def test_plugins_are_imported_by_two_spawned_workers(proto, tmp_path, executor):
    """Kills: workers that rely on having been forked from a parent that imported the prototype.
    The workers here are spawned (fresh interpreters, as Dask's are), so without the import in
    ``run_batch`` every cell fails with "no algorithm named 'proto-halves'" (checked by hand)."""
    script = tmp_path / "spawned.py"
    script.write_text(SPAWNED)
    path = [str(proto), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path), "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, str(script), executor], capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "rows 120" in done.stdout


def test_the_command_finds_a_prototype_in_the_current_folder(tmp_path):
    """Kills: ``--import`` searching only the installed packages.  The ``dphist`` script's own folder
    (not the current one) heads ``sys.path``, so a prototype beside the user is found only because
    the command adds the current folder (last, never shadowing an installed module)."""
    (tmp_path / f"{PROTO}.py").write_text(SOURCE)
    script = os.path.join(os.path.dirname(sys.executable), "dphist")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([script, "--import", PROTO, "list", "--kind", "algorithm"], cwd=tmp_path,
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert PRESET in done.stdout
