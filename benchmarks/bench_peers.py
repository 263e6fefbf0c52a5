"""Every preset with a DPBench or ektelo counterpart against that code, at N = 4,096, 32,768 and 2^20.

Target: each preset at least as fast as the peer's engine (``factor`` 1: run / reference <= 1).
Paired cases: the runner alternates one dphist run (research mode, seeded) and one run of the
reference, which is timed inside its own process (``dpbench_timer.py`` or ``ektelo_timer.py``, one request loop,
``_timer_protocol.serve``; the
peer's own Python on a scratch copy of its code; its start-up and the exchange of a JSON line are not
counted), so both sides see the same load.  Inputs: dphist's seeded synthetic power law (10 records per
bin on average), the same counts on both sides, epsilon = 1; the peers' engines get their own 1-D
prefix workload (built once, not timed).

Where the references live: ``DPHIST_DPBENCH`` / ``DPHIST_DPBENCH_PYTHON`` (a scratch copy of
github:dpcomp-org/dpcomp_core and a Python with numpy, scipy and ``future``, the copy's extensions built:
DAWA's ``cutils`` with swig, AHP's ``ahp_fast`` with ``cythonize -2``; its
``dpcomp_core/algorithm/__init__.py`` emptied and ``query_nd_union.ndRangeUnion.slice`` returning a
tuple, the patches of ``dpbench_privelet_mwem.py``) and ``DPHIST_EKTELO`` / ``DPHIST_EKTELO_PYTHON`` (a
scratch copy of github:ektelo/ektelo and a Python with numpy, scipy, pandas, networkx, future and
Cython, prepared as ``ektelo_timer.py`` says).  Without them a peer's cases are information only and say
so.  A reference that does not finish within ``TIMEOUT`` seconds is stopped: its time is at least that,
and the case is judged against that lower bound (the note says so); one that fails (e.g. out of the
timer's memory cap) leaves the case unpaired.

Not covered: DAWA (exact) at 2^20 (an O(n^2) dynamic program on both sides); presets without a
counterpart (GS, the SORTaki, Kellaris and SReB-GCA presets: no reference code exists), and EFPA, P-HP,
SF and NF, whose DPBench code needs third-party extensions (``thirdparty/Acs12``, ``xiaokui``) that do
not build here and which ektelo does not have.
"""
from __future__ import annotations

import atexit
import json
import os
import select
import subprocess
import tempfile
import zlib
from pathlib import Path

import numpy as np

from _cases import run_seeded

HERE = Path(__file__).resolve().parent
SIZES = (4096, 32768, 2 ** 20)
#: seconds a reference run may take before it is stopped (its time is then at least this)
TIMEOUT = 30.0
#: seconds the timer may take to start, load the counts and build DPBench's workload (not timed)
PREPARE_TIMEOUT = 900.0
PRESETS = ("identity", "uniform", "Privelet", "H", "Hb", "AHP", "DPCube", "DAWA-approx", "DAWA", "GreedyH", "MWEM")
#: presets whose dphist run takes seconds at 2^20: one timed run each, no warm-up
SLOW = {"DAWA-approx", "DAWA", "GreedyH", "MWEM"}
#: DAWA's exact partition is an O(n^2) dynamic program (the two-core target of bench_segmentation):
#: at 2^20 it runs for hours on both sides, so it is compared at 4,096 and 32,768 only
SKIP = {("DAWA", 2 ** 20)}


class Reference:
    """A peer's timer process (``dpbench_timer.py`` or ``ektelo_timer.py`` in the peer's own Python):
    started on first use, restarted after a timeout."""

    def __init__(self, label: str, variable: str, timer: str, extra_env=None):
        self.label, self.variable, self.timer = label, variable, timer
        self.root = os.environ.get(variable)
        self.python = os.environ.get(f"{variable}_PYTHON")
        self.extra_env = extra_env or {}
        self.proc = None
        self.folder = tempfile.TemporaryDirectory(prefix="dphist-peers-")
        self._paths: dict[int, tuple[np.ndarray, str]] = {}   # id(counts) -> (counts, the file written of them)
        atexit.register(self.stop)

    @property
    def configured(self) -> bool:
        return bool(self.root and self.python and Path(self.root).is_dir() and Path(self.python).exists())

    def start(self):
        env = {**os.environ, "PYTHONPATH": self.root, "OPENBLAS_NUM_THREADS": "1",
               **{k: v.format(root=self.root) for k, v in self.extra_env.items()}}
        self.proc = subprocess.Popen([self.python, str(HERE / self.timer)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env)

    def stop(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def input_path(self, counts: np.ndarray) -> str:
        # keyed by size and content: two inputs of one size (a grid's scales) are different files.  The path of
        # an array already written is remembered by identity (the array kept alive with it), so the paired loop
        # does not checksum a copy of the counts before every reference run: at 2^20 bins that is 8 MB
        # allocated and freed between two timed runs of dphist, whose next fresh arrays then pay the pages
        # again (measured: uniform at 2^20 read 1.24x the reference with it)
        known = self._paths.get(id(counts))
        if known is not None and known[0] is counts:
            return known[1]
        path = Path(self.folder.name) / f"counts-{counts.size}-{zlib.crc32(np.ascontiguousarray(counts).tobytes())}.npy"
        if not path.exists():
            np.save(path, counts)
        self._paths[id(counts)] = (counts, str(path))
        return str(path)

    def seconds(self, algorithm: str, counts: np.ndarray, epsilon: float, seed: int) -> tuple[float | None, str]:
        """``(seconds, "")``, ``(TIMEOUT, note)`` when stopped, ``(None, note)`` when it failed."""
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        request = dict(algorithm=algorithm, input=self.input_path(counts), epsilon=epsilon, seed=seed)
        answer = self._ask({**request, "prepare": True}, PREPARE_TIMEOUT)   # start-up, input, workload
        if answer is None:
            return None, f"{self.label}'s timer did not load the input and workload within {PREPARE_TIMEOUT:g} s"
        if "error" not in answer:
            answer = self._ask(request, TIMEOUT)
            if answer is None:
                return TIMEOUT, f"{self.label} stopped after {TIMEOUT:g} s: its time is at least that"
        if "error" in answer:
            return None, f"{self.label} failed: {answer['error'][:120]}"
        return float(answer["seconds"]), ""

    def _ask(self, request: dict, timeout: float) -> dict | None:
        """The timer's answer to one request, or None (and the timer stopped) after ``timeout`` seconds."""
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            self.stop()
            return None
        return json.loads(line)


PEERS = {
    "DPBench": Reference("DPBench", "DPHIST_DPBENCH", "dpbench_timer.py"),
    # ektelo's data module reads both variables at import; any folder will do for EKTELO_DATA
    "ektelo": Reference("ektelo", "DPHIST_EKTELO", "ektelo_timer.py",
                        {"EKTELO_HOME": "{root}", "EKTELO_DATA": tempfile.gettempdir()}),
}


def _case(preset: str, n: int, peer: str = "DPBench") -> dict:
    from dphist import make_algorithm
    from dphist.datasets import load
    case: dict = {}
    done: dict = {}

    def setup():
        counts = load("synthetic", shape="zipf", n=n, scale=10 * n, seed=1).counts
        return make_algorithm(preset), counts, 1.0

    def reference_seconds(pipeline, counts, epsilon):
        reference = PEERS[peer]
        if not reference.configured:
            case["note"] = (f"{peer} code not configured: {reference.variable}, "
                            f"{reference.variable}_PYTHON")
            return None
        if "final" in done:          # stopped or failed once: not run again
            return done["final"]
        seconds, note = reference.seconds(preset, counts, epsilon, 1)
        if note:
            case["note"] = note
            done["final"] = seconds
        return seconds

    size = "2^20" if n == 2 ** 20 else f"{n:,}"
    case.update(name=f"{preset}, N={size}, power law, eps=1: dphist vs {peer}", setup=setup, run=run_seeded,
                reference_seconds=reference_seconds, factor=1.0,
                # sub-millisecond runs: best of 25 on both sides (a best of 3 flips with one page-faulting run)
                repeat=1 if preset in SLOW and n > 4096 else (25 if n <= 32_768 else 3),
                warmup=not (preset in SLOW and n > 4096))
    return case


CASES = [_case(preset, n, peer) for peer in PEERS for preset in PRESETS for n in SIZES
         if (preset, n) not in SKIP]
