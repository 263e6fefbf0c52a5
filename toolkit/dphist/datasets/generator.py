"""DPBench's data generator (Hay, Machanavajjhala, Miklau, Chen, Zhang, SIGMOD 2016, Sec. 4.2).

DPBench separates three properties of an input that drive algorithm error and
varies them independently:

* **shape** ``p``: a source histogram normalised to sum to 1;
* **scale** ``m``: the number of records, drawn i.i.d. from ``p``, i.e. the
  counts are one multinomial draw ``x ~ Multinomial(m, p)`` (seeded);
* **domain size** ``n``: the source is coarsened by merging equal blocks of
  adjacent bins (``n`` must divide the source size; DPBench's 4,096-bin
  sources reduce to 2,048, 1,024, ..., 256).  A 2-D source (a grid) is
  coarsened the same way on every axis: ``domain=(n1, n2)`` merges blocks of
  ``(N1 / n1) x (N2 / n2)`` adjacent cells (DPBench's 256 x 256 sources reduce
  to 128 x 128, ..., 32 x 32; Hay et al., Section 6).

The *population* histogram ``m * p`` is the expectation of the sample; error
against it (DPBench's view of data as a sample from a population) is
:func:`population_error`.  Domain reduction is applied to the shape before
sampling, which gives the same distribution as sampling first and merging
after (a merged multinomial is the multinomial of the merged probabilities).
"""
from __future__ import annotations

import numpy as np

from ..errors import InvalidParameter
from .dataset import Dataset
from .lookup import load


def shape_of(counts) -> np.ndarray:
    """The normalised histogram ``p = x / ||x||_1`` (DPBench's *shape*)."""
    x = np.asarray(counts, dtype=float)
    if x.ndim < 1 or x.size == 0:
        raise InvalidParameter(f"a shape is made from a non-empty histogram, got shape {x.shape}")
    total = x.sum()
    if not np.isfinite(total) or total <= 0 or x.min() < 0:
        raise InvalidParameter("a shape needs non-negative counts with a positive total")
    return x / total


def reduce_domain(values, domain) -> np.ndarray:
    """Merge equal blocks of adjacent bins so that ``len(values)`` becomes ``domain`` (sums).

    For a grid, ``domain`` is its new shape (or one integer for every axis): blocks of adjacent
    cells are merged on every axis at once."""
    v = np.asarray(values)
    if v.ndim > 1:
        return _reduce_grid(v, domain)
    n = v.size
    try:
        domain = int(domain)
    except (TypeError, ValueError):
        raise InvalidParameter(f"domain size must be an integer, got {domain!r}") from None
    if domain < 1:
        raise InvalidParameter(f"domain size must be at least 1, got {domain}")
    if domain > n:
        raise InvalidParameter(f"cannot reduce a {n}-bin histogram to {domain} bins: merging only shrinks the domain")
    if n % domain:
        divisors = [d for d in (2 ** k for k in range(1, 16)) if n % d == 0 and d < n]
        hint = f"; sizes that divide {n} include {', '.join(map(str, divisors[-4:]))}" if divisors else ""
        raise InvalidParameter(f"domain size {domain} does not divide the source size {n} "
                               f"({n} / {domain} = {n / domain:.3g} is not a whole block){hint}")
    return v.reshape(domain, n // domain).sum(axis=1)


def _reduce_grid(v: np.ndarray, domain) -> np.ndarray:
    """:func:`reduce_domain` of a grid: each axis reduced by merging blocks of adjacent cells."""
    if isinstance(domain, (int, np.integer)) and not isinstance(domain, bool):
        domain = (int(domain),) * v.ndim
    try:
        target = tuple(int(d) for d in domain)
    except (TypeError, ValueError):
        raise InvalidParameter(f"the domain of a {v.ndim}-D source is a shape of {v.ndim} integers, "
                               f"got {domain!r}") from None
    if len(target) != v.ndim:
        raise InvalidParameter(f"the domain of a {v.ndim}-D source is a shape of {v.ndim} integers, got {domain!r}")
    blocks = []
    for axis, (n, d) in enumerate(zip(v.shape, target)):
        try:
            reduce_domain(np.zeros(n), d)       # the 1-D rules and messages, axis by axis
        except InvalidParameter as exc:
            raise InvalidParameter(f"axis {axis}: {exc}") from None
        blocks += [d, n // d]
    return v.reshape(blocks).sum(axis=tuple(range(1, 2 * v.ndim, 2)))


def _check_scale(scale) -> int:
    try:
        s = int(scale)
    except (TypeError, ValueError, OverflowError):
        raise InvalidParameter(f"scale must be a positive integer, got {scale!r}") from None
    if s != scale or s <= 0:
        raise InvalidParameter(f"scale must be a positive integer (number of records), got {scale!r}")
    return s


def generate(source, scale: int | None = None, domain=None, seed=0) -> Dataset:
    """A DPBench input: ``scale`` records from the shape of ``source`` over ``domain`` bins
    (for a 2-D source: ``domain`` is the reduced grid's shape, e.g. ``(64, 64)``).

    ``source`` is a :class:`Dataset`, a dataset name, or a vector of counts.
    ``scale=None`` keeps the source counts (only reduced); ``domain=None``
    keeps the source's domain size.  ``seed`` is an int or a
    :class:`numpy.random.SeedSequence`.  ``meta["population"]`` holds
    ``scale * shape`` (the population the sample is drawn from).
    """
    if isinstance(source, str):
        source = load(source)
    if not isinstance(source, Dataset):
        source = Dataset("array", source, "counts given as an array", f"{np.asarray(source).size} bins")
    src = source.counts
    if src.ndim > 1:
        grid = src.shape if domain is None else tuple(_reduce_grid(np.zeros(src.shape), domain).shape)
        reduced = _reduce_grid(src, grid) if grid != src.shape else src
        n, merged = int(np.prod(grid)), source.n // int(np.prod(grid))
        size_label = "x".join(map(str, grid))
    else:
        n = source.n if domain is None else int(domain)
        reduced = reduce_domain(src, n) if n != source.n else src
        merged, size_label = source.n // n, str(n)
    p = shape_of(reduced)
    if scale is None:
        counts, population, m = reduced, reduced.astype(float), int(reduced.sum())
    else:
        m = _check_scale(scale)
        rng = np.random.default_rng(seed)
        counts = rng.multinomial(m, p.reshape(-1)).reshape(p.shape)
        population = m * p
    label = f"{source.name}[scale={m},n={size_label}]"
    return Dataset(label, counts, f"{m:,} records from the shape of {source.name}",
                   (f"{merged} adjacent {'cells' if src.ndim > 1 else 'bins'} of {source.domain} merged per "
                    f"{'cell' if src.ndim > 1 else 'bin'}" if merged != 1 else source.domain),
                   source=f"DPBench generator over {source.source or source.name}", shape=source.shape,
                   meta={"source": source.name, "scale": m, "domain": n if src.ndim == 1 else grid,
                         "population": population,
                         "sampled": scale is not None})


def population_error(metric, workload, estimate, population) -> float:
    """``metric`` of an estimate against the population ``scale * shape`` instead of the sample."""
    return float(metric(workload, np.asarray(population, dtype=float), np.asarray(estimate, dtype=float)))
