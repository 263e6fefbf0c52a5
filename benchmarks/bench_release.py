"""Release mode's cost: exact samplers from OS randomness against seeded float noise (target 1.5 x research mode).

Paired cases: the reference is the same preset in research mode (``seed=1``),
the run is release mode (no seed); the target is ``factor`` x the reference.  And the exact discrete
Laplace sampler per draw at five scales: release mode's split sampler against CKS Algorithm 2 (research
mode's exact noise), on the same kind of words, both on one thread; and release mode's split sampler on the
project's threads (``DPHIST_THREADS``, else every core) against one thread.
"""
import numpy as np

import dphist

N_BIG = 2 ** 20


def _setup(preset):
    return lambda: (dphist.make_algorithm(preset), np.random.default_rng(0).integers(0, 1000, N_BIG))


def _case(preset, factor):
    return dict(name=f"{preset} release mode vs research mode, N = 2^20 (target = {factor} x research)",
                factor=factor, setup=_setup(preset), repeat=5,
                reference=lambda p, x: p.run(x, 1.0, seed=1),
                run=lambda p, x: p.run(x, 1.0))


#: scales of the per-draw cases: epsilon 1 at sensitivity 1, 3, H's levels at 2^20 bins (eps / 21 as a float:
#: t / s = 5,377 / 256), 100, 10^4
SCALES = {"1": 1.0, "3": 3.0, "21 (H's levels)": 1 / (1.0 / 21), "100": 100.0, "10^4": 1e4}


def _draws(scale, method, threads=1):
    from dphist.kernel import exact
    t, s = exact.dyadic_scale_at_least(scale)
    source = exact.SystemRandomWords()
    return lambda: exact.discrete_laplace(t, s, N_BIG, source, method=method, threads=threads)


def _draw_case(label, scale):
    return dict(name=f"exact discrete Laplace at scale {label}, 2^20 draws from OS words: release mode's split "
                     f"sampler vs CKS Algorithm 2 (target = 1.0 x CKS)",
                factor=1.0, setup=lambda: (), repeat=5,
                reference=lambda: _draws(scale, "cks")(), run=lambda: _draws(scale, "split")())


def _threads_case(label, scale):
    return dict(name=f"exact discrete Laplace at scale {label}, 2^20 draws from OS words: release mode's split "
                     f"sampler on the project's threads vs one thread (target = 0.75 x one thread)",
                factor=0.75, setup=lambda: (), repeat=5,
                reference=lambda: _draws(scale, "split", 1)(), run=lambda: _draws(scale, "split", None)())


CASES = ([_case("identity", 1.5), _case("H", 1.5), _case("AHP", 1.5)]
         + [_draw_case(label, scale) for label, scale in SCALES.items()]
         + [_threads_case("21 (H's levels)", SCALES["21 (H's levels)"])])
