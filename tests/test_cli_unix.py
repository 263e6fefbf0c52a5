"""The command line as a Unix tool: quiet broken pipes, names resolved as `run` resolves them, bad
arguments refused before anything runs, and file modes that follow the umask."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dphist.cli import main

DPHIST = [sys.executable, "-m", "dphist.cli"]


# ------------------------------------------------------------------ broken pipes
@pytest.mark.parametrize("argv", [["list"], ["describe", "AHP"], ["run", "-a", "identity", "-e", "1"]],
                         ids=["list", "describe", "run"])
def test_a_closed_stdout_ends_quietly_with_141(tmp_path, argv):
    """Kills: no BrokenPipeError handler in main (a traceback, status 1 or 120), the handler without the
    final flush (the error surfaces in the interpreter's exit flush: "Exception ignored ... BrokenPipeError"),
    or a different status than the documented 141."""
    if argv[0] == "run":
        (tmp_path / "h.txt").write_text("\n".join(map(str, range(200))))
        argv = argv + ["-i", str(tmp_path / "h.txt")]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}   # block-buffered, as for a user
    proc = subprocess.Popen(DPHIST + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    proc.stdout.close()                      # the reader is gone before anything is written: `| head -0`
    _, err = proc.communicate(timeout=120)
    err = err.decode()
    assert "Traceback" not in err and "BrokenPipe" not in err and "Exception ignored" not in err, err
    assert proc.returncode == 141


# ------------------------------------------------------------------ describe
def test_describe_resolves_a_name_as_run_does(capsys):
    """Kills: describe matching names exactly only (`describe dawa` printed nothing and exited 0), or an
    unknown name without the closest names."""
    assert main(["describe", "dawa"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("DAWA  [algorithm]") and "stages" in out
    assert main(["describe", "DAWAA"]) == 2
    err = capsys.readouterr().err
    assert "no component, preset or dataset named 'DAWAA'" in err and "did you mean 'DAWA'" in err
    assert main(["describe", "Group-Mean"]) == 0 and "group-mean  [finalizer]" in capsys.readouterr().out


# ------------------------------------------------------------------ run: refused before it runs
@pytest.fixture
def no_run(monkeypatch):
    """Any pipeline run fails the test: the errors below must come before the algorithm runs."""
    from dphist.pipeline import Pipeline

    def refuse(*args, **kwargs):
        raise AssertionError("the algorithm ran before the bad argument was refused")
    monkeypatch.setattr(Pipeline, "run", refuse)


@pytest.mark.parametrize("extra, words", [
    (["-e", "1e-300"], "too small for the exact samplers"),
    (["-e", "1", "-o", "/nonexistent-dphist-folder/x.csv"], "does not exist"),
    (["-e", "1", "-o", "{tmp}/out.json"], "unsupported type '.json'"),
    (["-e", "1", "--domain", "0:3"], "--domain applies only with --records"),
    (["-e", "1", "--bins", "4"], "--bins applies only with --records"),
    (["-e", "1", "-o", "{tmp}/old.npy"], "old.npy.json' exists"),
], ids=["tiny-epsilon", "missing-folder", "json-output", "domain-without-records", "bins-without-records",
        "existing-sidecar"])
def test_run_refuses_bad_arguments_before_running(tmp_path, capsys, no_run, extra, words):
    """Kills: any of these checks moved after `pipeline.run` (the output's type and folder were checked
    only by the writer; a tiny epsilon failed inside the exact sampler with a traceback; --domain without
    --records was ignored), or an error longer than one line."""
    (tmp_path / "h.txt").write_text("1\n2\n3\n")
    (tmp_path / "old.npy.json").write_text("{}")
    argv = ["run", "-a", "identity", "-i", str(tmp_path / "h.txt")] + [e.format(tmp=tmp_path) for e in extra]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1, err


def test_exact_sampler_refuses_a_huge_scale_as_a_parameter_error():
    """Kills: the exact sampler's scale limit raised as a bare ValueError (a traceback in the CLI)."""
    from dphist.errors import InvalidParameter
    from dphist.kernel.exact import dyadic_scale_at_least
    with pytest.raises(InvalidParameter, match="too large for the exact sampler"):
        dyadic_scale_at_least(1e300)


# ------------------------------------------------------------------ file modes
@pytest.fixture(params=[0o022, 0o027])
def umask(request):
    old = os.umask(request.param)
    yield request.param
    os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_every_written_file_follows_the_umask(tmp_path, umask):
    """Kills: leaving tempfile's 0600 (files) / 0700 (the audit folder) on any atomic write, or a fixed
    0644 that ignores the umask (umask 027 must give 0640)."""
    from dphist.audit import FAST_PAIRS, audit
    from dphist.audit.report import write_reports, write_table
    from dphist.experiments import SweepConfig, run_sweep
    from dphist.io import write_array
    file_mode, dir_mode = 0o666 & ~umask, 0o777 & ~umask
    write_array(tmp_path / "r.csv", [1.0, 2.0], header="dphist release mode")
    write_array(tmp_path / "r.npy", [1.0, 2.0], header="dphist release mode")
    for name in ("r.csv", "r.npy", "r.npy.json"):
        assert _mode(tmp_path / name) == file_mode, name
    cfg = SweepConfig.from_mapping({"algorithms": ["identity"], "datasets": ["synthetic:shape=zipf,n=16"],
                                    "trials": 1, "executor": "serial", "output": str(tmp_path / "sweep")})
    run_sweep(cfg, progress=False)
    for name in ("results.csv", "results.json", "config.json"):
        assert _mode(tmp_path / "sweep" / name) == file_mode, name
    r = audit("identity", samples=100, pairs=FAST_PAIRS[:1], seed=1)
    out = write_reports([r], tmp_path / "audit")
    assert _mode(out) == dir_mode
    assert _mode(out / "audit.json") == _mode(out / "audit.md") == file_mode
    assert _mode(write_table([r], tmp_path / "AUDIT.md")) == file_mode
    assert np.loadtxt(tmp_path / "r.csv").tolist() == [1.0, 2.0]


def test_warm_runs_presets_of_every_dimension(monkeypatch, capsys):
    """`make install` runs `dphist warm`.  Kills: warm giving a 2-D-only preset (UG) a 1-D histogram,
    which refuses it and fails the install, or warm skipping the release-mode run."""
    from dphist import default_registry
    from dphist.cli import main
    from dphist.pipeline import Pipeline

    monkeypatch.setattr(default_registry, "names", lambda kind: ["identity", "UG"])
    runs = []
    real_run = Pipeline.run

    def counting_run(self, histogram, epsilon, seed=None, **kw):
        runs.append((self.name, np.shape(histogram), seed is None))
        return real_run(self, histogram, epsilon, seed=seed, **kw)

    monkeypatch.setattr(Pipeline, "run", counting_run)
    assert main(["warm", "--bins", "16"]) == 0
    assert ("UG", (4, 4), True) in runs and ("identity", (16,), True) in runs
    assert "2 presets compiled" in capsys.readouterr().err


def test_warm_compiles_the_order_loops_a_large_run_uses():
    """Runs of 2^16 bins and more gather, scatter and check orders through ``dphist._order_jit``, on arrays
    that are read-only (the kernel's counts and checked orders) or not: ``dphist warm`` compiles each kind,
    so such a run finds every signature it uses already compiled.  In a fresh interpreter (this one's
    dispatchers may hold signatures other tests compiled).  Kills: warm compiling the writeable arrays only,
    or one dtype only (the run then compiles a new signature)."""
    import subprocess
    import sys
    script = (
        "import numpy as np\n"
        "from dphist import _order_jit, make_algorithm\n"
        "from dphist.warm import order_loops\n"
        "order_loops()\n"
        "loops = (_order_jit.take_into, _order_jit.put_into, _order_jit.is_permutation_bits)\n"
        "before = [set(f.signatures) for f in loops]\n"
        "counts = np.random.default_rng(5).poisson(3, 1 << 16)\n"
        "for name in ('GS', 'AHP', 'H'):\n"
        "    make_algorithm(name).run(counts, 1.0, seed=1)\n"
        "print([sorted(map(str, set(f.signatures) - b)) for f, b in zip(loops, before)])\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[[], [], []]", out
