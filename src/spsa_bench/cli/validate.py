"""``spsa-bench validate``: macro-versus-micro validation of the configured arms,
each with its own hyperparameters; exit status 1 if a gate fails.

``--optimizer`` names are read as ``simulate`` reads them
(:func:`spsa_bench.cli.arm_names.arm_for`): an arm, a sweep (its hand-set value, said on
stderr), a registered kind (its defaults, said on stderr), else one line with the
closest names. Files of the same names in ``--output`` are refused without ``--force``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from spsa_bench.cli.common import add_config, bounded_int, load
from spsa_bench.cli.overwrite import add_force_dir, refuse_existing_files
from spsa_bench.config.limits import MAX_SEED

#: Most reports and largest report of a validation (its arrays grow with their product).
MAX_REPORTS = 100_000
MAX_REPORT_PAIRS = 100_000


def add_parser(sub) -> None:
    p = sub.add_parser(
        "validate",
        help="macro-versus-micro validation of the configured optimizer arms (NetCDF, figure, "
        "gap table); exits 1 if a gate fails",
    )
    add_config(p)
    p.add_argument(
        "--optimizer",
        default="all",
        help="comma-separated arm names of the config, or all: every arm of the config "
        "(default: all); a sweep's name runs its hand-set value, a registered kind's name "
        "not in the config that kind with its defaults (each said on stderr)",
    )
    p.add_argument(
        "--output",
        required=True,
        help="directory for <arm>.nc, <arm>.png/.svg and <arm>_gaps.csv",
    )
    add_force_dir(p, "--output")
    p.add_argument(
        "--seed",
        type=bounded_int("--seed", 0, MAX_SEED),
        default=0,
        help="seed of the synthetic report sequence (default: 0)",
    )
    p.add_argument(
        "--reports",
        type=bounded_int("--reports", 1, MAX_REPORTS),
        default=200,
        help=f"number of reports, at most {MAX_REPORTS:,} (default: 200)",
    )
    p.add_argument(
        "--sizes",
        default="uniform",
        choices=("uniform", "pow2", "fixed"),
        help="report sizes: uniform (1..max), pow2 or fixed (default: uniform)",
    )
    p.add_argument(
        "--max-pairs",
        type=bounded_int("--max-pairs", 1, MAX_REPORT_PAIRS),
        default=128,
        help=f"largest report size in pairs, at most {MAX_REPORT_PAIRS:,} (default: 128)",
    )
    p.add_argument("--shuffle", action="store_true", help="shuffle the report order")
    p.add_argument("--quiet", action="store_true", help="report only skipped arms and failures")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from spsa_bench.cli.arm_names import arm_for
    from spsa_bench.optimizers import get_spec
    from spsa_bench.results.atomic import OutputPathError
    from spsa_bench.validation.files import output_names
    from spsa_bench.validation.run import validate_arms

    if not args.output.strip() or Path(args.output).exists() and not Path(args.output).is_dir():
        raise OutputPathError(f"--output = {args.output!r}: must name a directory")
    config = load(args)
    if args.optimizer == "all":
        names = list(config.optimizers)
    else:
        names = []
        for given in args.optimizer.split(","):
            config, name = arm_for(config, given, quiet=args.quiet)
            names.append(name)
    written = [
        Path(args.output) / file
        for name in names
        if get_spec(config.optimizers[name].kind).micro is not None  # a skipped kind writes none
        for file in output_names(name)
    ]
    refuse_existing_files(written, args.force, "--output")
    outcomes = validate_arms(
        config,
        names,
        args.output,
        seed=args.seed,
        n_reports=args.reports,
        sizes=args.sizes,
        max_pairs=args.max_pairs,
        shuffle=args.shuffle,
    )
    for outcome in outcomes:
        if not args.quiet or not outcome.passed or outcome.skipped:
            print(outcome.line(), file=sys.stderr)
    failed = [outcome.name for outcome in outcomes if not outcome.passed]
    if failed:
        print(f"spsa-bench: validation gate failed for {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0
