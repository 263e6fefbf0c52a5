"""Adapter over the ``entrypoints`` package: discovery that survives broken metadata.

``entrypoints.get_group_all`` stops at the first distribution whose
``entry_points.txt`` does not parse.  This adapter walks the distributions
itself (with ``entrypoints``' parser and :class:`EntryPoint`), so a malformed
distribution is reported and the rest are still found.  Nothing is imported
here: listing is metadata only.
"""
from __future__ import annotations

import glob
import os.path as osp
import sys
from dataclasses import dataclass

import entrypoints


@dataclass(frozen=True)
class EntryPointRecord:
    group: str
    name: str
    target: str          #: ``module:object``
    distribution: str    #: distribution name (``dphist-boost``)
    version: str
    entry_point: entrypoints.EntryPoint | None = None


@dataclass(frozen=True)
class MetadataProblem:
    distribution: str
    path: str
    error: str


def _distributions(path):
    seen = set()
    for folder in path:
        if not isinstance(folder, str) or not osp.isdir(folder):
            continue
        pattern = osp.join(glob.escape(folder), "*.*-info", "entry_points.txt")
        for ep_file in sorted(glob.glob(pattern)):
            info_dir = osp.basename(osp.dirname(ep_file))
            if not info_dir.endswith((".dist-info", ".egg-info")):
                continue
            distro = entrypoints.Distribution.from_name_version(osp.splitext(info_dir)[0])
            key = distro.name.lower().replace("_", "-")
            if key in seen:  # the first on sys.path shadows later copies, as import does
                continue
            seen.add(key)
            yield ep_file, distro


def scan(groups, path=None) -> tuple[list[EntryPointRecord], list[MetadataProblem]]:
    """All entry points in ``groups`` from every distribution on ``path`` (default sys.path)."""
    records: list[EntryPointRecord] = []
    problems: list[MetadataProblem] = []
    for ep_file, distro in _distributions(sys.path if path is None else path):
        try:
            cp = entrypoints.CaseSensitiveConfigParser(delimiters=("=",))
            cp.read([ep_file], encoding="utf-8")
            found = []
            for group in groups:
                if group not in cp:
                    continue
                for name, epstr in cp[group].items():
                    ep = entrypoints.EntryPoint.from_string(epstr, name, distro)
                    found.append(EntryPointRecord(group, name, epstr.strip(), distro.name,
                                                  distro.version or "", ep))
        except Exception as exc:  # malformed metadata: report this distribution, keep going
            problems.append(MetadataProblem(distro.name.replace("_", "-"), ep_file,
                                            f"{type(exc).__name__}: {exc}"))
            continue
        records.extend(found)
    return records, problems
