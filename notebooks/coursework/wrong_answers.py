"""Prepared wrong answers: each must fail the autograder test named here, and only that question.

``tests/test_coursework.py`` swaps the cell of the instructor version that starts with
``replaces`` for ``source``, grades the result with the assignment's full test suite (hidden
tests included), and checks that exactly the questions in ``fails`` lose points, with a hint
containing ``hint``.  They double as examples for instructors of the mistakes each test is
there to catch.
"""

# a partitioner that cuts fixed-width groups again wherever the TRUE counts jump; {read} is how
# it gets them
_PEEKING = '''
PARTITIONER_NAME = "coursework.my-partitioner"
from dphist.params import Interval

@dphist.register
class PeekingPartitioner(dphist.Partitioner):
    """Fixed-width groups, cut again wherever the TRUE counts jump: not private."""
    name = PARTITIONER_NAME
    citation = "a cheating example"
    spends = False
    param_constraints = {{"width": Interval(int, 1, None)}}

    def __init__(self, width: int = 8):
        self.width = width

    def partition(self, bins, ctx):
        truth = bins.in_order({read})
        jumps = np.flatnonzero(np.abs(np.diff(truth)) > 50) + 1
        return bins.merge(np.union1d(np.arange(0, bins.n_groups, self.width), jumps))
'''

WRONG_ANSWERS = [
    {
        "assignment": "a1-laplace",
        "mistake": "noise not scaled by sensitivity (Lap(1/eps) whatever the query)",
        "replaces": "def laplace_mechanism",
        "source": '''
def laplace_mechanism(values, sensitivity, epsilon, rng):
    if not epsilon > 0:
        raise ValueError(f"epsilon must be positive, got {epsilon}")
    values = np.asarray(values, dtype=float)
    return values + rng.laplace(0.0, 1.0 / epsilon, size=values.shape)
''',
        "fails": {"q1"},
        # the public tests use sensitivity 1, where this is right: only a hidden test catches it
        "hint": "the noise must grow with the sensitivity",
    },
    {
        "assignment": "a2-partitioner",
        "mistake": "partitioner reading the raw counts through the kernel's private attributes",
        "replaces": 'PARTITIONER_NAME = "coursework.my-partitioner"',
        # reaches around the kernel's gate to its name-mangled private attribute
        "source": _PEEKING.format(read="ctx.data._kernel._PrivateKernel__counts"),
        # the ledger is right and it beats identity: only the hidden differential test catches it
        "fails": {"q1"},
        "hint": "the groups must not depend on the true counts",
    },
    {
        "assignment": "a2-partitioner",
        "mistake": "partitioner reading the raw counts through the kernel's internal accessor",
        "replaces": 'PARTITIONER_NAME = "coursework.my-partitioner"',
        "source": _PEEKING.format(read="ctx.data._kernel._true_counts()"),
        # the kernel refuses the read (PrivacyViolation): the conformance kit and every run fail
        "fails": {"q1", "q2"},
        "hint": "the conformance kit dphist.testing.check_component rejects your class",
    },
    {
        "assignment": "a3-consistency",
        "mistake": "off-by-one in the inference: heights counted from 0 at the leaves",
        "replaces": "def consistent_tree",
        "source": '''
def consistent_tree(levels, k):
    levels = [np.asarray(v, dtype=float) for v in levels]
    z = [levels[0]]
    for j in range(1, len(levels)):
        height = j                            # off by one: leaves have height 1 in Theorem 3
        own = (k ** height - k ** (height - 1)) / (k ** height - 1)
        z.append(own * levels[j] + (1 - own) * z[-1].reshape(-1, k).sum(axis=1))
    hbar = [None] * len(levels)
    hbar[-1] = z[-1]
    for j in range(len(levels) - 2, -1, -1):
        gap = hbar[j + 1] - z[j].reshape(-1, k).sum(axis=1)
        hbar[j] = z[j] + np.repeat(gap / k, k)
    return hbar
''',
        # the tree stays consistent (that test passes) but is not the least-squares one
        "fails": {"q1", "q2"},
        "hint": "the result must be the least-squares consistent tree",
    },
    {
        "assignment": "a4-privacy-bug",
        "mistake": "a lower bound from raw frequencies, without confidence intervals",
        "replaces": "def epsilon_lower_bound",
        "source": '''
def epsilon_lower_bound(hits, hits_prime, trials, alpha):
    if hits == 0 or hits_prime == 0:
        return 0.0
    return max(0.0, float(np.log(hits / hits_prime)))
''',
        "fails": {"q1"},
        "hint": "use the Clopper-Pearson bounds",
    },
]
