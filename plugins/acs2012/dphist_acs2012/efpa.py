"""EFPA, the Enhanced Fourier Perturbation Algorithm (Acs, Castelluccia, Chen, ICDM 2012, Section IV).

EFPA keeps the ``K`` lowest-frequency Fourier coefficients of the histogram, chosen by the
exponential mechanism, perturbs them with Laplace noise and inverts the transform.

**The basis** (why the reference code is wrong, and what is done here).  Let ``R`` be the *orthonormal* real DFT of ``x`` (length ``n``): the DC term ``Re z_0``, then for
every frequency ``f`` strictly between 0 and ``n/2`` the pair ``sqrt(2) Re z_f, sqrt(2) Im z_f``,
and for even ``n`` the Nyquist term ``Re z_{n/2}``, where ``z = rfft(x) / sqrt(n)``.  ``R`` is an
orthogonal ``n x n`` matrix (Parseval: ``||R x||_2 = ||x||_2``), so adding or removing one
record, ``x' = x +- e_i``, moves the whole coefficient vector by exactly ``||R e_i||_2 = 1``.

Keeping ``K`` complex coefficients keeps ``kept(K) = min(2K - 1, n)`` real components.

* **Noise (eps_2).**  The kept components move by at most 1 in L2, so by at most
  ``sqrt(kept)`` in L1 (Cauchy-Schwarz): Laplace of scale ``sqrt(kept) / eps_2`` on each kept
  real component (the real and imaginary parts of each coefficient, independently) is
  eps_2-DP.  This is the paper's calibration (its Theorem on EFPA: L1 <= sqrt(k) L2).  A
  tighter bound holds entry by entry: ``|R_{j,i}| <= sqrt(2/n)`` for a component of a pair and
  ``1/sqrt(n)`` for DC and Nyquist, and ``|cos| + |sin| <= sqrt(2)`` within a pair, so the
  kept components move by at most ``kept / sqrt(n)`` in L1 -- never more than ``sqrt(kept)``
  because ``kept <= n``.  ``calibration="entrywise"`` uses it (dphist's option, not in the
  paper); ``"parseval"`` (default) is the paper's.
* **Selection (eps_1).**  The score of ``K`` is minus the paper's error bound,
  ``-(sqrt(T(K)) + sqrt(2 kept(K)) lambda(K))`` where ``T(K) = sum_{j >= kept(K)} (R x)_j^2`` is the
  energy of the dropped components (the reconstruction error, by Parseval) and
  ``sqrt(2 kept) lambda`` the L2 norm of the noise (each kept component has variance
  ``2 lambda^2``, ``lambda = bound(kept) / eps_2``).  The second term is public;
  ``sqrt(T(K))`` is the norm of a projection of ``R x``, which moves by at most
  ``||R e_i|| = 1``: score sensitivity 1, and the kernel's exponential primitive draws ``K``
  with probability proportional to ``exp(eps_1 score / 2)`` (eps_1-DP).
* **Reconstruction** (``irfft`` of the noisy kept coefficients, zeros elsewhere) is
  post-processing.  Total: eps_1 + eps_2 = eps (sequential composition).

The DPBench code (``dpcomp_core/algorithm/thirdparty/Acs12/lib/EFPA.py``, by the paper's first
author; read, not copied) computes the same score on the *unnormalised* ``rfft`` -- whose
energies are ``n`` times the orthonormal ones -- still with sensitivity 1, and adds Laplace of
scale ``sqrt(kept) / eps_2`` to the *magnitudes* of the unnormalised coefficients, releasing their
phases untouched.  Measured against what each step needs (notebook Section 3): the ``K`` kept
magnitudes move by up to ``K`` in L1 (all at once on the empty histogram) while the noise scale is
``sqrt(2K - 1)``, too small by ``K / sqrt(2K - 1)`` (3.6x at 25 coefficients, 5.0x at 50); in
orthonormal units the noise is ``sqrt(2/n)`` times the paper's ``sqrt(kept)/eps_2``; the score's
true sensitivity is ``sqrt(n)`` (declared 1); and the exact phases carry information on their own.  ``calibration="dpbench"`` reproduces it for comparison with published
numbers: **not differentially private**, ``differentially_private = False`` as ``dawa.l1``'s
``"dpbench"``; release mode refuses it.  ``notebooks/acs2012.ipynb`` measures the
under-calibration and the price of the correction; the auditor catches it
(``plugins/acs2012/tests/test_acs2012.py``).  The core's broken twin
``dphist.audit.twins.CoarseEFPAFinalizer`` is a different, synthetic fault (a correct noise
on the coefficients, a selection whose declared sensitivity is 30x too small) kept in the core
so the auditor's own tests do not depend on this plugin.

Both EFPA draws come from the kernel (the exponential primitive and ``noise.laplace_mechanism``
inside a vetted mechanism), so a seed reproduces a run; the reference draws the selection from
Python's global ``random`` module.
"""
from __future__ import annotations

import math

import numpy as np

from dphist import Finalizer, InvalidParameter, Partition, VettedMechanism
from dphist.components import ReferenceCalibration
from dphist.params import UNIT_SHARE, Options
from dphist.stated_error import StatedError

CITATION = ("Acs, Castelluccia, Chen, Differentially private histogram publishing through lossy "
            "compression, ICDM 2012, Section IV (EFPA)")
CALIBRATIONS = ("parseval", "entrywise", "dpbench")


# ------------------------------------------------------------------ the orthonormal real DFT
def orthonormal_components(x) -> np.ndarray:
    """``R x``: the orthonormal real DFT of ``x`` ordered by frequency (DC, Re/Im pairs, Nyquist)."""
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    z = np.fft.rfft(x, norm="ortho")
    out = np.empty(n)
    out[0] = z[0].real
    pairs = (n - 1) // 2                      # frequencies strictly between 0 and n/2
    out[1:1 + 2 * pairs:2] = math.sqrt(2.0) * z[1:1 + pairs].real
    out[2:2 + 2 * pairs:2] = math.sqrt(2.0) * z[1:1 + pairs].imag
    if n % 2 == 0 and n > 1:
        out[n - 1] = z[n // 2].real
    return out


def from_components(parts, n: int) -> np.ndarray:
    """Inverse of :func:`orthonormal_components` for the first ``parts.size`` components (the rest 0)."""
    parts = np.asarray(parts, dtype=np.float64)
    kept = parts.size
    z = np.zeros(n // 2 + 1, dtype=complex)
    z[0] = parts[0]
    pairs = min((kept - 1) // 2, (n - 1) // 2)
    z.real[1:1 + pairs] = parts[1:1 + 2 * pairs:2] / math.sqrt(2.0)
    z.imag[1:1 + pairs] = parts[2:2 + 2 * pairs:2] / math.sqrt(2.0)
    if kept == n and n % 2 == 0 and n > 1:
        z[n // 2] = parts[n - 1]
    return np.fft.irfft(z, n, norm="ortho")


def kept_components(n: int) -> np.ndarray:
    """``kept(K) = min(2K - 1, n)`` for ``K = 1 .. n//2 + 1`` complex coefficients."""
    K = np.arange(1, n // 2 + 2)
    return np.minimum(2 * K - 1, n)


def noise_bound(kept, n: int, calibration: str) -> np.ndarray:
    """L1 sensitivity of the first ``kept`` orthonormal components (module docstring)."""
    kept = np.asarray(kept, dtype=np.float64)
    if calibration == "entrywise":
        return kept / math.sqrt(n)
    return np.sqrt(kept)


def _pair_weights(n: int) -> np.ndarray:
    """Real components per complex coefficient: 1 for DC (and Nyquist when ``n`` is even), else 2."""
    w = np.full(n // 2 + 1, 2.0)
    w[0] = 1.0
    if n % 2 == 0:
        w[-1] = 1.0
    return w


def efpa_scores(x, eps_2: float, calibration: str) -> np.ndarray:
    """Score of every ``K`` (higher is better): ``-(sqrt(T(K)) + sqrt(2 kept) bound(kept) / eps_2)``.

    ``T(K)`` is the energy of the dropped frequencies ``K .. n/2`` (each pair counted twice, as its two
    orthonormal components).  Sensitivity 1 in ``x`` (only ``T`` depends on it; module docstring)."""
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    z = np.fft.rfft(x, norm="ortho")
    energy = _pair_weights(n) * (z.real * z.real + z.imag * z.imag)
    tail = np.cumsum(energy[::-1])[::-1]                 # tail[f] = energy of frequencies f .. n/2
    dropped = np.sqrt(np.maximum(np.append(tail[1:], 0.0), 0.0))   # K = f + 1 keeps 0 .. f
    kept = kept_components(n)
    return -(dropped + np.sqrt(2.0 * kept) * noise_bound(kept, n, calibration) / eps_2)


def first_components(x, kept: int) -> np.ndarray:
    """``(R x)[:kept]`` from the half spectrum (what :func:`orthonormal_components` gives, truncated)."""
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    z = np.fft.rfft(x, norm="ortho")
    pairs = min((kept - 1) // 2, (n - 1) // 2)
    out = np.empty(kept)
    out[0] = z[0].real
    out[1:1 + 2 * pairs:2] = math.sqrt(2.0) * z[1:1 + pairs].real
    out[2:2 + 2 * pairs:2] = math.sqrt(2.0) * z[1:1 + pairs].imag
    if kept == n and n % 2 == 0 and n > 1:
        out[n - 1] = z[n // 2].real
    return out


class FourierCoefficients(VettedMechanism):
    """The first ``kept`` orthonormal real DFT components plus Laplace(``sensitivity`` / eps) each.

    ``sensitivity`` is an L1 bound on how far one record moves those components (module
    docstring): ``sqrt(kept)`` (Parseval + Cauchy-Schwarz, the paper's) or ``kept / sqrt(n)``
    (entry by entry)."""

    name = "acs2012.fourier-coefficients"
    proof = ("eps-DP Laplace mechanism (Acs, Castelluccia, Chen, ICDM 2012, Sec. IV; dphist_acs2012.efpa "
             "docstring; notebooks/acs2012.ipynb): the orthonormal real DFT R is orthogonal, so one record "
             "moves R x by exactly 1 in L2; the first k components move by at most sqrt(k) in L1 "
             "(Cauchy-Schwarz), and by at most k/sqrt(n) (|R_ji| <= sqrt(2/n), |cos|+|sin| <= sqrt 2 in a "
             "pair). Laplace(bound/eps) on each real and imaginary part.")

    def __init__(self, kept: int = 1, calibration: str = "parseval", n: int = 1):
        if calibration not in ("parseval", "entrywise"):
            raise InvalidParameter(f"{self.name}: calibration must be 'parseval' or 'entrywise', got {calibration!r}")
        self.kept, self.n = int(kept), int(n)
        self.sensitivity = float(noise_bound(self.kept, self.n, calibration))

    def check(self, n, **arguments):
        if arguments:
            raise InvalidParameter(f"{self.name} takes no arguments, got {sorted(arguments)}")
        if n != self.n:   # the entrywise bound depends on n: a smaller one would under-noise
            raise InvalidParameter(f"{self.name}: built for {self.n} bins, the histogram has {n}")
        if not 1 <= self.kept <= n:
            raise InvalidParameter(f"{self.name}: kept must be in 1..{n}, got {self.kept}")
        return {}

    def answers(self, n, **_):
        return self.kept

    def run(self, counts, epsilon, noise):
        parts = first_components(counts, self.kept)
        return noise.laplace_mechanism(parts, self.sensitivity, epsilon, support=self.kept)


def dpbench_scores(x, eps_2: float) -> np.ndarray:
    """The DPBench code's score of every ``K``: ``-(sqrt(T_u(K)) + sqrt(2) kept(K) / eps_2)`` where ``T_u`` is
    the dropped energy of the *unnormalised* rfft (``n`` times the orthonormal one; the energies sum
    to ``n ||x||^2``).  Its true sensitivity is about ``sqrt(n)``, not the 1 the reference declares."""
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    c = np.fft.rfft(x)
    energy = _pair_weights(n) * (c.real * c.real + c.imag * c.imag)
    dropped = np.append(np.cumsum(energy[::-1])[::-1][1:], 0.0)
    return -(np.sqrt(np.maximum(dropped, 0.0)) + math.sqrt(2.0) * kept_components(n) / eps_2)


class DPBenchEFPA(VettedMechanism):
    """The DPBench code's EFPA (``calibration="dpbench"``).  NOT differentially private.

    Unnormalised ``rfft``; the score ``-(sqrt(n T(K)) + sqrt(2) kept / eps_2)`` with sensitivity 1;
    Laplace(``sqrt(kept) / eps_2``) on the magnitudes of the kept coefficients, phases exact.
    Returns the estimate (length ``n``)."""

    name = "acs2012.efpa-dpbench"
    sensitivity = 1.0   #: the reference's declared sensitivity (its score and noise both assume 1)
    differentially_private = False
    proof = ("NOT differentially private: the DPBench code's EFPA (Acs et al. ICDM 2012) - score on the "
             "unnormalised rfft with sensitivity 1 (true: sqrt(n)), Laplace(sqrt(k)/eps_2) on magnitudes of "
             "unnormalised coefficients (true L1 sensitivity of the kept magnitudes: up to k), phases "
             "released exactly. For reproducing published numbers only; release mode refuses it.")

    def __init__(self, ratio: float = 0.5):
        self.ratio = float(ratio)

    def answers(self, n, **_):
        return n

    def run(self, counts, epsilon, noise):
        x = np.asarray(counts, dtype=np.float64)
        n = x.size
        eps_1, eps_2 = self.ratio * epsilon, (1.0 - self.ratio) * epsilon
        c = np.fft.rfft(x)                                         # unnormalised, as scipy.fftpack's
        m = c.size
        kept = kept_components(n)                                  # 1, 3, 5, ..., n
        K = int(noise.exponential_mechanism(dpbench_scores(x, eps_2), 1.0, eps_1)) + 1
        magnitude = np.abs(c[:K])
        noisy = noise.laplace_mechanism(magnitude, math.sqrt(kept[K - 1]), eps_2)
        out = np.zeros(m, dtype=complex)
        out[:K] = noisy * np.exp(1j * np.angle(c[:K]))              # rect(magnitude + noise, phase)
        return np.fft.irfft(out, n)


class EFPAFinalizer(ReferenceCalibration, Finalizer):
    """``acs2012.efpa``: EFPA on the whole histogram, in domain order (module docstring).

    Spends its whole share: eps_1 through ``ctx.data.exponential`` (score sensitivity 1), eps_2
    through the vetted :class:`FourierCoefficients`; ``"dpbench"`` spends it in one vetted call.
    Ignores the incoming groups (EFPA compresses the whole vector).

    Parameters
    ----------
    ratio : float
        Share of the finalizer's budget for choosing ``K`` (eps_1); the rest (eps_2) perturbs the
        kept coefficients.  0.5, as in the paper and the DPBench code.
    calibration : str
        ``"parseval"`` (default; the paper's noise ``sqrt(kept)/eps_2`` per kept real component,
        in the orthonormal basis), ``"entrywise"`` (the tighter bound ``kept/sqrt(n)``, dphist's
        option), or ``"dpbench"`` (the reference code's, **not differentially private**: research
        mode only, the release carries a warning).
    """

    name = "acs2012.efpa"
    citation = CITATION
    #: opt-in to the privacy proofs of vetted mechanisms (the kernel cannot check them)
    vetted_mechanisms = ("acs2012.fourier-coefficients", "acs2012.efpa-dpbench")
    spends = True
    requires_domain_order = True
    param_constraints = {"ratio": UNIT_SHARE, "calibration": Options(*CALIBRATIONS)}

    def __init__(self, ratio: float = 0.5, calibration: str = "parseval"):
        self.ratio = ratio
        self.calibration = calibration

    def finalize(self, bins, ctx) -> np.ndarray:
        ratio = float(self.ratio)     # declared: in (0, 1)
        if ctx.data is None or ctx.budget <= 0:
            raise InvalidParameter("acs2012.efpa spends budget: give the finalizer a share gamma_f > 0")
        n = ctx.n
        if self.calibration == "dpbench":
            return np.asarray(ctx.data.custom(DPBenchEFPA(ratio), ctx.budget), dtype=float)
        eps_1 = ratio * ctx.budget
        eps_2 = ctx.budget - eps_1
        calibration = self.calibration
        K = ctx.data.exponential(lambda x: efpa_scores(x, eps_2, calibration), n // 2 + 1, 1.0, eps_1) + 1
        kept = min(2 * K - 1, n)                   # kept_components(n)[K - 1]
        ctx.notes["efpa.coefficients"] = K          # public: the output of the eps_1-DP selection
        noisy = ctx.data.custom(FourierCoefficients(kept, calibration, n), eps_2)
        return from_components(noisy, n)           # post-processing

    def stated_error(self, bins, ctx):
        """The noise of the kept coefficients, exactly, given the chosen ``K`` (:class:`FourierStatedError`);
        the dropped frequencies named as the unknown bias.  Nothing for the non-private ``"dpbench"``."""
        from dphist.stated_error import Unstated
        if self.calibration == "dpbench":
            return Unstated("the 'dpbench' calibration is not differentially private and perturbs magnitudes "
                            "with exact phases: its error has no exact noise part")
        eps_2 = ctx.eps_f - float(self.ratio) * ctx.eps_f
        kept = min(2 * int(ctx.notes["efpa.coefficients"]) - 1, ctx.n)
        return FourierStatedError(Partition.singletons(ctx.n), kept, ctx.noise_law,
                                  float(noise_bound(kept, ctx.n, self.calibration)), eps_2)


class FourierStatedError(StatedError):
    """EFPA's statement given ``K``: the release is ``R_k^T (R_k x + Z)`` with ``R_k`` the first ``kept``
    rows of the orthonormal real DFT and ``Z`` independent noise of one law per kept component, so the
    error of ``w . x^`` is ``(R_k w) . Z - w . (I - R_k^T R_k) x``: the first term has variance
    ``sigma^2 ||R_k w||^2`` (from the half spectrum of ``w``), exactly; the second, the dropped
    frequencies of the true histogram, is the unknown bias.  Per bin, ``||R_k e_i||^2 = kept / n``
    (DC and Nyquist contribute ``1/n``, every Re/Im pair ``2/n (cos^2 + sin^2)``)."""

    kind = "noise-only"
    conditional = True
    given = "the number K of kept Fourier coefficients (the release's notes, 'efpa.coefficients')"
    bias = ("unknown: the dropped Fourier components (frequencies K and above) of the true histogram, "
            "which are private")

    def __init__(self, partition, kept: int, law, sensitivity: float, epsilon: float):
        super().__init__(partition)
        self.kept, self.law, self.law_name = int(kept), law, law.name
        self.call = (float(sensitivity), float(epsilon), False, self.kept)   # FourierCoefficients' route
        self.unit_variance = law.variance(*self.call)

    def kept_energy(self, U) -> np.ndarray:
        """``||R_k u||^2`` for every row ``u`` of ``U``."""
        U = np.atleast_2d(np.asarray(U, dtype=float))
        n = U.shape[1]
        z = np.fft.rfft(U, axis=1, norm="ortho")
        power = z.real * z.real + z.imag * z.imag
        pairs = min((self.kept - 1) // 2, (n - 1) // 2)
        out = power[:, 0] + 2.0 * power[:, 1:1 + pairs].sum(axis=1)
        if self.kept == n and n % 2 == 0 and n > 1:
            out = out + power[:, n // 2]
        return out

    def group_variance(self, U):
        return self.unit_variance * self.kept_energy(U)

    def group_diagonal(self):
        return np.full(self.n_columns, self.unit_variance * self.kept / self.n_columns)

    def single_half_widths(self, U, level):
        if self.kept != 1:             # a query's error is a sum of several kept components
            return None
        U = np.atleast_2d(np.asarray(U, dtype=float))
        return np.abs(U.sum(axis=1)) / math.sqrt(U.shape[1]) * self.law.half_width(*self.call[:2], level, *self.call[2:])
