"""Stated error (dphist.stated_error): the cost of asking a release for its error (information only).

A release builds its statement on first use; these cases time that first use on a fresh release
(``fresh_setup``): the variances of all 4,096 prefixes (one solve per query: H's tree least squares
and Privelet's orthogonal rows (their ``inverse_gram``), GreedyH's sparse LU of the augmented
system, dense Cholesky up to 1,024 columns), the per-bin variances (one solve per group) and identity's
(a diagonal Gram matrix).  The accuracy of the statements (10^4 runs per linear preset) is
``benchmarks/stated_error_accuracy.py``.
"""
from dphist import make_algorithm
from dphist.datasets import load

N = 4096


def _release(name, n=N, **params):
    def setup():
        counts = load("synthetic", shape="zipf", n=n, scale=10 * n, seed=1).counts
        return (make_algorithm(name, **params).run(counts, 1.0, seed=7),)
    return setup


def _prefix_variances(release):
    release.variance("prefix")


def _bin_variances(release):
    release.bin_variances()


CASES = [
    dict(name="identity, N=4,096: per-bin variances (diagonal Gram)", target=None, setup=_release("identity"),
         run=_bin_variances, fresh_setup=True),
    dict(name="H, N=4,096: variances of the 4,096 prefixes (the tree's least squares per query)", target=None,
         setup=_release("H"), run=_prefix_variances, fresh_setup=True),
    dict(name="H, N=4,096: per-bin variances (one tree solve per bin)", target=None,
         setup=_release("H"), run=_bin_variances, fresh_setup=True, repeat=2),
    dict(name="GreedyH, N=4,096: variances of the 4,096 prefixes (sparse LU)", target=None,
         setup=_release("GreedyH"), run=_prefix_variances, fresh_setup=True),
    dict(name="GreedyH, N=1,024: variances of the 1,024 prefixes (dense Cholesky)", target=None,
         setup=_release("GreedyH", n=1024), run=_prefix_variances, fresh_setup=True),
    dict(name="Privelet, N=4,096: variances of the 4,096 prefixes (orthogonal rows)", target=None,
         setup=_release("Privelet"), run=_prefix_variances, fresh_setup=True),
]
