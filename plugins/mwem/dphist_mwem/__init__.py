"""MWEM: Hardt, Ligett, McSherry, "A Simple and Practical Algorithm for Differentially Private Data
Release", NIPS 2012, with the DPBench defaults (Hay et al., SIGMOD 2016; ``mwemND.py``).

Modules, one idea each:

* :mod:`.weights`   - the multiplicative-weights update over range queries (numba, O(range) per update)
  and the MWEM loop, written once for both calibrations;
* :mod:`.finalizer` - the component ``mwem.mw``: the kernel primitives (noisy total, exponential
  mechanism, Laplace on the chosen range), and the reference code's calibration ``"dpbench"``
  (true total, NOT differentially private) as a vetted mechanism that says so;
* :mod:`.presets`   - the preset ``MWEM``.

Derivations and checks: ``notebooks/mwem.ipynb``; speed: ``benchmarks/bench_mwem.py``.
"""
