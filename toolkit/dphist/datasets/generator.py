"""DPBench's data generator (Hay, Machanavajjhala, Miklau, Chen, Zhang, SIGMOD 2016, Sec. 4.2).

DPBench separates three properties of an input that drive algorithm error and
varies them independently:

* **shape** ``p``: a source histogram normalised to sum to 1;
* **scale** ``m``: the number of records, drawn i.i.d. from ``p``, i.e. the
  counts are one multinomial draw ``x ~ Multinomial(m, p)`` (seeded);
* **domain size** ``n``: the source is coarsened by merging equal blocks of
  adjacent bins (``n`` must divide the source size; DPBench's 4,096-bin
  sources reduce to 2,048, 1,024, ..., 256).

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
    if x.ndim != 1 or x.size == 0:
        raise InvalidParameter(f"a shape is made from a non-empty 1-D histogram, got shape {x.shape}")
    total = x.sum()
    if not np.isfinite(total) or total <= 0 or x.min() < 0:
        raise InvalidParameter("a shape needs non-negative counts with a positive total")
    return x / total


def reduce_domain(values, domain: int) -> np.ndarray:
    """Merge equal blocks of adjacent bins so that ``len(values)`` becomes ``domain`` (sums)."""
    v = np.asarray(values)
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


def _check_scale(scale) -> int:
    try:
        s = int(scale)
    except (TypeError, ValueError, OverflowError):
        raise InvalidParameter(f"scale must be a positive integer, got {scale!r}") from None
    if s != scale or s <= 0:
        raise InvalidParameter(f"scale must be a positive integer (number of records), got {scale!r}")
    return s


def generate(source, scale: int | None = None, domain: int | None = None, seed=0) -> Dataset:
    """A DPBench input: ``scale`` records from the shape of ``source`` over ``domain`` bins.

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
    n = source.n if domain is None else int(domain)
    reduced = reduce_domain(source.counts, n) if n != source.n else source.counts
    p = shape_of(reduced)
    if scale is None:
        counts, population, m = reduced, reduced.astype(float), int(reduced.sum())
    else:
        m = _check_scale(scale)
        rng = np.random.default_rng(seed)
        counts = rng.multinomial(m, p)
        population = m * p
    label = f"{source.name}[scale={m},n={n}]"
    return Dataset(label, counts, f"{m:,} records from the shape of {source.name}",
                   (f"{source.n // n} adjacent bins of {source.domain} merged per bin" if n != source.n
                    else source.domain),
                   source=f"DPBench generator over {source.source or source.name}", shape=source.shape,
                   meta={"source": source.name, "scale": m, "domain": n, "population": population,
                         "sampled": scale is not None})


def population_error(metric, workload, estimate, population) -> float:
    """``metric`` of an estimate against the population ``scale * shape`` instead of the sample."""
    return float(metric(workload, np.asarray(population, dtype=float), np.asarray(estimate, dtype=float)))
