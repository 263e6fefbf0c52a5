"""Uniform and adaptive grids for 2-D histograms (Qardaji, Yang, Li, ICDE 2013).

* ``grids.uniform`` (partitioner): square blocks of cells, about ``m x m`` of them with
  ``m = sqrt(N eps / c)`` (the paper's Guideline 1, ``c = 10``); preset ``UG`` measures every block
  with the core's ``group-mean``.
* ``grids.adaptive`` (partitioner) and ``grids.adaptive-inference`` (finalizer): a first level of
  ``m1 x m1`` blocks (``m1 = max(10, sqrt(N eps / c) / 4)``) measured with ``alpha`` of the budget,
  each block split again into ``m2 x m2`` by its noisy count (``m2 = sqrt(N' (1 - alpha) eps / c2)``,
  ``c2 = c / 2``), the second level measured with the rest, and the two levels reconciled by
  inverse-variance weighting (the paper's constrained inference); preset ``AG``.

``N``, the number of records, is not public in general: by default a small share ``total_ratio`` of
the budget buys a noisy total; ``public_total`` declares a total known from elsewhere (no budget).
``notebooks/grids.ipynb`` derives the grid sizes from the paper's error analysis and checks them.
"""
