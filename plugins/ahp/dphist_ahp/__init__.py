"""AHP: Zhang, Chen, Xu, Meng, Xie. Towards Accurate Histogram Publication under Differential
Privacy. SDM 2014.

Names: the paper's *group* is our *group* (a set of bins merged by a partitioner), and its
*grouping* our grouping.

Modules, one idea each:

* :mod:`.threshold`    - the initializer ``ahp.threshold`` (Algorithm 1 lines 2-3);
* :mod:`.group_error` - the group error of Theorem 4.2 (a :mod:`dphist.segmentation` cost)
  and the greedy lower bound err*;
* :mod:`.greedy`       - Algorithm 3 (greedy grouping): the core's greedy scan with the
  look-ahead bound;
* :mod:`.segmentation` - the O(n^2) optimal grouping, the k-constrained one (the core's
  segmentation engine) and the rules of thumb of Algorithm 2;
* :mod:`.partitioners` - the components ``ahp.greedy``, ``ahp.optimal``, ``ahp.empirical``;
* :mod:`.presets`      - ``AHP``, ``AHP-optimal``, ``AHP-empirical``.

The sorter is the core's ``noisy-count`` sorter and the finalizer the core's ``group-mean``
finalizer (AHP Algorithm 1 lines 6-9).
"""
