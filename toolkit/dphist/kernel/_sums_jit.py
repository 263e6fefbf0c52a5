"""The compiled loop of the kernel's level sums (:meth:`dphist.kernel.private.PrivateKernel._block_sums`),
imported on first use (numba stays out of ``import dphist``)."""
from numba import njit


@njit(cache=True, nogil=True)
def coarsened_sums(fine, sums, starts, out):
    """``out[i]``: the sum of the groups ``[fine[j], fine[j + 1])`` (whose sums are ``sums[j]``) that lie in
    ``[starts[i], starts[i + 1])`` (the last up to ``fine[-1]``), when every start is one of the groups'
    bounds: the integers ``numpy.add.reduceat`` of the counts at ``starts`` gives (sums of the same counts,
    exact).  One walk over the groups; returns False at the first start that is no group bound (``out``
    then unfinished)."""
    m = fine.size - 1
    k = starts.size
    j = 0
    for i in range(k):
        s = starts[i]
        while j < m and fine[j] < s:
            j += 1
        if fine[j] != s or j == m:
            return False
        e = starts[i + 1] if i + 1 < k else fine[m]
        acc = sums[j]
        j += 1
        while j < m and fine[j] < e:
            acc += sums[j]
            j += 1
        out[i] = acc
    return True
