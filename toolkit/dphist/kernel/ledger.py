"""The privacy ledger: one row per measurement the kernel answered.

OpenDP's idea that every measurement knows its cost, kept as an append-only
record.  Sequential composition (Dwork & Roth 2014, Thm 3.14) makes the
pipeline's cost the sum of the rows' epsilons.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field

from .persons import unit_text


@dataclass(frozen=True)
class LedgerEntry:
    """One answered measurement."""

    component: str      #: registry name of the component that asked
    stage: str          #: initializer / partitioner / finalizer
    primitive: str      #: kernel primitive, e.g. ``laplace.identity``
    epsilon: float      #: budget charged
    sensitivity: float  #: L1 (or score) sensitivity the kernel used
    answers: int        #: number of noisy values returned
    note: str = ""      #: e.g. the proof reference of a vetted custom mechanism


@dataclass
class Ledger:
    """Append-only list of :class:`LedgerEntry`, with per-component totals."""

    entries: list[LedgerEntry] = field(default_factory=list)
    mode: str = "research"  #: the run's mode: "research" (seeded) or "release" (exact, OS randomness)
    contributions: int = 1  #: privacy unit: 1 record (record level) or k records per person

    @property
    def privacy_unit(self) -> str:
        """``"1 record"`` or ``"k records per person"``."""
        return unit_text(self.contributions)

    def record(self, entry: LedgerEntry) -> None:
        self.entries.append(entry)

    @property
    def total(self) -> float:
        return float(sum(e.epsilon for e in self.entries))

    def by_component(self) -> dict[str, float]:
        out: dict[str, float] = defaultdict(float)
        for e in self.entries:
            out[e.component] += e.epsilon
        return dict(out)

    def by_stage(self) -> dict[str, float]:
        out: dict[str, float] = defaultdict(float)
        for e in self.entries:
            out[e.stage] += e.epsilon
        return dict(out)

    def by_stage_and_total(self) -> tuple[dict[str, float], float]:
        """:meth:`by_stage` and :attr:`total` from one pass over the entries (the pipeline's audit of every
        run's books reads both); the same sums, added in the same order."""
        out: dict[str, float] = {}
        total = 0
        for e in self.entries:
            out[e.stage] = out.get(e.stage, 0.0) + e.epsilon
            total = total + e.epsilon     # sum()'s additions, in its order (from the integer 0)
        return out, float(total)

    def to_records(self) -> list[dict]:
        return [asdict(e) for e in self.entries]

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self):
        return iter(self.entries)

    def __str__(self) -> str:
        unit = "" if self.contributions == 1 else f", privacy unit: {self.privacy_unit}"
        rows = [f"mode: {self.mode}{unit}", f"{'stage':<12}{'component':<28}{'primitive':<26}{'epsilon':>10}{'sens':>8}{'answers':>9}"]
        for e in self.entries:
            rows.append(f"{e.stage:<12}{e.component:<28}{e.primitive:<26}{e.epsilon:>10.4g}"
                        f"{e.sensitivity:>8.3g}{e.answers:>9}")
        rows.append(f"{'total':<66}{self.total:>10.4g}")
        return "\n".join(rows)
