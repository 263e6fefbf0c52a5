"""The measured false-alarm rate: repeated independent audits of correct mechanisms.

Bonferroni bounds the chance that an epsilon-DP algorithm fails one audit by
``alpha``; this measures it.  ``make audit`` appends the counts to AUDIT.md:

    python -m dphist.audit.alarms --audits 50 --append AUDIT.md identity H
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from .auditor import audit


def false_alarms(name: str, audits: int = 50, seed: int = 0, **settings) -> tuple[int, list]:
    """``(number of failed audits, results)`` over ``audits`` fast audits with independent seeds."""
    children = np.random.SeedSequence([seed, *name.encode()]).spawn(audits)
    results = [audit(name, level="fast", seed=int(c.generate_state(1, np.uint64)[0]), **settings)
               for c in children]
    return sum(not r.passed for r in results), results


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m dphist.audit.alarms", description=__doc__.split("\n")[0])
    p.add_argument("names", nargs="+")
    p.add_argument("--audits", type=int, default=50)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--append", metavar="FILE", help="append the Markdown section to FILE")
    args = p.parse_args(argv)
    lines = ["", "## False alarms on correct mechanisms", "",
             f"{args.audits} independent fast audits each (alpha = 1e-3, epsilon = 1, seeds from "
             f"SeedSequence([{args.seed}, name])); Bonferroni bounds the expected count by "
             f"{args.audits} x 1e-3 = {args.audits * 1e-3:g}.", "",
             "| algorithm | false alarms | median lower bound | largest lower bound |", "|---|---|---|---|"]
    for name in args.names:
        alarms, results = false_alarms(name, args.audits, args.seed)
        bounds = [r.epsilon_lower_bound for r in results]
        lines.append(f"| {name} | {alarms} of {args.audits} | {np.median(bounds):.3f} | {max(bounds):.3f} |")
        print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    if args.append:
        with open(args.append, "a") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
