"""``dphist bounds``: propose a public domain for a column under a charged epsilon.

    dphist bounds --input FILE --column C --epsilon E [--user-id U --max-contributions K]
                  [--bins N] [--beta B] [--seed S]

The command-line face of :func:`dphist.records.private_bounds` (its module docstring has the
mechanism and the threshold).  It prints the proposed ``[lo, hi)``, the epsilon it cost, the ledger,
and a ``--bins`` spec of ``N`` equal-width bins over the proposal for ``dphist run --column``.  The run
that uses the proposal spends its own epsilon: the total is the sum of the two (sequential composition),
which the output says.  Without ``--seed`` the noise is release mode's exact noise from the operating
system; with it, research mode's seeded float Laplace (reproducible, never to be published).
"""
from __future__ import annotations


def configure(s) -> None:
    """Add the options of ``dphist bounds`` to its subparser ``s``."""
    s.add_argument("--input", "-i", required=True, help="a CSV, Parquet or .npy file of records")
    s.add_argument("--column", required=True, help="the column whose domain to propose")
    s.add_argument("--epsilon", "-e", required=True, help="the epsilon this proposal spends")
    s.add_argument("--user-id", help="the person column (person-level privacy, with --max-contributions)")
    s.add_argument("--max-contributions", type=int, help="records kept per person (with --user-id)")
    s.add_argument("--bins", type=int, default=64,
                   help="the number of equal-width bins in the printed --bins spec (default 64)")
    s.add_argument("--beta", type=float, default=1e-3,
                   help="the probability that an empty magnitude bin clears the threshold (default 0.001)")
    s.add_argument("--seed", type=int, help="research mode: reproducible, never for publication")
    s.set_defaults(func=main)


def main(args) -> int:
    from ..errors import InvalidParameter
    from ..kernel import validate_epsilon
    from .approx_bounds import private_bounds

    eps = validate_epsilon(args.epsilon)
    if args.bins < 1:
        raise InvalidParameter(f"--bins must be a positive number of bins, got {args.bins}")
    b = private_bounds(args.input, args.column, eps, user_id=args.user_id,
                       max_contributions=args.max_contributions, seed=args.seed, beta=args.beta)
    mode = "research mode (seeded: never publish)" if args.seed is not None else "release mode"
    print(f"proposed domain for {args.column!r}: [{b.lo:g}, {b.hi:g}) at epsilon={b.epsilon:g}, {mode}")
    print(f"threshold {b.threshold:.4g} noisy records per magnitude bin; values outside are clamped by default")
    for e in b.ledger.entries:
        print(f"ledger: {e.primitive} epsilon={e.epsilon:g} sensitivity={e.sensitivity:g} "
              f"({b.ledger.privacy_unit}), {e.answers} noisy counts")
    # repr: the bounds are powers of two, printed exactly so that the spec reproduces them
    print(f"bins spec: {b.lo!r}:{b.hi!r}/{args.bins}")
    print("the run that uses this domain spends its own epsilon: the total is the sum of both")
    return 0
