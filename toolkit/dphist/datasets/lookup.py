"""Name lookup: :func:`load` and :func:`names` over the registry and the data directories.

Imports flow one way: ``dataset`` (the record) <- ``files`` (data directories, files) <- ``lookup``
(names); nothing imports back (the cycle ``base`` <-> ``files`` hidden by function-level imports is gone).
"""
from __future__ import annotations

from ..errors import UnknownComponent
from ..registry import default_registry
from .dataset import Dataset
from .files import (DPBENCH_2D_FILES, DPBENCH_FILES, directory_datasets, dpbench, is_file_spec, load_file,
                    load_npy_dataset)


def names() -> list[str]:
    """Registered dataset names plus the histograms found in the data directories.

    DPBench sources found in a data directory are listed under their DPBench
    name (``SEARCHLOGS``) as well as their file name.
    """
    found = directory_datasets()
    aliases = [k for k, stem in {**DPBENCH_FILES, **DPBENCH_2D_FILES}.items() if stem in found and k not in found]
    return default_registry.names("dataset") + sorted(found) + aliases


def load(name: str, **params) -> Dataset:
    """The dataset ``name``: a registered loader, an ``.npy`` file in a data directory, a DPBench
    name (``SEARCHLOGS``) whose file is in a data directory, or a path to a histogram file
    (``.npy``/``.csv``/``.txt`` counts; ``params`` are passed to :func:`.files.load_file`)."""
    if is_file_spec(name):
        return load_file(name, **params)
    found = directory_datasets()
    if name in found:
        return load_npy_dataset(name, found[name])
    if {**DPBENCH_FILES, **DPBENCH_2D_FILES}.get(name) in found:
        return dpbench(name)
    try:
        loader = default_registry.get("dataset", name)
    except UnknownComponent as exc:
        if found:
            raise UnknownComponent(f"{exc} Data-directory datasets: {', '.join(sorted(found))}.") from None
        raise
    return loader(**params)
