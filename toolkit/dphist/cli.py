"""The ``dphist`` command line: list, describe, run, bench, demo::

    dphist list [--kind KIND] [--dims D]
    dphist describe NAME
    dphist run --algorithm NAME --input FILE --epsilon E [--seed S] [--noise exact|float] [--output FILE]
    dphist run ... --param NAME=VALUE --param STAGE.NAME=VALUE   (preset / component parameters)
    dphist bench ...      (experiment engine, see `dphist bench --help`)
    dphist warm           (compile every preset's numba kernels into the per-user cache)
    dphist demo           (the default benchmark and its report)
    dphist audit NAME...  (statistical privacy audit, see `dphist audit --help`)
    dphist bounds -i FILE --column C -e E   (a column's domain proposed privately, see `dphist bounds --help`)
    dphist --import MODULE COMMAND ...   (a prototype's module imported first, so the names it
                                          registers at runtime are usable by every command)

Errors the user can fix exit with status 2 and one line naming the problem; a closed standard output
(``dphist list | head -2``) ends quietly with status 141 (128 + SIGPIPE, as Unix tools).
"""
from __future__ import annotations

import argparse
import ast
import difflib
import inspect
import os
import sys

from . import __version__
from .errors import DPHistError, InvalidParameter, UnknownComponent

# numpy, the registry and the components are imported by the commands that use them: `dphist --help`
# and the parsing of a command's options import neither (tests/test_import_cost.py)


# ---------------------------------------------------------------- list
def cmd_list(args) -> int:
    from .registry import GROUPS, RUNTIME, default_registry   # RUNTIME: listed with the module that made it
    kinds = [args.kind] if args.kind else list(GROUPS)
    if args.kind and args.kind not in GROUPS:
        raise InvalidParameter(f"unknown kind {args.kind!r}; kinds are {', '.join(GROUPS)}")
    if args.dims is not None:
        return _list_dims(args.dims, args.kind)
    problems = default_registry.problems(load=not args.no_import)
    broken = {(p.kind, p.name) for p in problems}
    # which presets need a plugin that is not installed (needs the imports: skipped by --no-import)
    unavailable = {} if args.no_import or "algorithm" not in kinds else default_registry.unavailable("algorithm")
    for kind in kinds:
        entries = default_registry.entries(kind)
        print(f"{kind}s ({len(entries)}):")
        for e in entries:
            flag = "  BROKEN" if (kind, e.name) in broken else ""
            if kind == "algorithm" and e.name in unavailable:
                flag = f"  UNAVAILABLE: {unavailable[e.name]}"
            origin = e.distribution if e.distribution != RUNTIME else f"{RUNTIME} {e.target.split(':')[0]}"
            print(f"  {e.name:<28} {origin}{flag}")
    if unavailable:
        print(f"\nunavailable presets ({len(unavailable)}): they need a plugin that is not installed")
    if problems:
        print(f"\nbroken plugins ({len(problems)}):")
        for p in problems:
            print(f"  {p}")
    return 0


def _list_dims(d: int, kind: str | None) -> int:
    """The presets that run on ``d``-dimensional histograms (their declared ``dims``)."""
    from .pipeline import dims_text, supports_dims
    from .registry import default_registry
    if d < 1:
        raise InvalidParameter(f"--dims takes a number of axes >= 1, got {d}")
    if kind not in (None, "algorithm"):
        raise InvalidParameter("--dims lists presets (algorithms): drop --kind or use --kind algorithm")
    unavailable = default_registry.unavailable("algorithm")
    rows = []
    for name in default_registry.names("algorithm"):
        if name in unavailable:
            continue
        try:
            dims = getattr(default_registry.get("algorithm", name), "dims", (1,))
        except DPHistError:
            continue     # a broken plugin: `dphist list` reports it
        if supports_dims(dims, d):
            rows.append((name, dims_text(dims)))
    print(f"algorithms for {d}-D histograms ({len(rows)}):")
    for name, text in rows:
        print(f"  {name:<28} {text}")
    if d >= 2:
        print(f"\nany 1-D preset also runs on a {d}-D grid through a linearisation: "
              "make_algorithm(NAME, linearise='hilbert' | 'z-order' | 'row-major')")
    return 0


# ------------------------------------------------------------- describe
def _canonical(kind: str, name: str) -> str | None:
    """The registered spelling of ``name`` in ``kind``: exact, else case-insensitive (as ``Registry.get``)."""
    from .registry import default_registry
    names = default_registry.names(kind)
    if name in names:
        return name
    return {n.lower(): n for n in names}.get(name.lower())


def _find_any(name: str) -> list[tuple[str, str, object]]:
    """``(kind, registered name, object)`` for every kind holding ``name``, resolved as ``dphist run`` does;
    an unknown name raises :class:`UnknownComponent` with the closest names of every kind."""
    from .registry import GROUPS, default_registry
    hits = [(kind, found, default_registry.get(kind, found)) for kind in GROUPS
            if (found := _canonical(kind, name)) is not None]
    if not hits:
        every = {n.lower(): n for kind in GROUPS for n in default_registry.names(kind)}
        close = [every[c] for c in difflib.get_close_matches(name.lower(), sorted(every), n=3, cutoff=0.5)]
        close += [n for low, n in sorted(every.items()) if name.lower() in low and n not in close][:3]
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise UnknownComponent(f"no component, preset or dataset named {name!r}{hint} (see `dphist list`)")
    return hits


def _param_lines(defaults: dict, constraints: dict, current: dict | None = None) -> list[str]:
    """One line per parameter: name, value (the default, or the preset's value), what it accepts."""
    from .params import describe_constraints
    lines = []
    for k, default in defaults.items():
        value = default if current is None else current.get(k, default)
        shown = "(required)" if value is inspect.Parameter.empty else repr(value)
        lines.append(f"{k} = {shown}  [{describe_constraints(constraints.get(k))}]")
    return lines or ["(no parameters)"]


def cmd_describe(args) -> int:
    from .components.base import Component
    from .registry import default_registry
    if args.kind:
        obj = default_registry.get(args.kind, args.name)   # UnknownComponent with the closest names
        hits = [(args.kind, _canonical(args.kind, args.name) or args.name, obj)]
    else:
        hits = _find_any(args.name)
    for kind, name, obj in hits:
        doc = (inspect.getdoc(obj) or "").strip()
        print(f"{name}  [{kind}]")
        if doc:
            print("  " + doc.replace("\n", "\n  "))
        print(f"  citation: {getattr(obj, 'citation', '') or '-'}")
        if isinstance(obj, type) and issubclass(obj, Component):
            share = {"initializer": "gamma_in", "partitioner": "gamma_p", "finalizer": "gamma_f"}.get(kind)
            print(f"  spends: {share if obj.spends and share else 'nothing'}")
            print("  parameters:")
            for line in _param_lines(obj.param_defaults(), obj.declared_constraints()):
                print(f"    {line}")
        elif kind == "algorithm":
            from .pipeline import dims_text
            from .presets import make_algorithm, preset_params
            print(f"  runs on: {dims_text(getattr(obj, 'dims', (1,)))}")
            print("  parameters (make_algorithm(name, p=...), dphist run --param p=...):")
            for line in _param_lines(preset_params(obj), getattr(obj, "param_constraints", {})):
                print(f"    {line}")
            pipe = make_algorithm(name)
            if getattr(pipe, "chooses_per_run", False):
                print(f"  stages: those of the preset it chooses per run ({pipe.describe_candidates()})")
                print()
                continue
            print("  stages (override with <stage>__<parameter>=..., dphist run --param <stage>.<parameter>=...):")
            for stage in ("initializer", "sorter", "partitioner", "finalizer"):
                component = getattr(pipe, stage)
                if component is None:
                    continue
                print(f"    {stage:<12} {component.name}")
                lines = _param_lines(component.param_defaults(), component.declared_constraints(),
                                     component.get_params())
                for line in lines:
                    print(f"      {line}")
            g = pipe.shares
            print(f"  shares       gamma_in={g[0]:g} gamma_p={g[1]:g} gamma_f={g[2]:g}")
            for component in pipe.components():   # a component's own notes (e.g. a lower bound on its error)
                for line in getattr(component, "describe_lines", lambda: [])():
                    print(f"  {line}")
        print()
    return 0


# ------------------------------------------------------------------ run
def parse_param(item: str) -> tuple[str, object]:
    """``NAME=VALUE`` or ``STAGE.NAME=VALUE`` -> a ``make_algorithm`` keyword and its value.

    The value is read as a Python literal (``ast.literal_eval``: numbers, strings, True/False/None,
    lists, tuples, dicts; never evaluated as code); JSON's ``true``/``false``/``null`` are accepted;
    anything else is taken as a plain string (``calibration=noisy-min``).
    """
    if "=" not in item:
        raise InvalidParameter(f"--param takes NAME=VALUE or STAGE.NAME=VALUE, got {item!r}")
    key, text = item.split("=", 1)
    key = key.strip()
    if "." in key:
        stage, name = key.split(".", 1)
        key = f"{stage}__{name}"
    if not key or key.startswith("__") or key.endswith("__"):
        raise InvalidParameter(f"--param: empty parameter name in {item!r}")
    text = text.strip()
    try:
        return key, ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    return key, {"true": True, "false": False, "null": None}.get(text, text)


def cmd_run(args) -> int:
    import numpy as np

    from .io import read_histogram, write_array
    from .kernel import validate_epsilon
    from .presets import make_algorithm

    eps = validate_epsilon(args.epsilon)
    if args.seed is None or args.noise == "exact":   # the exact samplers' largest scale bounds epsilon below
        from .kernel.exact import dyadic_scale_at_least
        try:
            dyadic_scale_at_least(1.0 / eps)
        except (InvalidParameter, OverflowError, ZeroDivisionError):
            raise InvalidParameter(f"epsilon {eps:g} is too small for the exact samplers (release mode, "
                                   "--noise exact): the Laplace scale 1/epsilon exceeds what they draw") from None
    if not args.records and not args.column:   # --column takes --bins as a spec (_column_histogram)
        given = [flag for flag, v in (("--domain", args.domain), ("--bins", args.bins), ("--clip", args.clip)) if v]
        if given:
            raise InvalidParameter(f"{' and '.join(given)} {'applies' if len(given) == 1 else 'apply'} only with "
                                   "--records (one record value per line); add --records or drop it")
    if args.output:  # a bad or existing output is refused before any budget is spent
        from .io import check_output
        check_output(args.output, force=args.force, header=True)
    overrides = dict(parse_param(item) for item in args.param or [])
    pipeline = make_algorithm(args.algorithm, **overrides)
    domain = None
    if args.domain:
        try:
            lo, hi = (float(v) for v in args.domain.split(":"))
        except ValueError:
            raise InvalidParameter(f"--domain takes LO:HI, got {args.domain!r}") from None
        domain = (lo, hi)
    named = None if args.column or args.records else _named_dataset(args.input)
    counts = (named if named is not None else _column_histogram(args) if args.column else
              read_histogram(args.input, records=args.records, domain=domain, bins=_bin_count(args.bins), clip=args.clip))
    release = pipeline.run(counts, eps, seed=args.seed, noise=args.noise)
    if release.mode == "research":
        print(f"dphist: research mode: this output can be reproduced from seed {release.seed} and must NOT be "
              "published with it (omit --seed for release mode)", file=sys.stderr)
    else:
        print("dphist: release mode: exact noise from the operating system; no seed is kept", file=sys.stderr)
    for warning in release.warnings:
        print(f"dphist: warning: {warning}", file=sys.stderr)
    cells = f"{counts.size} bins" if len(release.shape) == 1 else f"a {' x '.join(map(str, release.shape))} grid"
    print(f"{pipeline.name}: {cells}, epsilon={eps:g}, {release.mode} mode, "
          f"{release.partition.n_groups} groups{' (unattributed)' if release.unattributed else ''}",
          file=sys.stderr)
    if "auto" in release.notes:     # the auto preset: which preset ran, and the tree's path
        from .selection.auto import describe
        print(describe(release), file=sys.stderr)
    print(release.ledger, file=sys.stderr)
    header = _output_header(release, pipeline.name)
    values = release.grid if len(release.shape) == 2 else release.estimate   # a 2-D release: one row per line
    if args.output:
        write_array(args.output, values, force=args.force, header=header)
        print(f"wrote {args.output} (shape {' x '.join(map(str, values.shape))})", file=sys.stderr)
    else:
        np.savetxt(sys.stdout, values, fmt="%.10g", header=header)
    return 0


def _named_dataset(name: str):
    """The counts of the dataset ``name`` (``flights-dep-minute``, ``flights-delays``, a DPBench name found
    by ``--data-dir``) when ``--input`` is not a file path, else ``None`` (read as a file).  A grid keeps its
    shape; the preset's dimensions are checked by ``Pipeline.run`` before anything is spent or written."""
    from pathlib import Path

    from .datasets.files import is_file_spec
    if is_file_spec(name) or Path(name).exists():
        return None
    from .datasets import load, names
    known = names()
    if name not in known:
        close = difflib.get_close_matches(name, known, n=1)
        raise InvalidParameter(f"--input {name!r} is neither a file nor a dataset name"
                               + (f"; did you mean {close[0]!r}?" if close else "")
                               + f" (datasets: {', '.join(known)}; files end in .npy, .csv or .txt)")
    return load(name).counts


def _column_histogram(args):
    """``--column C --bins SPEC [--user-id U --max-contributions K]``: a column of records (CSV, Parquet, .npy),
    binned by :func:`dphist.histogram` (the release records the spec and the privacy unit)."""
    from .records import histogram
    if args.records or args.domain or args.clip:
        raise InvalidParameter("--column reads a column of records; --records, --domain and --clip belong to "
                               "one-value-per-line files (give the domain in --bins, e.g. 0:24:1)")
    if not args.bins:
        raise InvalidParameter("--column needs --bins: a public binning spec such as 0:24:1 (lo:hi:width)")
    columns, specs = list(args.column), list(args.bins)
    if len(columns) > 2 or len(specs) != len(columns):
        raise InvalidParameter(f"--column is given {len(columns)} time(s) and --bins {len(specs)}: give one column "
                               "and one spec for a 1-D histogram, two of each (in the same order) for a 2-D one")
    return histogram(args.input, columns[0] if len(columns) == 1 else tuple(columns),
                     specs[0] if len(specs) == 1 else tuple(specs), user_id=args.user_id,
                     max_contributions=args.max_contributions, seed=args.seed)


def _bin_count(bins):
    """``--bins`` for ``--records``: a number of equal-width bins (a spec such as 0:24:1 needs --column)."""
    if bins is None:
        return None
    if len(bins) > 1:
        raise InvalidParameter("--bins is given more than once; with --records it takes one number of bins")
    bins = bins[0]
    try:
        return int(bins)
    except ValueError:
        raise InvalidParameter(f"--bins {bins!r} with --records takes a number of bins; a binning spec "
                               "needs --column") from None


def _output_header(release, name: str) -> str:
    """Comment lines for an output file: mode, algorithm, epsilon, warnings (never a seed in release mode),
    and for a histogram of records its privacy unit and binning spec."""
    lines = [f"dphist {release.mode} mode: {name}, epsilon={release.epsilon:g}, noise={release.noise}"]
    if release.binning is not None:
        import json
        lines.append(f"privacy unit: {release.privacy_unit}")
        lines.append("bins: " + json.dumps({k: release.binning[k] for k in ("column", "bins", "shape", "user_id")}))
    if release.mode == "research":
        lines.append(f"research mode (seed {release.seed}): reproducible from the seed; do not publish")
    lines += [f"warning: {w}" for w in release.warnings]
    return "\n".join(lines)


# ----------------------------------------------------------------- warm
def cmd_warm(args) -> int:
    """Fill numba's cache: every available preset once, in research and in release mode, spread over
    ``--jobs`` processes (``dphist.warm``; ``make install`` runs this)."""
    import time

    from .cache import numba_cache_dir
    from .warm import warm

    if args.jobs is not None and args.jobs < 1:
        raise InvalidParameter(f"--jobs must be at least 1, got {args.jobs}")
    if args.bins < 2:
        raise InvalidParameter(f"--bins must be at least 2, got {args.bins}")
    start = time.perf_counter()
    names = warm(args.bins, args.jobs)
    print(f"dphist warm: {len(names)} presets compiled into {numba_cache_dir()} in "
          f"{time.perf_counter() - start:.1f} s", file=sys.stderr)
    return 0


# ----------------------------------------------------------------- demo
def cmd_demo(args) -> int:
    from .experiments import cli as exp_cli
    return exp_cli.demo(args)


def _import_prototypes(names: list[str]) -> None:
    """``--import``: the modules are searched in the current folder too (as ``python -m`` does; last,
    so a prototype never shadows an installed module); worker processes inherit the path."""
    import os
    from .registry import import_modules
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.append(os.getcwd())
    import_modules(names, where="--import")


# ----------------------------------------------------------------- main
def _configure_list(s: argparse.ArgumentParser) -> None:
    from .registry import GROUPS
    s.add_argument("--kind", help=f"one of {', '.join(GROUPS)}")
    s.add_argument("--no-import", action="store_true", help="read metadata only (skip import checks)")
    s.add_argument("--dims", type=int, metavar="D",
                   help="only the presets that run on D-dimensional histograms (e.g. 2 for grids)")
    s.set_defaults(func=cmd_list)


def _configure_describe(s: argparse.ArgumentParser) -> None:
    from .registry import GROUPS
    s.add_argument("name")
    s.add_argument("--kind", choices=list(GROUPS))
    s.set_defaults(func=cmd_describe)


def _configure_run(s: argparse.ArgumentParser) -> None:
    s.add_argument("--algorithm", "-a", required=True)
    s.add_argument("--input", "-i", required=True, help="a dataset name (flights-dep-minute, the 2-D "
                   "flights-delays, a DPBench name under --data-dir), or "
                   ".npy (a vector, or a 2-D grid of counts), .csv or .txt "
                   "(one count per line)")
    s.add_argument("--epsilon", "-e", required=True)
    s.add_argument("--seed", type=int, help="research mode: reproducible from the seed, never for publication "
                   "(default: release mode, exact noise from the operating system)")
    s.add_argument("--noise", choices=["exact", "float"],
                   help="exact discrete samplers (release mode's only choice) or seeded float Laplace "
                        "(research mode's default)")
    s.add_argument("--output", "-o", help=".npy, .csv or .txt; stdout when omitted")
    s.add_argument("--force", action="store_true", help="overwrite an existing output file")
    s.add_argument("--records", action="store_true", help="the input lists one record value per line")
    s.add_argument("--domain", help="public domain LO:HI for --records")
    s.add_argument("--bins", action="append", help="with --column: a public binning spec (twice, in order, with "
                   "two --column for a 2-D histogram: 0:24:1 = lo:hi:width, lo:hi/n, "
                   "int:lo..hi, 2013-01-01:2014-01-01:1d); with --records: a number of equal-width bins")
    s.add_argument("--column", action="append", help="bin this column of a CSV, Parquet or .npy file of records "
                   "(dphist.histogram); twice for a 2-D histogram of two columns (run by 2-D presets)")
    s.add_argument("--user-id", help="with --column: the person column; each person keeps at most "
                   "--max-contributions records (person-level privacy; default: record level)")
    s.add_argument("--max-contributions", type=int, help="records kept per person (with --user-id)")
    s.add_argument("--clip", action="store_true", help="clip records outside the domain to its ends")
    s.add_argument("--param", action="append", metavar="[STAGE.]NAME=VALUE",
                   help="a preset parameter (gamma_in=0.5) or a component's (partitioner.bucket_penalty=2); "
                        "values are Python literals, else strings; repeatable; see `dphist describe NAME`")
    s.set_defaults(func=cmd_run)


def _configure_warm(s: argparse.ArgumentParser) -> None:
    s.add_argument("--bins", type=int, default=256, help="bins of the synthetic histogram (default 256)")
    s.add_argument("--jobs", "-j", type=int, help="processes compiling at once (default: the cores available)")
    s.set_defaults(func=cmd_warm)


def _configure_demo(s: argparse.ArgumentParser) -> None:
    from .experiments import cli as exp
    exp.configure_demo(s)
    s.set_defaults(func=cmd_demo)


def _configure_bench(s: argparse.ArgumentParser) -> None:
    from .experiments import cli as exp
    exp.configure_bench(s)
    s.set_defaults(func=exp.bench)


def _configure_audit(s: argparse.ArgumentParser) -> None:
    from .audit import cli as audit_cli   # imports the auditor (scipy.stats): only for `dphist audit`
    audit_cli.configure(s)


def _configure_bounds(s: argparse.ArgumentParser) -> None:
    from .records import cli as records_cli
    records_cli.configure(s)


#: the subcommands: name -> (one-line help, the function adding its options).  Each command's options are
#: added only when that command runs (or on ``build_parser()``), so ``dphist --help`` and ``dphist run``
#: never import what ``dphist audit`` or ``dphist bench`` need
COMMANDS = {
    "list": ("registered components, presets and datasets, and broken plugins", _configure_list),
    "describe": ("parameters, budget shares and citation of a name", _configure_describe),
    "run": ("publish a histogram file with a preset", _configure_run),
    "warm": ("compile numba's kernels into the per-user cache (every preset once; make install runs it)",
             _configure_warm),
    "demo": ("run the default benchmark and write report/", _configure_demo),
    "bench": ("run an experiment sweep (TOML config or flags)", _configure_bench),
    "audit": ("statistical privacy audit of presets (lower bound on epsilon)", _configure_audit),
    "bounds": ("propose a column's domain privately (spends epsilon)", _configure_bounds),
}


def build_parser(commands=None) -> argparse.ArgumentParser:
    """The ``dphist`` parser with the options of ``commands`` (names of :data:`COMMANDS`; every command when
    None); the other subcommands are listed (name and help) without their options."""
    p = argparse.ArgumentParser(prog="dphist", description="Differentially private histograms.")
    p.add_argument("--version", action="version", version=f"dphist {__version__}")
    p.add_argument("--data-dir", action="append", metavar="DIR",
                   help="a folder whose .npy histograms become datasets (repeatable; also DPHIST_DATA)")
    p.add_argument("--import", dest="imports", action="append", metavar="MODULE",
                   help="import MODULE (from the current folder or PYTHONPATH) before the command, so its "
                        "runtime registrations are usable by every command (repeatable; bench and demo "
                        "workers import it too)")
    sub = p.add_subparsers(dest="command", required=True)
    for name, (help_text, configure) in COMMANDS.items():
        if commands is None or name in commands:
            configure(sub.add_parser(name, help=help_text))
        else:   # listed only: its options (and their -h) are added when it is the command
            sub.add_parser(name, help=help_text, add_help=False)
    return p


def _command_of(argv) -> str:
    """The subcommand ``argv`` names, read by the parser without any command's options (``dphist -h``,
    ``--version`` and a missing or unknown command end here, as with the full parser)."""
    args, _ = build_parser(commands=()).parse_known_args(argv)
    return args.command


#: exit status when the reader of standard output went away (``dphist list | head -2``): 128 + SIGPIPE,
#: what a Unix tool killed by SIGPIPE reports (``set -o pipefail`` shows it; plain pipelines show the reader's)
EXIT_BROKEN_PIPE = 141


def main(argv=None) -> int:
    parser = build_parser(commands=(_command_of(argv),))
    args = parser.parse_args(argv)
    try:
        if args.imports:   # a prototype's registrations, before any name is looked up
            _import_prototypes(args.imports)
        if args.data_dir:
            from .datasets.files import add_data_dir
            for d in args.data_dir:
                add_data_dir(d)
        code = int(args.func(args) or 0)
        sys.stdout.flush()   # a closed pipe shows here, not in the interpreter's exit flush
        return code
    except (DPHistError, FileNotFoundError) as exc:
        print(f"dphist: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return _quiet_broken_pipe()


def _quiet_broken_pipe() -> int:
    """The reader of stdout has gone: point stdout at /dev/null, so the exit flush stays quiet, and exit 141."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):   # stdout without a file descriptor (captured)
        pass
    return EXIT_BROKEN_PIPE


if __name__ == "__main__":
    sys.exit(main())
