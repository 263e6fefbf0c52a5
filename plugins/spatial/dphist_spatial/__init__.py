"""Private spatial decompositions: Cormode, Procopiuc, Srivastava, Shen, Yu, ICDE 2012.

Modules, one idea each:

* :mod:`.tree`      - the data-independent tree of boxes over a grid (per-level partitions of the
  flattened cells, parent maps) and its constrained inference (two passes, level by level);
* :mod:`.budgets`   - uniform and geometric budgets across levels;
* :mod:`.finalizer` - the component ``spatial.tree`` (one ``laplace_partition`` per level);
* :mod:`.boxes`     - a tree of boxes grown level by level from cuts (the kd-tree's and the hybrid tree's);
* :mod:`.medians`   - the kd-tree's private medians: one exponential mechanism per box of a level, in the kernel;
* :mod:`.kdtree`    - the component ``spatial.kd`` (private medians, then counts per level, inference);
* :mod:`.presets`   - the presets ``QuadTree``, ``KDTree`` and ``HybridTree``.

Derivations and checks: ``notebooks/spatial.ipynb``.
"""
