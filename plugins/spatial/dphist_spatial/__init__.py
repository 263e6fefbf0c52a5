"""Private spatial decompositions: Cormode, Procopiuc, Srivastava, Shen, Yu, ICDE 2012.

Modules, one idea each:

* :mod:`.tree`      - the data-independent tree of boxes over a grid (per-level partitions of the
  flattened cells, parent maps) and its constrained inference (two passes, level by level);
* :mod:`.budgets`   - uniform and geometric budgets across levels;
* :mod:`.finalizer` - the component ``spatial.tree`` (one ``laplace_partition`` per level);
* :mod:`.presets`   - the preset ``QuadTree``.

Derivations and checks: ``notebooks/spatial.ipynb``.
"""
