"""The benchmark runner's ``--only`` table (``benchmarks/run.py``): the rows it keeps from earlier runs.

Each test names the mutation it kills."""
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _runner():
    spec = importlib.util.spec_from_file_location("bench_run", ROOT / "benchmarks" / "run.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_only_keeps_the_rows_of_cases_whose_peer_failed_or_stopped(tmp_path):
    """Kills: matching an earlier row to its case by cutting only `` (run / reference = ``, which drops
    every row whose note follows the name directly (a peer that failed: no ratio), and matching by a
    bare prefix taking the first name found, which gives the row of ``A, N=4,096`` to the case ``A, N=4``
    (both checked by hand: the test fails with either)."""
    run = _runner()
    cases = [{"name": n} for n in ("A, N=4", "A, N=4,096", "B, N=4,096", "C, N=4,096")]
    results = tmp_path / "topic.md"
    results.write_text("\n".join([
        "### topic", "",
        "| case | best of runs (s) | target (s) | verdict | load average (1, 5, 15 min) |",
        "|---|---|---|---|---|",
        "| A, N=4 (run / reference = 0.50) | 0.1 | 0.2 | ok | 1.00, 1.00, 1.00 |",
        "| A, N=4,096 (DPBench failed: MemoryError: Unable to allocate 8.00 GiB) | 0.3 | - | info | 1.00, 1.00, 1.00 |",
        "| B, N=4,096 (run / reference = 0.10) (DPBench stopped after 30 s: its time is at least that) | 3 | 30 | ok | 2.00, 2.00, 2.00 |",
        "| C, N=4,096 (run / reference = 2.00) | 2 | 1 | SLOW | 3.00, 3.00, 3.00 |", ""]))
    fresh = {"C, N=4,096": "| C, N=4,096 (run / reference = 0.90) | 0.9 | 1 | ok | 4.00, 4.00, 4.00 |"}
    rows = run._merged_rows(results, cases, fresh)
    assert rows == [
        "| A, N=4 (run / reference = 0.50) | 0.1 | 0.2 | ok | 1.00, 1.00, 1.00 |",
        "| A, N=4,096 (DPBench failed: MemoryError: Unable to allocate 8.00 GiB) | 0.3 | - | info | 1.00, 1.00, 1.00 |",
        "| B, N=4,096 (run / reference = 0.10) (DPBench stopped after 30 s: its time is at least that) | 3 | 30 | ok | 2.00, 2.00, 2.00 |",
        fresh["C, N=4,096"]]


def test_only_parts_match_inside_or_at_the_start_of_a_name():
    """``--only "^H, N"`` selects H's cases and not GreedyH's or S2+H's, which contain ``H, N`` too.
    Kills: ``^`` ignored (the part matched anywhere, or taken literally: nothing selected), or a plain
    part matched at the start only (checked by hand: the test fails with either)."""
    run = _runner()
    names = ["H, N=2^20, power law", "GreedyH, N=2^20, power law", "kellaris.S2+H, N=2^20, power law"]
    assert [n for n in names if run._selected(n, ["^H, N"])] == names[:1]
    assert [n for n in names if run._selected(n, ["H, N"])] == names
    assert [n for n in names if run._selected(n, ["^Greedy", "S2+H"])] == names[1:]
    assert all(run._selected(n, None) for n in names)


def _cases_module():
    import sys
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        spec = importlib.util.spec_from_file_location("bench_cases", ROOT / "benchmarks" / "_cases.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return mod


def test_a_paired_case_without_a_factor_is_information():
    """Kills: a ``factor`` of None multiplied into a target (the runner raised TypeError), and a paired
    information case given a target (its row would carry a verdict against nothing the issue asks)."""
    run = _runner()
    case = {"name": "x", "setup": tuple, "reference": lambda: None, "run": lambda: None, "factor": None,
            "repeat": 2}
    run.time_case(case)
    assert case["target"] is None and case["ratio"] > 0


def test_the_machine_ceiling_runs_two_copies_at_once_against_two_in_one_process(tmp_path):
    """Kills: the run side forking one child (the ratio would be 1, not the ceiling), the reference
    forking two (both sides would be the same), and a copy left out on either side."""
    import os
    log = tmp_path / "pids"

    def work(path):
        with open(path, "a") as f:
            f.write(f"{os.getpid()}\n")
    case = _cases_module().machine_ceiling("test", lambda: (str(log),), work)
    assert case["factor"] is None
    case["reference"](str(log))
    pids = log.read_text().split()
    assert len(pids) == 2 and len(set(pids)) == 1 and pids[0] != str(os.getpid())
    log.unlink()
    case["run"](str(log))
    pids = log.read_text().split()
    assert len(pids) == 2 and len(set(pids)) == 2 and str(os.getpid()) not in pids


def test_a_failing_copy_fails_the_ceiling_case():
    """Kills: the children's exit statuses not read (a copy that raised would time as a fast one)."""
    import pytest

    def work():
        raise ValueError("boom")
    case = _cases_module().machine_ceiling("test", tuple, work)
    with pytest.raises(RuntimeError, match="2 of 2 forked children failed"):
        case["run"]()
