"""Record the releases of every SORTaki preset and partitioner on a few histograms and seeds.

Run once BEFORE a change to the partitioning code (``python plugins/sortaki/tests/make_release_fixture.py``);
``test_release_fixture.py`` then checks that the releases stay bit-identical.  The fixture written
on 2026-11-23 recorded the plugin's own DP code, before it was ported onto ``dphist.segmentation``
(re-recorded on main 111ebba, still with the old DP code, after main changed the G presets' gamma_in).
``sDAWA`` is left out: its partitioner is the dawa plugin's, pinned by ``plugins/dawa/tests``.
The thresholded WAF presets (``tGWF``, ``stGWF``, ``tDWF``, ``stDWF``) changed on purpose when WAF and
UEE began to read H~'s noise model (issue 14 item 6); ``test_release_fixture.py`` checks them against
this record with the old plain-Laplace model (do not re-record them).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from dphist import Pipeline, make_algorithm, release_records
from dphist_sortaki import FAMILY

OUT = Path(__file__).resolve().parent / "fixtures" / "releases.npz"


def _custom_ef(starts, ends, prefix, prefix_sq, eps_in, eps_f):
    """A user formula that is not SSE + size penalty (the generic, vectorised path)."""
    size = (ends - starts).astype(float)
    mean = (prefix[ends] - prefix[starts]) / size
    return np.abs(mean) * 0.1 + (prefix_sq[ends] - prefix_sq[starts]) / size + 4.0 / (size * eps_f ** 2)


def algorithms() -> dict[str, Pipeline]:
    out = {name: make_algorithm(name) for name in FAMILY}
    for name in FAMILY:
        if name[len(name) - len(name.lstrip("st"))] == "D":
            out[name + "-exact"] = make_algorithm(name, dp_variant="exact")
    out.update({"DPC": make_algorithm("DPC"), "sDPC": make_algorithm("sDPC"),
                "DPC-middle": make_algorithm("DPC", split="middle"),
                "sDPC-v-optimal": make_algorithm("sDPC", split="v-optimal"),
                "DPC-v-optimal-noise": make_algorithm("DPC", split="v-optimal", threshold="noise")})
    for ef in ("ahp", "uee"):
        for variant in ("exact", "power-of-two"):
            out[f"sortaki.dp-{ef}-{variant}-unsorted"] = Pipeline(
                "laplace", None, ("sortaki.dp", {"ef": ef, "variant": variant}), "sortaki.waf", (0.6, 0.0, 0.4))
    for variant in ("exact", "power-of-two"):
        out[f"sortaki.dp-custom-{variant}"] = Pipeline(
            "laplace", "noisy-count", ("sortaki.dp", {"ef": _custom_ef, "variant": variant}), "group-mean",
            (0.7, 0.0, 0.3))
    out["sortaki.greedy-custom"] = Pipeline("laplace", "noisy-count", ("sortaki.greedy", {"ef": _custom_ef}),
                                            "group-mean", (0.7, 0.0, 0.3))
    return out


def array_inputs():
    """Noisy-looking vectors (with ties and zero runs) and group bounds that are not singletons."""
    rng = np.random.default_rng(11)
    for i in range(4):
        n = int(rng.integers(40, 120))
        values = np.round(rng.laplace(0, 20, n) + rng.integers(0, 3, n) * 30)
        values[rng.random(n) < 0.3] = 0.0
        sizes = rng.integers(1, 4, int(rng.integers(15, 30)))
        bounds = np.r_[0, np.cumsum(sizes)]
        values = values[: bounds[-1]] if bounds[-1] <= n else np.resize(values, bounds[-1])
        yield i, values, bounds


def record_arrays() -> dict[str, np.ndarray]:
    """Array-level outputs of GP and DPP on grouped units (bounds that are not singletons)."""
    from dphist.intervals import centred_prefix_sums
    from dphist_sortaki.segmentation import dp_cuts, greedy_cuts
    arrays = {}
    for i, values, bounds in array_inputs():
        for order in ("raw", "sorted"):
            v = np.sort(values)[::-1] if order == "sorted" else values
            p, p2 = centred_prefix_sums(v)
            for ef in ("ahp", "uee", "ee", _custom_ef):
                efname = ef if isinstance(ef, str) else "custom"
                for variant in ("exact", "power-of-two"):
                    cuts, cost = dp_cuts(ef, p, p2, bounds, 0.3, 0.7, variant, return_cost=True)
                    arrays[f"array|dp|{i}|{order}|{efname}|{variant}|cuts"] = cuts
                    arrays[f"array|dp|{i}|{order}|{efname}|{variant}|cost"] = np.array(cost)
                arrays[f"array|greedy|{i}|{order}|{efname}|cuts"] = greedy_cuts(ef, p, p2, bounds, 0.3, 0.7)
    return arrays


if __name__ == "__main__":
    release_records.write(OUT, algorithms(), record_arrays())
