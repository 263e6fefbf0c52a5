"""Record draws of release mode's exact discrete Laplace sampler on seeded words (2026-11-26, the sampler's
bit-by-bit loops), so that ``test_exact_noise.py`` checks that faster implementations consume the same bits
and return the same draws (the same algorithm, the same stream: releases of ``noise="exact"`` runs for a
seed stay bit-identical).  Re-running this script would record the current sampler against itself: keep
the committed fixture.  ``python tests/make_exact_draws_fixture.py``.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "fixtures" / "exact_draws.npz"

#: (t, s) scale fractions: epsilon 1 at sensitivity 1, small exact fractions, a dyadic one, the grid route's
#: large numerators (U drawn over many bits, Bernoulli digits of large denominators), and t = 2^31 +- 1 around
#: the chunked comparison's limit
SCALES = [(1, 1), (20, 17), (10, 1), (21, 1), (3, 64), (4097, 4096), (123456789, 1024), ((1 << 31) - 1, 7),
          ((1 << 31) + 1, 3), ((1 << 40) + 3, 1 << 28)]
SIZE = 3000


def cases():
    """name -> (t, s, seed, size); the sizes 1 and 7 make the buffer's refills land on other draws."""
    out = {}
    for i, (t, s) in enumerate(SCALES):
        for size in (SIZE, 7, 1):
            out[f"t{t}_s{s}_n{size}"] = (t, s, 100 + i, size)
    return out


def draws(t, s, seed, size):
    """Three calls on one words source (the second and third start where the first's buffer left the
    generator), so a change in how many words a call requests shows too."""
    from dphist.kernel import exact
    src = exact.GeneratorWords(np.random.default_rng(seed))
    return np.concatenate([exact.discrete_laplace(t, s, size, src) for _ in range(3)])


if __name__ == "__main__":
    np.savez_compressed(OUT, **{name: draws(*args) for name, args in cases().items()})
    print(f"wrote {OUT}")
