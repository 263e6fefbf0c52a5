"""``dphist warm`` (``dphist.warm``): every preset compiled over forked workers, plugin by plugin, then run
once more in the calling process so that the cache is complete when it returns."""
from __future__ import annotations

import os

import pytest

from dphist import default_registry
from dphist import warm as warm_module
from dphist.cli import main


def _recording_runs(monkeypatch, log, fail_in_worker=None):
    """Replace the preset runs with a line ``pid name`` appended to ``log`` (nothing is compiled); a run of
    ``fail_in_worker`` outside the calling process raises."""
    parent = os.getpid()

    def record(name, bins):
        with open(log, "a") as f:
            f.write(f"{os.getpid()} {name}\n")
        if name == fail_in_worker and os.getpid() != parent:
            raise RuntimeError(f"{name} failed to run")

    monkeypatch.setattr(warm_module, "run_preset", record)
    monkeypatch.setattr(warm_module, "large_input_paths", lambda: None)
    return parent


def _runs(log):
    out: dict[int, list[str]] = {}
    for line in log.read_text().splitlines():
        pid, name = line.split()
        out.setdefault(int(pid), []).append(name)
    return out


NAMES = ["identity", "GS", "SF", "NF", "MWEM"]   # four distributions


@pytest.mark.skipif("fork" not in __import__("multiprocessing").get_all_start_methods(), reason="needs fork")
def test_workers_compile_the_plugins_and_this_process_runs_every_preset_after_them(monkeypatch, tmp_path):
    """Kills: the pool never used (no run in another process), a plugin's presets split over workers or
    one dropped, the shared preset run in the workers, and the last pass in the calling process dropped
    (an entry a worker's cache write lost would then be compiled by the user's first run)."""
    log = tmp_path / "runs.txt"
    parent = _recording_runs(monkeypatch, log)
    assert warm_module.warm(bins=16, jobs=2, names=NAMES) == NAMES
    runs = _runs(log)
    assert runs[parent][0] == "identity"                 # shared kernels first, before any fork
    assert sorted(runs[parent][1:]) == sorted(NAMES[1:])  # then every other preset, once, after the workers
    workers = {pid: names for pid, names in runs.items() if pid != parent}
    assert workers, "no preset ran in a worker"
    in_workers = sorted(n for names in workers.values() for n in names)
    assert in_workers == sorted(NAMES[1:])               # each once, the shared one not again
    for names in workers.values():                       # SF and NF (structurefirst) in one worker
        assert ("SF" in names) == ("NF" in names)


@pytest.mark.skipif("fork" not in __import__("multiprocessing").get_all_start_methods(), reason="needs fork")
def test_a_preset_failing_in_a_worker_fails_the_warm_up(monkeypatch, tmp_path):
    """Kills: the workers' results never read (a preset that cannot run in a worker would pass unseen,
    since the last pass here runs it without the failure)."""
    _recording_runs(monkeypatch, tmp_path / "runs.txt", fail_in_worker="MWEM")
    with pytest.raises(RuntimeError, match="MWEM failed to run"):
        warm_module.warm(bins=16, jobs=2, names=NAMES)


def test_one_job_runs_everything_here(monkeypatch, tmp_path):
    log = tmp_path / "runs.txt"
    parent = _recording_runs(monkeypatch, log)
    warm_module.warm(bins=16, jobs=1, names=NAMES)
    runs = _runs(log)
    assert list(runs) == [parent] and sorted(runs[parent]) == sorted(NAMES)


def test_plugin_groups_keep_each_distribution_together_largest_first():
    """Kills: a preset lost or repeated, or the groups not by distribution."""
    unavailable = default_registry.unavailable("algorithm")
    names = [n for n in default_registry.names("algorithm") if n not in unavailable]
    groups = warm_module.plugin_groups(names)
    assert sorted(n for g in groups for n in g) == sorted(names)
    owner = {e.name: e.distribution for e in default_registry.entries("algorithm")}
    assert all(len({owner[n] for n in g}) == 1 for g in groups)
    assert len({owner[g[0]] for g in groups}) == len(groups)
    assert [len(g) for g in groups] == sorted((len(g) for g in groups), reverse=True)
    assert warm_module.plugin_groups(["not-registered", "GS"]) == [["not-registered"], ["GS"]]


@pytest.mark.parametrize("argv, message", [(["--jobs", "0"], "--jobs must be at least 1"),
                                           (["--bins", "1"], "--bins must be at least 2")])
def test_bad_options_are_refused_before_anything_runs(monkeypatch, capsys, argv, message):
    monkeypatch.setattr(warm_module, "warm", lambda *a, **k: pytest.fail("warm ran"))
    assert main(["warm", *argv]) == 2
    assert message in capsys.readouterr().err
