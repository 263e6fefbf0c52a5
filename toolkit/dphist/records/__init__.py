"""From records to a histogram: readers, public binning, person-level bounding, private bounds.

``dphist.histogram(source, column=..., bins=..., user_id=None, max_contributions=None)``
(:mod:`.histogram`) reads a column of a file, array or data frame chunk by chunk
(:mod:`.sources`), bins it over a public spec (:mod:`dphist.binning`), and with
``user_id`` keeps at most ``max_contributions`` records per person (:mod:`.bounding`);
a Dask DataFrame is binned by its workers (:mod:`.distributed`).  When no domain
can be stated, :func:`private_bounds` (:mod:`.approx_bounds`) proposes one under a
charged epsilon.  pyarrow, pandas, polars and dask are imported only when used.
"""
from .histogram import RECORD_LEVEL_NOTE, Histogram, histogram

__all__ = ["Histogram", "RECORD_LEVEL_NOTE", "histogram", "private_bounds"]


def __getattr__(name):
    if name == "private_bounds":
        from .approx_bounds import private_bounds
        return private_bounds
    raise AttributeError(name)
