"""SReB_GCA: Chen, Zhou, Qiu, et al. A Histogram Publishing Method under Differential Privacy That
Involves Balancing Small-Bin Availability First. Algorithms 17(7):293, 2024.

**Reconstructed.**  Only the paper's outline survives (section titles, stated principles, the
datasets and results tables; no formula, no pseudocode): every formula here is derived from the
stated principles, and each choice is written down where it is made and in the provenance table
of ``notebooks/sreb_gca.ipynb``.

Modules, one idea each:

* :mod:`.relative_error` - the expected relative error of a group published as its mean plus
  Laplace noise (exact form and upper bound; reconstruction + noise error), a
  :mod:`dphist.segmentation` cost;
* :mod:`.ggs`            - GGS: the greedy scan, its lower bound LB, the early stop;
* :mod:`dphist_sreb_gca.partitioners`   - the components ``sreb_gca.ggs`` and ``sreb_gca.optimal``;
* :mod:`.presets`        - ``SReB_GCA`` and ``SReB_GCA-optimal`` (Algorithm 1).

The initializer is the core's ``laplace``, the sorter the core's ``noisy-count`` (ascending), the
finalizer the core's ``group-mean``.
"""
