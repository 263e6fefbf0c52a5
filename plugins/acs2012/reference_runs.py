"""How ``reference_errors.csv`` was made: the DPBench code's EFPA and P-HP on the notebook's inputs.

Not part of the package, not run by the tests (it needs the reference code and a second Python).
Steps (all in a scratch folder, nothing of the reference enters this repository):

1. ``git archive`` of github:dpcomp-org/dpcomp_core (HEAD) into ``SCRATCH``;
2. a venv there with ``future``, ``numpy``, ``scipy`` (the reference imports ``builtins``/``past``);
3. the P-HP C helper compiled by hand instead of its Cython ``setup.py``:
   ``gcc -O2 -shared -fPIC -I<Python include> lib/cutils/clustering.c lib/cutils_pymod.c -o lib/cutils<ext>``
   in ``dpcomp_core/algorithm/thirdparty/Acs12``;
4. the runner below (written by this script into SCRATCH) registers empty package objects for
   ``dpcomp_core.algorithm`` and ``dpcomp_core.algorithm.thirdparty`` so that their ``__init__``
   files (which import every DPBench algorithm and its compiled code) are not run -- the only
   local patch; the reference's files are unchanged.  It calls EFPA and P-HP exactly as
   DPBench's ``efpa_engine`` / ``php_engine`` do (``EFPA(x, 1, eps, prng)``;
   ``Clustering(eps/2, eps/2, 1, int(log2 n), 2000).run(x, prng)``), with
   ``prng = numpy.random.RandomState(seed)`` and Python's global ``random.seed(seed)`` (the
   reference's exponential mechanism draws from it).

Usage: ``python plugins/acs2012/reference_runs.py SCRATCH`` (with the worktree's venv).
"""
from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent

from dphist_acs2012.comparison import REFERENCE_CSV, EPSILONS, SEEDS, inputs, scores  # noqa: E402

RUNNER = '''
import sys, types, time, math, random
import numpy as np
SCRATCH = sys.argv[1]
sys.path.insert(0, SCRATCH)
import dpcomp_core
for name in ("algorithm", "algorithm.thirdparty"):
    pkg = types.ModuleType("dpcomp_core." + name)
    pkg.__path__ = [SCRATCH + "/dpcomp_core/" + name.replace(".", "/")]
    sys.modules["dpcomp_core." + name] = pkg
from dpcomp_core.algorithm.thirdparty.Acs12.lib import EFPA, Clustering

def efpa(x, eps, seed):
    random.seed(seed)
    return np.array(EFPA.EFPA(x, 1, eps, np.random.RandomState(seed)))

def php(x, eps, seed):
    random.seed(seed)
    return np.array(Clustering.Clustering(eps * 0.5, eps * 0.5, 1, int(math.log(len(x), 2)), 2000)
                    .run(x, np.random.RandomState(seed)))

alg, src, dst, eps, seeds = sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]), int(sys.argv[6])
x = [int(v) for v in np.load(src)]
outs, times = [], []
for s in range(seeds):
    t = time.perf_counter()
    outs.append({"efpa": efpa, "php": php}[alg](x, eps, s))
    times.append(time.perf_counter() - t)
np.savez(dst, out=np.array(outs), times=np.array(times))
'''


def main(scratch: str) -> None:
    scratch = Path(scratch)
    # the folder of DPBench's 1-D sources: DPHIST_SHARED, else `shared` beside the repository (tests/conftest.py)
    shared = Path(os.environ.get("DPHIST_SHARED") or HERE.parents[1] / "shared")
    (scratch / "acs2012_runner.py").write_text(RUNNER)
    python = scratch / "venv" / "bin" / "python"
    rows = []
    for name, x in inputs(shared / "datasets" / "peer-dpbench" / "1D", require_dpbench=True).items():
        src = scratch / "acs2012_input.npy"
        np.save(src, x)
        for alg in ("efpa", "php"):
            for eps in EPSILONS:
                dst = scratch / "acs2012_output.npz"
                subprocess.run([str(python), str(scratch / "acs2012_runner.py"), str(scratch), alg, str(src),
                                str(dst), repr(eps), str(SEEDS)], check=True, capture_output=True)
                out = np.load(dst)
                for seed, (est, sec) in enumerate(zip(out["out"], out["times"])):
                    rows.append({"data": name, "algorithm": alg.upper(), "epsilon": eps, "seed": seed,
                                 **{k: f"{v:.6g}" for k, v in scores(x, est).items()}, "seconds": f"{sec:.4g}"})
                print(name, alg, eps, np.mean([float(r["bin_mse"]) for r in rows[-SEEDS:]]), flush=True)
    with open(REFERENCE_CSV, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


if __name__ == "__main__":
    main(sys.argv[1])
