"""The compiled loops of research mode's Laplace draws (:class:`dphist.kernel.noise.SeededLaplace`).

numpy's ``Generator.laplace(0, b)`` turns each uniform ``U = next_double()`` into
``0 - b log(2 - U - U)`` when ``U >= 0.5`` and ``0 + b log(U + U)`` otherwise (``U = 0`` is
rejected and drawn again), one value at a time, a branch taken at random half the time and the
C library's ``log`` per value.  These loops apply the same expressions, in the same order of
operations and with the same ``log`` (numba calls the C library's ``log``; without fast-math and
without a vector math library it neither reorders nor vectorises them), to the uniforms that
``Generator.random`` draws from the same stream (one ``next_double`` per value, as ``laplace``
without a rejection), with the branch made a selection: the same bits, about two thirds of the
time.  :mod:`dphist.kernel.noise` checks that claim on this machine before it uses them, counts
the uniforms equal to 0 (a rejection would shift the stream: the caller then draws again with
numpy), and adds the values in the same pass (IEEE addition commutes exactly).

Imported on first use (numba stays out of ``import dphist``).
"""
import math

from numba import njit


@njit(cache=True, inline="always")
def _draw(U, scale):
    # numpy's random_laplace at loc 0, its branch as a selection
    upper = U >= 0.5
    log = scale * math.log((2.0 - U) - U if upper else U + U)
    return (0.0 - log) if upper else (0.0 + log)


@njit(cache=True, nogil=True)
def laplace_into(u, scale, out):
    """``out[i]`` = the Laplace draw of uniform ``u[i]`` at ``scale`` (``out`` may be ``u``); returns the
    number of uniforms equal to 0 (each would have been rejected and redrawn by numpy)."""
    zeros = 0
    for i in range(u.size):
        zeros += u[i] == 0.0
        out[i] = _draw(u[i], scale)
    return zeros


@njit(cache=True, nogil=True)
def laplace_add_into(u, scale, values, out):
    """``out[i]`` = the Laplace draw of ``u[i]`` plus ``values[i]`` (int64 or float64; ``out`` may be ``u``),
    the floats of numpy's ``noise += values``; returns the number of uniforms equal to 0."""
    zeros = 0
    for i in range(u.size):
        zeros += u[i] == 0.0
        out[i] = _draw(u[i], scale) + values[i]
    return zeros
