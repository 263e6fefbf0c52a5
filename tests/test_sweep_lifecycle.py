"""A sweep's life: reruns that report finished cells, a time budget that holds, an output folder of
another sweep refused, Ctrl-C that keeps finished cells and exits at once, workers that end with
their parent (the sweep's process pool and the audit's forked workers)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from dphist.errors import InvalidParameter
from dphist.experiments import Results, SweepConfig, run_sweep

ZIPF = "synthetic:shape=zipf,n=256,scale=20000"
STEPS = "synthetic:shape=steps,n=128,scale=5000"


def config(**kw) -> SweepConfig:
    base = {"algorithms": ["identity", "uniform"], "datasets": [ZIPF, STEPS], "epsilons": [0.1, 1.0],
            "trials": 3, "workloads": ["identity", "prefix"], "metrics": ["mse"], "executor": "serial"}
    base.update(kw)
    return SweepConfig.from_mapping(base)


def table(results: Results) -> list[tuple]:
    cols = ["algorithm", "dataset", "epsilon", "trial", "workload", "metric", "value"]
    return sorted(zip(*(results[c].tolist() for c in cols)))


# ------------------------------------------------------------------ reruns
def test_a_rerun_reports_finished_cells_whatever_the_new_plan(tmp_path):
    """Kills: the result table or the skipped list built from the new plan's cells only (a demo rerun
    under more load listed DAWA and SF as "not run" on datasets results.csv held), and a note about a
    cut dropped although its cells are missing (a fresh folder keeps it)."""
    from dphist.experiments.demo import PlanNote, still_true
    first = run_sweep(config(output=str(tmp_path / "a")), progress=False)
    limits = {"uniform": {"max_domain": 128}, "identity": {"trials": 1}}
    again = run_sweep(config(output=str(tmp_path / "a"), limits=limits), progress=False)
    assert again.cells_run == 0 and again.skipped == []
    assert table(again.results) == table(first.results)
    zipf = config().datasets[0].key                                   # the 256-bin dataset's label
    note = PlanNote.not_run_on("uniform", [zipf], "predicted 1 s per run")
    trials = PlanNote("identity: 1 trials instead of 3", "identity", "trials")
    assert still_true([note, trials, "plain"], again.skipped) == ["plain"]
    fresh = run_sweep(config(output=str(tmp_path / "b"), limits=limits), progress=False)
    assert {s["algorithm"] for s in fresh.skipped} == {"uniform", "identity"}
    assert still_true([note, trials], fresh.skipped) == [note, trials]
    both = PlanNote.not_run_on("uniform", ["elsewhere", zipf], "predicted 1 s per run")
    assert still_true([both], fresh.skipped) == [f"uniform: not run on {zipf} (predicted 1 s per run)"]
    left_out = run_sweep(config(output=str(tmp_path / "a"), limits={"uniform": {"trials": 0}}), progress=False)
    assert table(left_out.results) == table(first.results)       # trials = 0: no new cell, old ones reported
    partly = run_sweep(config(output=str(tmp_path / "a"), trials=4, limits={"uniform": {"trials": 0}}),
                       progress=False)                             # a 4th trial: uniform's are missing
    assert partly.cells_run == 4 and len(partly.results) == len(first.results) + 4 * 2
    gone = PlanNote("uniform: left out", "uniform", "left-out")
    assert still_true([gone], partly.skipped) == ["uniform: left out; 12 of the cells this cuts were finished "
                                                  "by an earlier run and are reported"]


# ------------------------------------------------------------------ another sweep's folder
def test_an_output_folder_of_another_sweep_is_refused_before_running(tmp_path, capsys):
    """Kills: appending a different sweep's rows to results.csv silently (no config.json check), the
    check after cells ran, or one that also refuses a mere change of trials (a resumable extension)."""
    from dphist.experiments import cli
    out = tmp_path / "sweep"
    run_sweep(config(output=str(out)), progress=False)
    before = (out / "results.csv").read_bytes()
    with pytest.raises(InvalidParameter, match=r"holds the results of another sweep \(it differs in epsilons\)"):
        run_sweep(config(output=str(out), epsilons=[0.5]), progress=False)
    assert (out / "results.csv").read_bytes() == before
    import argparse
    p = argparse.ArgumentParser()
    cli.configure_bench(p)
    argv = ["--algorithms", "identity", "--datasets", ZIPF, "--executor", "serial", "--output", str(out),
            "--no-progress"]
    assert cli.bench(p.parse_args(argv)) == 2
    err = capsys.readouterr().err
    assert "another sweep" in err and "--force" in err and err.count("\n") == 1
    assert (out / "results.csv").read_bytes() == before
    more = run_sweep(config(output=str(out), trials=4), progress=False)   # same sweep, one more trial
    assert more.cells_resumed == 24 and more.cells_run == 8
    assert run_sweep(config(output=str(out), epsilons=[0.5]), progress=False, force=True).cells_run == 12


# ------------------------------------------------------------------ time budget
def test_deadline_counts_the_queue_the_measured_rate_and_stays_shut(monkeypatch):
    """Kills: a deadline that ignores the work already admitted and not finished, that keeps the
    predicted seconds instead of the measured rate, or that admits again after a refusal."""
    from dphist.experiments import engine
    clock = [100.0]
    monkeypatch.setattr(engine.time, "perf_counter", lambda: clock[0])
    d = engine.Deadline(at=110.0, workers=2, predict=float)   # a "cell" is its predicted seconds here
    assert d.admit([4, 4])                 # 8 s on 2 workers: ends at 104
    assert not d.admit([6, 7])             # 8 queued + 13 = 21 s / 2 workers: 110.5 > 110 (alone: 106.5)
    assert not d.admit([1])                # refused once: nothing more starts (alone: 104.5)
    d = engine.Deadline(at=110.0, workers=1, predict=float)
    assert d.admit([2])
    clock[0] = 104.0
    d.done([2])                            # 2 predicted seconds took 4: 2 s per predicted second
    assert not d.admit([3.5])              # 7 s from 104: 111 > 110 (predicted alone: 107.5)
    d = engine.Deadline(at=110.0, workers=1)   # no prediction: admitted until a rate is measured
    assert d.admit([object()] * 1000)


def test_the_sweep_stops_starting_cells_at_its_deadline_and_reports_the_cut(tmp_path, monkeypatch):
    """Kills: run_sweep ignoring its deadline (every cell runs), cut cells not reported (cells_cut,
    skipped "time budget"), or cut cells counted as run.  The wall-time bound is a bound on a hang
    (the sweep alone would take 12 s), not a speed claim."""
    from dphist.experiments import engine
    from dphist.pipeline import Pipeline
    run = Pipeline.run

    def slow(self, *args, **kwargs):
        time.sleep(0.05)
        return run(self, *args, **kwargs)
    monkeypatch.setattr(Pipeline, "run", slow)
    cfg = config(output=str(tmp_path), trials=60)           # 480 cells of >= 0.05 s
    t0 = time.perf_counter()
    out = run_sweep(cfg, progress=False, deadline=engine.Deadline(t0 + 1.5, workers=1))
    assert time.perf_counter() - t0 < 6.0
    assert 0 < out.cells_run < 480 and out.cells_run + out.cells_cut == 480
    assert len(Results.read_csv(tmp_path / "results.csv")) == out.cells_run * 2   # 2 rows per cell
    cut = [s for s in out.skipped if s["reason"].startswith("time budget")]
    assert cut and sum(int(s["reason"].split()[2]) for s in cut) == out.cells_cut


def test_ctrl_c_in_the_engine_still_takes_the_cells_the_executor_hands_over(tmp_path, monkeypatch):
    """Kills: an engine that drops the executor's hand-over when Ctrl-C lands in its own code (writing a
    result, the progress bar) rather than inside the executor: the generator must get the interrupt
    thrown in, and what it yields then must reach results.csv."""
    from dphist.experiments import engine
    from dphist.experiments.cells import run_batch

    def executor(batches, job, workers=None, admit=None):
        try:
            yield batches[0], run_batch(batches[0], job)
            yield batches[1], run_batch(batches[1], job)
        except KeyboardInterrupt:                    # as the process executor: hand over, then re-raise
            yield batches[1][:3], run_batch(batches[1][:3], job)
            raise

    class Bar:                                       # Ctrl-C while the engine updates its progress bar
        hit = False

        def __init__(self, **kwargs):
            pass

        def update(self, n):
            if not Bar.hit:
                Bar.hit = True
                raise KeyboardInterrupt

        def close(self):
            pass
    monkeypatch.setitem(engine.EXECUTORS, "serial", executor)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(config(output=str(tmp_path)), progress=Bar)   # 24 cells: batches of 16 and 8
    assert len(Results.read_csv(tmp_path / "results.csv")) == (16 + 3) * 2


# ------------------------------------------------------------------ real processes: Ctrl-C and parent death
#: a `dphist` whose every pipeline run first sleeps (forked workers inherit it): slow cells on demand
SLOW_DPHIST = textwrap.dedent("""
    import sys, time
    from dphist.pipeline import Pipeline
    run = Pipeline.run
    def slow(self, *args, **kwargs):
        time.sleep(float(sys.argv[1]))
        return run(self, *args, **kwargs)
    Pipeline.run = slow
    if sys.argv[2] == "audit":
        from dphist.audit import FAST_PAIRS, audit
        audit("Hb", samples=100_000, pairs=FAST_PAIRS[:2], seed=1, workers=2)   # looped: Pipeline.run
    else:
        from dphist.cli import main
        sys.exit(main(sys.argv[2:]))
""")


def _children(pid: int) -> list[int]:
    """Live processes whose parent is ``pid``."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                out.append(int(entry.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _poll(condition, bound: float, step: float = 0.1) -> bool:
    """Whether ``condition()`` became true within ``bound`` seconds (a bound on a hang, not a speed claim)."""
    end = time.monotonic() + bound
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(step)
    return condition()


def _start(tmp_path, sleep: float, argv: list[str]) -> subprocess.Popen:
    script = tmp_path / "slow_dphist.py"
    script.write_text(SLOW_DPHIST)
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, str(script), str(sleep), *argv], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)


def _bench(trials: int) -> list[str]:
    return ["bench", "--algorithms", "identity", "--datasets", "synthetic:shape=zipf,n=64",
            "--epsilons", "0.1", "1", "--trials", str(trials), "--workloads", "identity", "--metrics", "mse",
            "--executor", "process", "--workers", "2", "--output", "out", "--no-progress"]


@pytest.fixture
def reaper():
    """Kill every process group a test started, whatever the test's outcome."""
    groups = []
    yield groups.append
    for proc in groups:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        for pipe in (proc.stdout, proc.stderr):
            pipe.close()


@pytest.mark.parametrize("target", ["group", "parent"])
def test_ctrl_c_keeps_the_finished_cells_of_running_batches_and_exits_at_once(tmp_path, reaper, target):
    """Kills: a batch's finished cells thrown away on Ctrl-C (only whole batches were written), waiting
    for the running and queued batches to finish (12.8 s each here) instead of stopping the workers,
    and a parent that does not signal its workers when only it gets SIGINT (`kill -INT`).
    "group" is a terminal's Ctrl-C (every process of the group); "parent" only the parent."""
    proc = _start(tmp_path, 0.2, _bench(800))    # 1,600 cells, 64 per batch: 12.8 s a batch
    reaper(proc)
    csv = tmp_path / "out" / "results.csv"
    assert _poll(lambda: csv.exists() and len(_children(proc.pid)) == 2, 120), proc.stderr.read1().decode()
    time.sleep(2.5)                              # each worker has finished ~12 cells of its first batch
    if target == "group":
        os.killpg(proc.pid, signal.SIGINT)
    else:
        os.kill(proc.pid, signal.SIGINT)
    sent = time.monotonic()
    assert _poll(lambda: proc.poll() is not None, 8.0), "still running 8 s after Ctrl-C"
    waited = time.monotonic() - sent
    err = proc.stderr.read().decode()
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err, err
    rows = Results.read_csv(csv)
    assert len(rows) >= 4, f"no finished cell kept ({waited:.1f} s after SIGINT)"   # one row per cell here
    assert set(rows["trial"].tolist()) <= set(range(800))
    assert _poll(lambda: not _children(proc.pid), 5)


@pytest.mark.parametrize("what", ["bench", "audit"])
def test_workers_end_when_their_parent_is_killed(tmp_path, reaper, what):
    """Kills: pool workers without a parent-death signal or watchdog (`dphist bench`'s process executor
    and `dphist audit`'s forked workers lived on with PPID 1 after SIGKILL of their parent)."""
    argv = _bench(800) if what == "bench" else ["audit"]
    proc = _start(tmp_path, 0.2 if what == "bench" else 0.01, argv)
    reaper(proc)
    assert _poll(lambda: len(_children(proc.pid)) == 2, 120), proc.stderr.read1().decode()
    workers = _children(proc.pid)
    time.sleep(1.0)
    assert all(_alive(w) for w in workers)      # the workers were busy, not finished
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert _poll(lambda: not any(_alive(w) for w in workers), 5.0), \
        f"workers {[w for w in workers if _alive(w)]} outlived their parent"


def test_the_demo_keeps_every_preset_in_its_sweep_and_bounds_its_probes():
    """Kills: probes that ignore the budget (under load they alone overran it), a preset left out of the
    plan dropped from the sweep's configuration (a rerun under another load would be "another sweep" and
    could not report its earlier cells), and a sweep deadline already past when the sweep starts."""
    from dphist.experiments import demo
    t0 = time.perf_counter()
    cfg, notes, probes, deadline = demo.demo_config(budget=0.001, presets=["identity", "uniform"],
                                                    executor="serial", started=t0)
    assert probes == {"identity": {"unprobed": True}, "uniform": {"unprobed": True}}
    assert [a.name for a in cfg.algorithms] == ["identity", "uniform"]
    assert cfg.limits == {"identity": {"trials": 0}, "uniform": {"trials": 0}}
    assert sum("not probed within" in n for n in notes) == 2
    assert deadline.at >= t0 + demo.MIN_SWEEP


def test_the_demos_2d_part_runs_grid_presets_on_the_flights_grid(tmp_path):
    """Kills: the 2-D part planned on the 1-D datasets or with range workloads (its sweep would refuse the
    grid presets), probes warmed up on a vector (every grid preset "broken"), its budget not what is left
    of the whole demo's, and its cells not written in their own folder."""
    from dphist.experiments import demo
    t0 = time.perf_counter()
    assert demo.grid_budget(150, t0, t0 + 100) == 50 and demo.grid_budget(150, t0, t0 + 149) == \
        demo.REPORT_RESERVE + demo.MIN_SWEEP
    cfg, notes, probes, deadline = demo.demo_config(budget=60, presets=["UG", "identity"], executor="serial",
                                                    trials=1, output=str(tmp_path / "2d"), dims=2)
    assert [d.name for d in cfg.datasets] == ["flights-delays"] and "dpbench-random-2000" in cfg.workloads
    assert set(probes) == {"UG", "identity"} and all("times" in p for p in probes.values())
    outcome = run_sweep(cfg, progress=False, deadline=deadline)
    assert set(outcome.results.unique("algorithm")) == {"UG", "identity"}
    assert set(outcome.results["domain"].tolist()) == {256 * 256} and (tmp_path / "2d" / "results.csv").exists()


def test_probes_on_a_pool_stop_at_their_deadline_and_leave_no_worker():
    """Kills: the pool path of the probes waiting for every probe whatever the deadline, or leaving its
    workers running after giving up on them."""
    import numpy as np
    from dphist.experiments import demo
    # 32,768 varied bins: S1 (quadratic) and SF take seconds each even on a quiet machine (2,048 flat bins
    # took 0.06 s, inside the deadline, so the probes finished and the test could not see the cut)
    sources = {"big": np.random.default_rng(0).integers(0, 10**6, 32_768)}
    before = set(_children(os.getpid()))          # earlier tests' helpers (e.g. a kernel) are not the pool's
    t0 = time.perf_counter()
    probes = demo._probe_all(["kellaris.S1", "SF"], sources, cap=60.0, workers=2, until=t0 + 0.2)
    assert probes == {"kellaris.S1": {"unprobed": True}, "SF": {"unprobed": True}}
    assert time.perf_counter() - t0 < 30          # a bound on a hang: the probes alone take far longer
    assert _poll(lambda: not set(_children(os.getpid())) - before, 5.0), \
        f"pool workers {set(_children(os.getpid())) - before} outlived the probes"
