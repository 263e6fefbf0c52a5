"""Run the speed benchmarks: ``make bench`` (all) or ``python benchmarks/run.py TOPIC... [--only "A|B"]``.

``--only "A|B"`` runs the cases whose name contains ``A`` or ``B`` (names hold commas: ``|`` separates;
``^A``: whose name starts with ``A``, so that ``^H, N`` leaves out ``GreedyH, N``) and keeps the topic's other rows from its results file (said in the file's first line).

Each ``benchmarks/bench_<topic>.py`` defines ``CASES``: a list of dicts with

* ``name``   - what is measured (include N);
* ``target`` - the issue's bound in seconds (None for information only);
* ``setup``  - callable returning a tuple of arguments (not timed);
* ``run``    - callable taking those arguments (timed);
* ``warmup`` - optional, False skips the untimed first run (for long cases).

A relative target (an overhead, a speed-up) is a *paired* case: it also has

* ``reference`` - callable taking the same arguments (timed);
* ``factor``    - the target is ``factor`` x the reference's best time (None: information, the
  ratio only);
* ``settle``    - optional callable run untimed after every timed call of either side (work a call
  leaves running in the background, such as exiting worker processes, must not be timed in the
  other side's next call);

or, for a reference timed in another process (another Python, e.g. the DPBench code),

* ``reference_seconds`` - callable taking the same arguments, returning the seconds that process
  measured for one run (its start-up and the exchange are not counted), or None when the reference
  could not run (the case then says why in ``case["note"]`` and has no target).

The table gives a paired case's time ratio run / reference beside its name.  A case with

* ``measure`` - callable returning ``(value, target)`` (no timing: a derived number, such as a
  log-log slope over other cases' times, read from their ``case["seconds"]``, or a peak memory)

is reported as that value.

Each case is run once to warm up (imports, numba compilation), then timed as
the best of ``repeat`` runs (wall clock, ``time.perf_counter``).  A paired
case alternates reference and run ``repeat`` times, so both sides see the
same machine load (other sessions share this machine; timing one side after
the other lets a change of load decide the verdict).  Results are
printed and written to ``benchmarks/results/<topic>.md``, and BENCHMARKS.md is
rebuilt from ``benchmarks/HEADER.md`` and every topic's latest results.
"""
from __future__ import annotations

import importlib.util
import os
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def load(topic: str):
    path = HERE / f"bench_{topic}.py"
    if not path.exists():
        known = sorted(p.stem[6:] for p in HERE.glob("bench_*.py"))
        raise SystemExit(f"no benchmark topic {topic!r}; known: {', '.join(known)}")
    if str(HERE) not in sys.path:  # the topic modules share benchmarks/_cases.py
        sys.path.insert(0, str(HERE))
    spec = importlib.util.spec_from_file_location(f"bench_{topic}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _timed(fn, args) -> float:
    t = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t


def time_case(case: dict) -> float:
    """Best time of ``case['run']``; for a paired case also sets ``case['target']`` from the reference."""
    args = case["setup"]()
    remote = "reference_seconds" in case
    paired = "reference" in case or remote
    reference = case["reference_seconds"] if remote else (lambda *a: _timed(case["reference"], a))
    settle = case.get("settle", lambda: None)
    if paired:
        if reference(*args) is None:     # warm-up; a reference that cannot run leaves the case unpaired
            paired = False
            case["target"] = None
        settle()
    if case.get("warmup", True):  # a long case whose imports are warm anyway may skip it
        case["run"](*args)
        settle()
    repeat = case.get("repeat", 3)
    best = best_reference = float("inf")
    for _ in range(repeat):
        args = case["setup"]() if case.get("fresh_setup") else args
        if paired:
            seconds = reference(*args)
            settle()
            best_reference = min(best_reference, float("inf") if seconds is None else seconds)
        best = min(best, _timed(case["run"], args))
        settle()
    if paired:
        factor = case["factor"]   # None: a paired information case (its ratio only)
        case["target"] = None if factor is None else float(f"{factor * best_reference:.4g}")   # 4 significant digits: a rounded sub-ms target must not flip the verdict
        case["ratio"] = best / best_reference
    return best


def _load_average() -> str:
    """The machine's load average when a case ends (what ``uptime`` shows): a case timed on a loaded
    machine says so beside its number."""
    try:
        return ", ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "-"


def _selected(name: str, only) -> bool:
    """Whether ``--only``'s parts (None: every case) select the case ``name``: a part ``A`` when the name
    contains it, a part ``^A`` when the name starts with ``A``."""
    return only is None or any(name.startswith(part[1:]) if part.startswith("^") else part in name
                               for part in only)


def _base_name(row: str, names) -> str | None:
    """The case (one of ``names``) a table row is about: its first cell is the case's name, alone or
    followed by what the runner appends (`` (run / reference = ...)``, a note such as `` (DPBench failed:
    ...)``); the longest such name, or None."""
    text = row.split(" | ")[0].lstrip("| ").strip()
    found = [name for name in names if text == name or text.startswith(name + " (")]
    return max(found, key=len) if found else None


def _merged_rows(path: Path, cases: list[dict], fresh: dict[str, str]) -> list[str]:
    """The table of ``--only``: the re-run cases' rows and the other cases' rows kept from the results
    file (a row without a load column marked "(earlier run)"), in the topic's case order."""
    old = {}
    names = [case["name"] for case in cases]
    if path.exists():
        for ln in path.read_text().splitlines():
            if ln.startswith("| ") and not ln.startswith("| case") and not ln.startswith("|---"):
                cells = ln.rstrip(" |").split(" | ")
                if len(cells) == 4:           # a results file written before the load column
                    ln = ln.rstrip() + " (earlier run) |"
                name = _base_name(ln, names)
                if name is not None:
                    old[name] = ln
    rows = []
    for case in cases:
        if case["name"] in fresh:
            rows.append(fresh[case["name"]])
        elif case["name"] in old:
            rows.append(old[case["name"]])
    return rows


def main(argv: list[str]) -> int:
    only = None
    if "--only" in argv:    # --only "A|B": the cases whose name contains A or B; the other rows are kept
        at = argv.index("--only")
        only = [part for part in argv[at + 1].split("|") if part]
        argv = argv[:at] + argv[at + 2:]
    topics = argv or sorted(p.stem[6:] for p in HERE.glob("bench_*.py"))
    machine = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    failed = 0
    (HERE / "results").mkdir(exist_ok=True)
    for topic in topics:
        mod = load(topic)
        rows = []
        fresh = {}
        load_before = _load_average()
        for case in mod.CASES:
            if not _selected(case["name"], only):
                continue
            if "measure" in case:
                secs, case["target"] = case["measure"]()
            else:
                secs = case["seconds"] = time_case(case)
            target = case.get("target")
            ok = target is None or secs <= target
            failed += not ok
            verdict = "info" if target is None else ("ok" if ok else ("SLOW" if "measure" not in case else "NOT MET"))
            tgt = "-" if target is None else f"{target:g}"
            name = case["name"] + (f" (run / reference = {case['ratio']:.2f})" if "ratio" in case else "")
            name += f" ({case['note']})" if case.get("note") else ""
            load_avg = _load_average()
            rows.append(f"| {name} | {secs:.4f} | {tgt} | {verdict} | {load_avg} |")
            fresh[case["name"]] = rows[-1]
            print(f"[{topic}] {name}: {secs:.4f} (target {tgt}) {verdict}, load {load_avg}", flush=True)
        path = HERE / "results" / f"{topic}.md"
        if only is not None:
            rows = _merged_rows(path, mod.CASES, fresh)
        table = ["| case | best of runs (s) | target (s) | verdict | load average (1, 5, 15 min) |",
                 "|---|---|---|---|---|", *rows]
        stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        scope = "" if only is None else (f" Only the cases naming {' or '.join(only)} were run then (`--only`); "
                                         "the other rows are from earlier runs (their load column says when "
                                         "it was read; \"(earlier run)\" where none was)")
        path.write_text(
            f"### {topic}\n\nMeasured {stamp} on {machine}; load average (1, 5, 15 min) {load_before} at the start, "
            f"{_load_average()} at the end.{scope}\n\n" + "\n".join(table) + "\n")
    collect()
    return 1 if failed else 0


def collect() -> None:
    """Rebuild BENCHMARKS.md from every topic's latest results file, each followed by its hand-written
    commentary ``benchmarks/notes/<topic>.md`` when there is one (prose about conditions, comparisons and
    what a table means survives a re-run of the numbers)."""
    parts = sorted((HERE / "results").glob("*.md"))
    head = (HERE / "HEADER.md").read_text()

    def with_notes(path: Path) -> str:
        notes = HERE / "notes" / path.name
        text = path.read_text()
        return text + "\n" + notes.read_text() if notes.exists() else text

    body = "\n".join(with_notes(p) for p in parts)
    (HERE.parent / "BENCHMARKS.md").write_text(head + "\n" + body)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
