"""``dphist audit``: the command-line face of :func:`dphist.audit.audit`.

    dphist audit NAME... | --all [--epsilon E] [--level fast|default|thorough | --fast | --thorough]
                 [--pair COUNTS:+1@BIN ...] [--time-budget SECONDS] [--samples K] [--alpha A]
                 [--seed S] [--noise float|exact|release] [--workers W] [--no-stop-on-failure]
                 [--contributions K] [--output DIR] [--table FILE] [--force]

The options are those of :func:`dphist.audit.audit`, under the same names
(``level``, ``pairs``, ``time_budget``, ``samples``, ``alpha``, ``seed``, ``noise``,
``workers``, ``stop_on_failure``, ``contributions``).  Everything is validated before the first
audit runs (names, epsilon, alpha, samples, pairs, time budget, output paths):
bad input writes nothing.  Exit status 0 when every
algorithm passes, 1 when one fails, 2 on bad input (the main CLI's convention).

Hooked into ``dphist`` by :func:`configure` (adds the subparser's options) and
:func:`main` (runs it).
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from ..errors import InvalidParameter
from ..registry import default_registry


def configure(s: argparse.ArgumentParser) -> None:
    """Add the options of ``dphist audit`` to its subparser ``s``."""
    s.add_argument("names", nargs="*", metavar="NAME", help="preset names (or --all)")
    s.add_argument("--all", action="store_true", help="every registered preset")
    s.add_argument("--epsilon", "-e", default="1.0", help="the epsilon claimed (default 1)")
    s.add_argument("--level", choices=("fast", "default", "thorough"),
                   help="what to try: fast (CI), default, thorough (more pairs, runs and search; see README)")
    s.add_argument("--fast", action="store_const", const="fast", dest="level_flag", help="same as --level fast")
    s.add_argument("--thorough", action="store_const", const="thorough", dest="level_flag",
                   help="same as --level thorough")
    s.add_argument("--pair", action="append", metavar="COUNTS:+1@BIN",
                   help="your own neighbouring pair instead of the level's families and search (repeatable): "
                        "the histogram, then +1 (add) or -1 (remove) a record at a bin numbered from 0, "
                        "e.g. 0,3,5:+1@2; or two histograms, 0,3,5;0,3,6")
    s.add_argument("--time-budget", metavar="SECONDS",
                   help="wall-time budget per algorithm: the search stops at a third of it, cases not "
                        "started when it is spent are skipped (and still counted in the tests)")
    s.add_argument("--samples", "-k", help="estimation runs per side and case (default: the level's; "
                                           "default level 200000 batched, 1000 looped)")
    s.add_argument("--alpha", default="1e-3", help="level of the whole audit (default 1e-3)")
    s.add_argument("--seed", help="seed (an integer); drawn from the OS and printed when omitted")
    s.add_argument("--noise", choices=("float", "exact", "release"),
                   help="one mode for every case: float (research mode's float Laplace), exact (research "
                        "mode, exact samplers) or release (release mode, exact samplers on the audit's seeds); "
                        "default: float, plus release mode on the level's release pairs")
    s.add_argument("--stop-on-failure", action=argparse.BooleanOptionalAction, default=True,
                   help="end an algorithm's audit at its first certified failure (default: yes)")
    s.add_argument("--workers", type=int, help="processes for looped sampling (default: up to 2)")
    s.add_argument("--output", "-o", metavar="DIR", help="write DIR/audit.json and DIR/audit.md")
    s.add_argument("--table", metavar="FILE", help="write the one-row-per-algorithm table (AUDIT.md)")
    s.add_argument("--force", action="store_true", help="replace an existing --output / --table")
    s.add_argument("--contributions", default="1", metavar="K",
                   help="audit person-level privacy at K records per person: pairs K records apart, the "
                        "pipeline calibrated to K (default 1: record level)")
    s.set_defaults(func=main)


def _int(text, what: str):
    if text is None:
        return None
    try:
        return int(text)
    except (TypeError, ValueError):
        raise InvalidParameter(f"{what} must be an integer, got {text!r}") from None


def main(args) -> int:
    from .auditor import validate_settings
    from .report import check_output, write_reports, write_table

    if args.all and args.names:
        raise InvalidParameter("give preset names or --all, not both")
    if not args.all and not args.names:
        raise InvalidParameter("name at least one preset to audit (or --all)")
    if args.all:  # presets needing a plugin that is not installed are skipped, with the reason
        unavailable = default_registry.unavailable("algorithm")
        for name, reason in sorted(unavailable.items()):
            print(f"dphist audit: skipped {name}: it {reason}", file=sys.stderr)
        names = sorted(n for n in default_registry.names("algorithm") if n not in unavailable)
    else:
        names = list(args.names)
    for name in names:
        default_registry.get("algorithm", name)   # unknown name: UnknownComponent with the closest matches
    if args.level and args.level_flag and args.level != args.level_flag:
        raise InvalidParameter(f"--level {args.level} and --{args.level_flag} disagree; give one")
    level = args.level or args.level_flag or "default"
    pairs = None
    if args.pair:
        from .pairs import parse_pair
        pairs = [parse_pair(text) for text in args.pair]
    from .auditor import validate_time_budget
    time_budget = validate_time_budget(args.time_budget)
    samples = _int(args.samples, "--samples")
    seed = _int(args.seed, "--seed")
    if seed is not None and seed < 0:
        raise InvalidParameter(f"--seed must be a non-negative integer, got {seed}")
    epsilon, alpha = validate_settings(args.epsilon, args.alpha, samples, None)
    from ..kernel.persons import check_contributions
    contributions = check_contributions(_int(args.contributions, "--contributions"))
    if args.workers is not None and args.workers < 1:
        raise InvalidParameter(f"--workers must be at least 1, got {args.workers}")
    if args.output:
        check_output(args.output, args.force)
    if args.table:
        check_output(args.table, args.force)

    from .auditor import audit
    if seed is None:
        seed = int(np.random.SeedSequence().entropy)   # from the OS; printed so the audit can be repeated
    print(f"dphist audit: seed {seed}", file=sys.stderr)
    # one child seed per algorithm, so adding a preset does not change the others' audits
    results = []
    for name in names:
        child = int(np.random.SeedSequence([seed, *name.encode()]).generate_state(2, np.uint64)[0])
        result = audit(name, epsilon, level=level, pairs=pairs, samples=samples, alpha=alpha, seed=child,
                       workers=args.workers, noise=args.noise, time_budget=time_budget,
                       stop_on_failure=args.stop_on_failure, contributions=contributions)
        print(result, flush=True)
        results.append(result)
    if args.output:
        print(f"report: {write_reports(results, args.output, args.force)}", file=sys.stderr)
    if args.table:
        print(f"table: {write_table(results, args.table, args.force, seed=seed)}", file=sys.stderr)
    failed = [r.algorithm for r in results if not r.passed]
    if failed:
        print(f"dphist audit: {len(failed)} of {len(results)} failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0
