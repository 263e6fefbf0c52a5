"""The process executor's forked workers (:mod:`dphist.experiments.forking`): the same table as the serial
executor row for row, the time budget's pace, and what a failing cell or a dying worker leaves."""
from __future__ import annotations

import multiprocessing
import os
import signal
import time
from pathlib import Path

import pytest

from dphist.experiments import Results, SweepConfig, run_sweep
from dphist.experiments import cells as cells_module
from dphist.experiments.cells import Cell, CellFailed, Job
from dphist.experiments.forking import RemoteTraceback, WorkerDied

pytestmark = pytest.mark.skipif(multiprocessing.get_start_method() != "fork",
                                reason="the forked workers run where the default start method is fork")

ZIPF = "synthetic:shape=zipf,n=256,scale=20000"
STEPS = "synthetic:shape=steps,n=128,scale=5000"
IDENTITY = ("algorithm", "dataset", "domain", "scale", "epsilon", "trial", "seed", "sampled", "unattributed",
            "workload", "metric", "reference", "value")


def config(**kw) -> SweepConfig:
    base = {"algorithms": ["identity", "uniform"], "datasets": [ZIPF, STEPS], "epsilons": [0.1, 1.0],
            "trials": 3, "workloads": ["identity", "prefix"], "metrics": ["mse", "kl"], "executor": "serial"}
    base.update(kw)
    return SweepConfig.from_mapping(base)


def table(results: Results) -> list[tuple]:
    return list(zip(*(results[c].tolist() for c in IDENTITY)))


def _children() -> set[int]:
    """This process's children not yet reaped (the kernel's list for the main thread, which forks them)."""
    return {int(pid) for pid in Path(f"/proc/self/task/{os.getpid()}/children").read_text().split()}


def _no_children_left(before: set[int], bound: float = 5.0) -> bool:
    end = time.monotonic() + bound                  # a bound on a hang, not a speed claim
    while time.monotonic() < end and _children() - before:
        time.sleep(0.05)
    return not _children() - before


def _slow_first_cells(monkeypatch, trial: int = 0, seconds: float = 0.3):
    """Cells of ``trial`` of the first algorithm sleep first (the forked workers inherit the patch), so the
    batches finish out of plan order."""
    run = cells_module._run_pipeline

    def slow(cell, job, seed):
        if cell.trial == trial and cell.algorithm == "identity" and cell.epsilon == 0.1:
            time.sleep(seconds)
        return run(cell, job, seed)
    monkeypatch.setattr(cells_module, "_run_pipeline", slow)


@pytest.mark.parametrize("queue_cap", [None, 2])
def test_two_workers_give_the_serial_table_row_for_row(monkeypatch, queue_cap):
    """Kills: the table's rows in the order the batches finish (the first batch here finishes after
    later ones: its first cell sleeps); with a queue of 2 batch numbers ahead, a pipe of numbers not
    topped up as results come back (the sweep would end with batches never run); `workers_ended`
    returning while the workers it reaps are still alive (the sweep returns before they exit)."""
    from dphist.experiments import engine, forking
    if queue_cap is not None:
        monkeypatch.setattr(forking, "_QUEUE_CAP", queue_cap)
    monkeypatch.setattr(engine, "BATCHES_PER_WORKER", 2)       # 48 cells: 13 batches of 8, 7, ..., 2
    cfg = config(scales=[None, 3000], population=True)
    serial = run_sweep(cfg, output=False, progress=False).results
    _slow_first_cells(monkeypatch)
    cfg.executor, cfg.workers = "process", 2
    before = _children()
    process = run_sweep(cfg, output=False, progress=False)
    assert process.cells_run == 48 and len(serial) == 2 * 2 * 2 * 2 * 3 * 3 * 1.5
    assert table(process.results) == table(serial)
    assert forking.workers_ended(timeout=5.0) and not _children() - before     # reaped, none left


def test_the_time_budget_admits_batches_as_results_come_back():
    """Kills: every batch number queued at once whatever ``admit`` says (a time budget that cannot stop
    the sweep), and batches run after a refusal."""
    from dphist.experiments import executors
    job = Job({}, {}, (), ("kl",), False)
    batches = [[Cell("identity", "d", 16, 100, False, 0.1, t, 0)] for t in range(12)]
    asked, results = [], []

    def admit(batch):
        asked.append((batch[0].trial, len(asked) - len(results)))   # (batch, admitted and unfinished)
        return batch[0].trial < 7

    def fake_cells(cells, job, stop_on_interrupt):
        return [{"trial": c.trial} for c in cells], False

    import dphist.experiments.forking as forking
    old = forking.run_cells
    forking.run_cells = fake_cells
    try:
        for done, rows in executors.run_processes(batches, job, workers=2, admit=admit):
            results.append(done[0].trial)
    finally:
        forking.run_cells = old
    assert sorted(results) == list(range(7))
    assert [t for t, _ in asked] == list(range(8))                 # in order, up to the first refusal
    assert max(ahead for _, ahead in asked) <= executors.QUEUED_PER_WORKER * 2


def test_a_cells_error_in_a_worker_is_raised_with_the_workers_traceback(monkeypatch):
    """Kills: a worker's exception lost (the sweep hangs or returns a table without the cell), raised
    without naming the cell, and the other worker left running."""
    class Broken:
        def run(self, *args, **kwargs):
            raise ValueError("boom")

    pipeline = cells_module._pipeline
    monkeypatch.setattr(cells_module, "_pipeline",
                        lambda label, spec: Broken() if label == "uniform" else pipeline(label, spec))
    before = _children()
    with pytest.raises(CellFailed, match=r"uniform on .* failed: ValueError: boom") as info:
        run_sweep(config(executor="process", workers=2), output=False, progress=False)
    assert isinstance(info.value.__cause__, RemoteTraceback) and "ValueError: boom" in str(info.value.__cause__)
    assert _no_children_left(before)


@pytest.mark.parametrize("how, message", [("kill", "killed by signal SIGKILL"), ("exit", "unfinished")])
def test_a_worker_that_dies_mid_sweep_is_an_error_and_no_table(monkeypatch, tmp_path, how, message):
    """Kills: a worker's end of file taken as its normal end, so that the sweep returns a table without
    the cells of the batch it was running ("kill": SIGKILL mid-cell; "exit": user code calling
    ``os._exit(0)``, a clean exit status with a batch unfinished); and the other worker left running."""
    parent = os.getpid()
    run = cells_module._run_pipeline

    def dies(cell, job, seed):
        if os.getpid() != parent and cell.trial == 1 and cell.algorithm == "uniform":
            if how == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            os._exit(0)
        return run(cell, job, seed)
    monkeypatch.setattr(cells_module, "_run_pipeline", dies)
    before = _children()
    with pytest.raises(WorkerDied, match=message):
        run_sweep(config(executor="process", workers=2), output=tmp_path / "out", progress=False)
    assert not (tmp_path / "out" / "results.json").exists()
    assert _no_children_left(before)


def test_one_reaper_thread_serves_every_sweep_and_a_forked_child_gets_its_own():
    """Kills: a reaper thread started per sweep (each sweep's end then waits for a new thread to be scheduled
    beside its exiting workers), and a forked child keeping the parent's reaper, whose thread does not exist
    there (a sweep run in that child would leave its workers unreaped and `workers_ended` waiting)."""
    import threading

    from dphist.experiments import forking
    cfg = config(executor="process", workers=2, trials=1)
    reapers = set()
    for _ in range(2):
        run_sweep(cfg, output=False, progress=False)
        assert forking.workers_ended(timeout=5.0)
        reapers |= {t.ident for t in threading.enumerate() if t.name == "dphist-reap-workers"}
    assert len(reapers) == 1
    parent_reaper = forking._REAPER
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        ok = forking._REAPER is not parent_reaper and forking._REAPER._thread is None
        if ok:   # a sweep in the child: its workers reaped by the child's own reaper
            run_sweep(cfg, output=False, progress=False)
            ok = forking.workers_ended(timeout=5.0)
        os.write(write, b"1" if ok else b"0")
        os._exit(0)
    os.close(write)
    answer = os.read(read, 1)
    os.close(read)
    os.waitpid(pid, 0)
    assert answer == b"1"
