"""Audit reports: JSON and Markdown for ``--output``, and the AUDIT.md table of ``make audit``.

Writing is all-or-nothing: the output folder is checked before any audit runs
(:func:`check_output`), the files are written to a temporary folder beside it
and moved into place in one rename.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Sequence

from ..errors import InvalidParameter
from ..io import umask_mode
from .auditor import AuditResult


def _bound(r: AuditResult) -> str:
    return f"{r.epsilon_lower_bound:.3f}"


def _witness(r: AuditResult) -> str:
    if r.witness is None:
        return "no event separated the pairs"
    w = r.witness
    k1, k2 = w.hits
    return (f"{w.pair.name} ({w.pair.describe().split(': ', 1)[1]}): `{w.event.text}`, "
            f"{w.direction}, {k1} vs {k2} of {w.samples}").replace("|", "\\|")


def result_markdown(r: AuditResult, top: int = 10) -> str:
    """One audit as Markdown: verdict, settings, witness and the strongest tests."""
    verdict = "PASS" if r.passed else "FAIL"
    lines = [
        f"## {r.algorithm}: {verdict}",
        "",
        f"* claimed epsilon: {r.epsilon:g}; lower confidence bound on the privacy loss: **{_bound(r)}**",
        f"* alpha = {r.alpha:g} over m = {r.tests} tests ({r.pairs} pairs x features x 2 directions); "
        f"each one-sided Clopper-Pearson bound at level alpha / (2m) = {r.level:.3g} (Bonferroni)",
        f"* {r.samples} estimation runs per side and pair, {r.selection_samples} separate selection runs; "
        f"largest detectable bound {r.detectable:.2f}; {'batched' if r.batched else 'looped'} sampling; "
        f"{r.seconds:.1f} s",
        f"* seed (reproduces this audit): `{r.seed}`",
        f"* witness: {_witness(r)}",
        "",
        "| pair | feature | direction | event | hits (favoured, other) | bound |",
        "|---|---|---|---|---|---|",
    ]
    rows = sorted((x for x in r.rows if x["epsilon_lower_bound"] is not None),
                  key=lambda x: -x["epsilon_lower_bound"])[:top]
    for x in rows:
        event = str(x["event"]).replace("|", "\\|")
        lines.append(f"| {x['pair']} | {x['feature']} | {x['direction']} | `{event}` | "
                     f"{x['hits'][0]}, {x['hits'][1]} | {x['epsilon_lower_bound']:.3f} |")
    return "\n".join(lines) + "\n"


def audit_table(results: Sequence[AuditResult], title: str = "Privacy audit", seed: int | None = None) -> str:
    """AUDIT.md: one row per algorithm (epsilon, lower bound, verdict, witness, time)."""
    lines = [
        f"# {title}",
        "",
        "Written by `make audit` (`dphist audit --all`); see README, section \"Privacy audit\", and",
        "`notebooks/02-privacy-audit.ipynb` for the method.  A PASS means no tested event showed a",
        "privacy loss above epsilon at level alpha: evidence, not a proof.  A FAIL is a proof at",
        "confidence 1 - alpha that the algorithm is not epsilon-DP, with the witness to reproduce it.",
        "",
    ]
    if results:
        r0 = results[0]
        origin = (f"seed = {seed} (`dphist audit --seed {seed}`; each algorithm's own seed, derived from it and "
                  "the algorithm's name, is in the JSON report)" if seed is not None else
                  "each algorithm's seed is in the JSON report")
        lines += [f"Settings: alpha = {r0.alpha:g}; pairs per algorithm = {r0.pairs}; "
                  f"tests per algorithm m = {r0.tests}; {origin}.", ""]
    lines += ["| algorithm | epsilon | lower bound | verdict | samples per side | witness | seconds |",
              "|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r.algorithm} | {r.epsilon:g} | {_bound(r)} | {'PASS' if r.passed else 'FAIL'} | "
                     f"{r.samples} ({'batched' if r.batched else 'looped'}) | {_witness(r)} | {r.seconds:.1f} |")
    return "\n".join(lines) + "\n"


def check_output(path, force: bool) -> Path:
    """Refuse an existing output (without ``force``) or a missing parent folder, before anything runs."""
    path = Path(path)
    if path.exists() and not force:
        raise InvalidParameter(f"output {str(path)!r} exists; pass --force to replace it")
    if not path.parent.resolve().is_dir():
        raise InvalidParameter(f"the folder {str(path.parent)!r} for output {str(path)!r} does not exist")
    return path


def write_reports(results: Sequence[AuditResult], directory, force: bool = False) -> Path:
    """``DIR/audit.json`` (every result, every test) and ``DIR/audit.md``, replaced atomically."""
    directory = check_output(directory, force)
    tmp = Path(tempfile.mkdtemp(dir=directory.parent, prefix=f".{directory.name}."))
    try:
        (tmp / "audit.json").write_text(json.dumps([r.to_dict() for r in results], indent=1) + "\n")
        body = audit_table(results) + "\n" + "\n".join(result_markdown(r) for r in results)
        (tmp / "audit.md").write_text(body)
        umask_mode(tmp, directory=True)   # mkdtemp's 0700 -> the umask's, as every dphist output
        if directory.exists():
            shutil.rmtree(directory) if directory.is_dir() else directory.unlink()
        os.replace(tmp, directory)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return directory


def write_table(results: Sequence[AuditResult], path, force: bool = False, seed: int | None = None) -> Path:
    """Write :func:`audit_table` to ``path`` (e.g. AUDIT.md) atomically."""
    path = check_output(path, force)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(audit_table(results, seed=seed))
        umask_mode(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
