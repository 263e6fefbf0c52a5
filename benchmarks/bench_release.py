"""Release mode's cost: exact samplers from OS randomness against seeded float noise (target 1.5 x research mode).

Paired cases: the reference is the same preset in research mode (``seed=1``),
the run is release mode (no seed); the target is ``factor`` x the reference.
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


CASES = [_case("identity", 1.5), _case("H", 1.5), _case("AHP", 1.5)]
