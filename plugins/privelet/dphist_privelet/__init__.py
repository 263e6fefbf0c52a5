"""Privelet: Xiao, Wang, Gehrke, "Differential Privacy via Wavelet Transforms", ICDE 2010.

Privelet with the Haar wavelet transform (HWT) for one ordinal attribute: the histogram's Haar
coefficients get Laplace noise whose scale is inversely proportional to each coefficient's weight,
and the noisy histogram is their exact inverse transform.

Modules, one idea each:

* :mod:`.haar`      - the weighted Haar transform, its exact inverse (both O(N) numpy) and the
  exact noise variance of a range query under Privelet (closed form, O(N));
* :mod:`.finalizer` - the vetted mechanism that measures the weighted coefficients in the kernel,
  and the component ``privelet.haar``;
* :mod:`.presets`   - the preset ``Privelet``.

Derivations and checks: ``notebooks/privelet.ipynb``; speed: ``benchmarks/bench_privelet.py``.
"""
