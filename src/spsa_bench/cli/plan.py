"""``spsa-bench plan``: paste a Fishtest (or, with ``--framework openbench``, an
OpenBench) parameter block, get the tune's predicted outcome and better settings before
spending the games (:mod:`spsa_bench.plan`).

Writes ``plan.md`` (also printed), ``plan.nc`` and ``plan.png`` into ``--output``, then
``plan.sha256`` (their checksums: the set is complete).
A block the framework would refuse is refused naming the line and the field, with
nothing written (exit 2); so is an option of the other framework, naming the flag.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from spsa_bench.cli.common import Progress, bounded_int
from spsa_bench.model.time_control import TIME_CONTROLS


def _number(flag: str, low: float = -math.inf, high: float = math.inf, open_low=False):
    """An argparse ``type``: a finite number in ``[low, high]`` (``(low, high]`` if
    ``open_low``); errors name ``flag``."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        below = value <= low if open_low else value < low
        if not math.isfinite(value) or below or value > high:
            bounds = f"{'(' if open_low else '['}{low:g}, {high:g}]"
            raise argparse.ArgumentTypeError(f"{text} is outside {bounds}")
        return value

    parse.__name__ = flag
    return parse


def _multipliers(flag: str, high: float = math.inf):
    """An argparse ``type``: comma-separated finite multipliers in ``(0, high]``, e.g.
    ``0.5,1,2``."""
    one = _number(flag, 0.0, high, open_low=True)

    def parse(text: str) -> tuple[float, ...]:
        return tuple(one(part) for part in text.split(","))

    parse.__name__ = flag
    return parse


def add_parser(sub) -> None:
    from spsa_bench.plan import spec as plan

    p = sub.add_parser(
        "plan",
        help="predict a Fishtest or OpenBench SPSA tune from its parameter block and search "
        "better settings",
        description="Simulate a Fishtest (or OpenBench) SPSA tune on many instances of a "
        "prior over the unknown truth and write DIR/plan.md (also printed), DIR/plan.nc and "
        "DIR/plan.png, then DIR/plan.sha256, their checksums, which marks the set "
        "complete. docs/plan.md explains the output.",
    )
    p.add_argument(
        "params",
        metavar="PARAMS",
        help="the parameter block, one name,start,min,max,c_end,r_end line per parameter "
        "(what Fishtest's new-test page takes; with --framework openbench one "
        "name,int|float,start,min,max,c_end,r_end line, OpenBench's tune form): a file, or "
        "- for standard input",
    )
    p.add_argument(
        "--framework",
        choices=plan.FRAMEWORKS,
        default=plan.FISHTEST_FRAMEWORK,
        help="the testing framework whose SPSA, block format, rounding and dispatch are "
        "simulated (default %(default)s)",
    )
    p.add_argument(
        "--games",
        type=bounded_int("--games", 1000, 3_200_000),
        default=plan.DEFAULT_GAMES,
        help="the tune's games (default %(default)s)",
    )
    p.add_argument(
        "--time-control",
        choices=tuple(TIME_CONTROLS),
        default="STC",
        help="game noise, Autoselect's draw ratio and OpenBench's game durations "
        "(default %(default)s)",
    )
    p.add_argument(
        "--batch-mode",
        default=None,
        help="Fishtest only: a batch mode of the packaged default configuration: sync "
        "(default), async-fixed or async-variable (Fishtest's many workers and staleness)",
    )
    p.add_argument(
        "--seeds",
        type=bounded_int(
            "--seeds", 2, 100_000, " (plan's --seeds is a count of instances, e.g. 400)"
        ),
        default=plan.DEFAULT_SEEDS,
        help="instances simulated, seeds 0..N-1 (default %(default)s)",
    )
    p.add_argument(
        "--output",
        default="plan",
        metavar="DIR",
        help="directory for plan.md, plan.nc, plan.png and plan.sha256 (default %(default)s)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    _add_gain_options(
        p.add_argument_group(
            "the tune's SPSA gains, as Fishtest's and OpenBench's forms take them (docs/plan.md)"
        )
    )
    _add_openbench_options(
        p.add_argument_group("OpenBench only (--framework openbench; docs/plan.md)")
    )
    _add_prior_options(p.add_argument_group("the prior over the unknown truth (docs/plan.md)"))
    _add_search_options(p.add_argument_group("the search of better settings (1 is always in)"))
    p.set_defaults(func=run)


def _add_gain_options(gains) -> None:
    """The spsa arm's A (as a share of the iterations), alpha and gamma; Autoselect keeps
    its own constant gains."""
    from spsa_bench.plan import spec as plan

    for flag, default, bounds, what in (
        (
            "--a-ratio",
            plan.DEFAULT_A_RATIO,
            plan.A_RATIO_BOUNDS,
            "A = ratio x N, N = games / 2 iterations (Fishtest's SPSA A ratio; OpenBench's "
            "A-Ratio with N = games / (2 pairs-per))",
        ),
        (
            "--alpha",
            plan.DEFAULT_ALPHA,
            plan.ALPHA_BOUNDS,
            "decay exponent of a_k = a / (A + k)^alpha",
        ),
        ("--gamma", plan.DEFAULT_GAMMA, plan.GAMMA_BOUNDS, "decay exponent of c_k = c / k^gamma"),
    ):
        gains.add_argument(
            flag,
            type=_number(flag, *bounds),
            default=default,
            help=f"{what}, in [{bounds[0]:g}, {bounds[1]:g}] (default %(default)s)",
        )


def _openbench_defaults() -> dict:
    """The OpenBench-only flags' destinations and defaults (OpenBench's tune form and the
    assumed pool, :mod:`spsa_bench.plan.spec`). Their argparse default is None, "not
    given", so a Fishtest plan can refuse them by name."""
    from spsa_bench.plan import spec as plan

    return {
        "pairs_per": plan.OPENBENCH_PAIRS_PER,
        "distribution": "single",
        "reporting": plan.DEFAULT_REPORTING,
        "machines": plan.DEFAULT_MACHINES,
        "concurrency": plan.DEFAULT_CONCURRENCY,
    }


def _add_openbench_options(group) -> None:
    """OpenBench's Pairs-Per and Distribution (its tune form's defaults), and the pool
    of machines the planner assumes."""
    from spsa_bench.plan import spec as plan

    _add_openbench_count(
        group,
        "--pairs-per",
        "P",
        f"OpenBench's Pairs-Per: game pairs per runner and iteration (default "
        f"{plan.OPENBENCH_PAIRS_PER}, the form's)",
    )
    group.add_argument(
        "--distribution",
        choices=plan.DISTRIBUTIONS,
        default=None,
        help="OpenBench's Distribution: single, one perturbation per workload (default, the "
        "form's); multiple, one per runner of a machine",
    )
    group.add_argument(
        "--reporting",
        choices=plan.REPORTINGS,
        default=None,
        help="OpenBench's Reporting: bulk, once at the end of a workload (default; about 8 "
        "times faster to simulate); batched, what has finished every 30 s (the form's default)",
    )
    _add_openbench_count(
        group,
        "--machines",
        "W",
        f"machines running the tune, one workload each at a time (default "
        f"{plan.DEFAULT_MACHINES}; an assumption)",
    )
    _add_openbench_count(
        group,
        "--concurrency",
        "C",
        f"games each machine plays at once (default {plan.DEFAULT_CONCURRENCY}; an assumption)",
    )


def _add_openbench_count(group, flag: str, metavar: str, text: str) -> None:
    """An OpenBench-only count ``flag``: a whole number in [1, 10,000], refused naming
    the flag; its argparse default is None, "not given" (:func:`_openbench_defaults`)."""
    group.add_argument(
        flag, type=bounded_int(flag, 1, 10_000), default=None, metavar=metavar, help=text
    )


def check_framework_flags(args: argparse.Namespace) -> None:
    """Refuse a flag of the other framework, naming it: ``--batch-mode`` is Fishtest's
    (packaged Fishtest batch modes), the OpenBench group OpenBench's."""
    from spsa_bench.config.loader import ConfigError

    if args.framework == "openbench":
        if args.batch_mode is not None:
            raise ConfigError(
                f"--batch-mode = {args.batch_mode!r}: Fishtest only; an OpenBench plan runs "
                "OpenBench's dispatch (--distribution, --reporting, --pairs-per, --machines, "
                "--concurrency)"
            )
        return
    for key in _openbench_defaults():
        if getattr(args, key) is not None:
            flag = "--" + key.replace("_", "-")
            raise ConfigError(
                f"{flag} = {getattr(args, key)}: OpenBench only; give --framework openbench"
            )


def _add_prior_options(prior) -> None:
    """The options of :class:`~spsa_bench.model.instances.TruthPrior`, its defaults."""
    from spsa_bench.model import instances

    prior.add_argument(
        "--prior",
        choices=PRIOR_KINDS,
        default=None,
        help="calibrated: the prior fitted to real Stockfish tunes (docs/calibration.md; "
        "the default); assumed: the hand-set prior the five options below adjust (the "
        "default as soon as one of them is given)",
    )
    prior.add_argument(
        "--offset-scale",
        type=_number("--offset-scale", 0.0),
        default=None,
        help="assumed prior: the optimum's offset from the start, in c_end (default "
        f"{instances.DEFAULT_OFFSET['scale']:g})",
    )
    prior.add_argument(
        "--offset-distribution",
        choices=instances.DISTRIBUTIONS,
        default=None,
        help="assumed prior: normal: scale x N(0, 1); uniform: U(-scale, scale); fixed: "
        f"+-scale (default {instances.DEFAULT_OFFSET['distribution']})",
    )
    prior.add_argument(
        "--elo-per-c-end",
        nargs="+",
        metavar="ELO",
        type=_number("--elo-per-c-end", 0.0, open_low=True),
        default=None,
        help="assumed prior: Elo lost one c_end from the optimum: a value, or MIN MAX drawn "
        "log-uniformly per parameter (default 0.02 0.2)",
    )
    prior.add_argument(
        "--inactive-fraction",
        type=_number("--inactive-fraction", 0.0, 1.0),
        default=None,
        help="assumed prior: share of parameters with no effect (default "
        f"{instances.DEFAULT_INACTIVE_FRACTION:g})",
    )
    prior.add_argument(
        "--interaction",
        type=_number("--interaction", 0.0, 1.0),
        default=None,
        help="assumed prior: 0, an axis-aligned bowl; up to 1: pairwise rotations up to 45 "
        f"degrees (default {instances.DEFAULT_INTERACTION:g})",
    )
    prior.add_argument(
        "--time-control-shift",
        type=_number("--time-control-shift", 0.0, 100.0),
        default=None,
        metavar="SPREAD",
        help="either prior: each active optimum moves SPREAD x N(0, 1) c_end per time-control "
        "step (STC, LTC, VLTC) away from --time-control's; plan.md then gives P(gain > 0) "
        "at the other time controls. An assumption: the corpus does not identify it "
        "(docs/plan.md, 'Another time control'; default: none, one truth everywhere)",
    )


#: The planner's priors: the calibrated one (default) and the hand-set one.
PRIOR_KINDS = ("calibrated", "assumed")
_ASSUMED_FLAGS = (
    ("offset_scale", "--offset-scale"),
    ("offset_distribution", "--offset-distribution"),
    ("elo_per_c_end", "--elo-per-c-end"),
    ("inactive_fraction", "--inactive-fraction"),
    ("interaction", "--interaction"),
)


def prior_of(args: argparse.Namespace):
    """``(TruthPrior, source)`` of the command line: the calibrated prior and its
    statement, or the assumed prior with the given options (module defaults for the
    others); an assumed-prior option with ``--prior calibrated`` is refused."""
    from spsa_bench.config.loader import ConfigError
    from spsa_bench.model import instances
    from spsa_bench.model.calibrated import calibrated_statement, calibrated_truth
    from spsa_bench.model.instances import TruthPrior

    given = _assumed_flags_given(args)
    if _prior_kind(args) == "calibrated":
        if given:
            raise ConfigError(
                f"{given[0]}: sets the assumed prior; drop it or give --prior assumed"
            )
        prior = TruthPrior.from_mapping(calibrated_truth())
        return _with_shift(prior, args), f"calibrated: {calibrated_statement()}"
    elo = args.elo_per_c_end or [
        instances.DEFAULT_ELO_PER_C_END["min"],
        instances.DEFAULT_ELO_PER_C_END["max"],
    ]
    if len(elo) > 2 or elo[0] > elo[-1]:
        raise ConfigError(f"--elo-per-c-end = {elo}: give one value or MIN MAX with MIN <= MAX")

    def value(key, default):
        return default if getattr(args, key) is None else getattr(args, key)

    prior = TruthPrior(
        offset_distribution=value("offset_distribution", instances.DEFAULT_OFFSET["distribution"]),
        offset_scale=value("offset_scale", instances.DEFAULT_OFFSET["scale"]),
        elo_min=elo[0],
        elo_max=elo[-1],
        inactive_fraction=value("inactive_fraction", instances.DEFAULT_INACTIVE_FRACTION),
        interaction=value("interaction", instances.DEFAULT_INTERACTION),
    )
    return _with_shift(prior, args), (
        "assumed: the hand-set prior of docs/plan.md, not fitted to any tune"
    )


def _assumed_flags_given(args: argparse.Namespace) -> list[str]:
    """The assumed prior's options given on the command line, as flags."""
    return [flag for key, flag in _ASSUMED_FLAGS if getattr(args, key) is not None]


def _prior_kind(args: argparse.Namespace) -> str:
    """``--prior``, else assumed when an assumed-prior option is given, else calibrated."""
    return args.prior or ("assumed" if _assumed_flags_given(args) else "calibrated")


def prior_draws_of(args: argparse.Namespace) -> tuple:
    """The calibration's accepted draws as priors (each with ``--time-control-shift``'s
    spread, as :func:`prior_of`'s), from which the planner draws its instances: the
    posterior predictive; none for the assumed prior (its instances come from the one
    prior)."""
    from spsa_bench.model.calibrated import calibrated_truths
    from spsa_bench.model.instances import TruthPrior

    if _prior_kind(args) != "calibrated":
        return ()
    return tuple(_with_shift(TruthPrior.from_mapping(t), args) for t in calibrated_truths())


def _with_shift(prior, args: argparse.Namespace):
    """``prior`` with ``--time-control-shift``'s spread, tuned at ``--time-control`` (the
    prior unchanged without the flag)."""
    import dataclasses

    spread = getattr(args, "time_control_shift", None)
    if spread is None:
        return prior
    return dataclasses.replace(prior, tc_spread=spread, tc_tuned_at=args.time_control)


def _add_search_options(search) -> None:
    """The multipliers of the search and the recommendation's margin."""
    from spsa_bench.plan import spec as plan

    for flag, default, what, high in (
        ("--c-scales", plan.DEFAULT_C_SCALES, "c_end", math.inf),
        ("--r-scales", plan.DEFAULT_R_SCALES, "r_end", math.inf),
        ("--games-scales", plan.DEFAULT_GAMES_SCALES, "the games budget", plan.MAX_GAMES_SCALE),
    ):
        search.add_argument(
            flag,
            type=_multipliers(flag, high),
            default=default,
            metavar="X,Y,...",
            help=f"multipliers on {what} (default {','.join(f'{v:g}' for v in default)})",
        )
    search.add_argument(
        "--margin",
        type=_number("--margin", 0.0),
        default=plan.DEFAULT_MARGIN,
        help="recommend the cheapest setting within this many Elo of the best "
        "expected gain (default %(default)s)",
    )


def spec_of(args: argparse.Namespace):
    """The :class:`~spsa_bench.plan.spec.PlanSpec` of the command line; a malformed block
    names its line and field."""
    from spsa_bench.config.param_block import BlockError, printable_text, read_block_text
    from spsa_bench.plan.spec import (
        DEFAULT_BATCH_MODE,
        PlanSpec,
        check_batch_mode,
        parse_framework_block,
    )

    check_framework_flags(args)
    source = "standard input" if args.params == "-" else args.params
    try:
        text = read_block_text(sys.stdin.buffer if args.params == "-" else args.params)
        parse_framework_block(args.framework, text)
    except BlockError as error:
        raise BlockError(f"PARAMS {source}: {error}") from None
    batch_mode = DEFAULT_BATCH_MODE if args.batch_mode is None else args.batch_mode
    if args.framework == "fishtest":
        check_batch_mode(batch_mode)
    openbench = {
        key: default if getattr(args, key) is None else getattr(args, key)
        for key, default in _openbench_defaults().items()
    }
    prior, prior_source = prior_of(args)
    draws = prior_draws_of(args)
    if draws:
        prior_source += (
            f"; the instances are its posterior predictive: instance s drawn from accepted "
            f"draw s mod {len(draws)}, so the plan's spread includes the fit's uncertainty"
        )
    return PlanSpec(
        block_text=text,
        games=args.games,
        time_control=args.time_control,
        batch_mode=batch_mode,
        seeds=args.seeds,
        prior=prior,
        prior_source=prior_source,
        prior_draws=draws,
        c_scales=args.c_scales,
        r_scales=args.r_scales,
        games_scales=args.games_scales,
        margin=args.margin,
        a_ratio=args.a_ratio,
        alpha=args.alpha,
        gamma=args.gamma,
        source=printable_text(Path(source).name) if args.params != "-" else source,
        framework=args.framework,
        **openbench,
    )


def check_plan_memory(spec) -> None:
    """Refuse a plan whose kept trajectories and largest run exceed the machine's memory."""
    from spsa_bench.config.limits import check_memory, run_bytes
    from spsa_bench.plan.spec import budgets

    games, _ = budgets(spec)
    params = len(spec.block)
    runs = len(spec.c_scales) * len(spec.r_scales) * len(games) + 4
    kept = runs * spec.seeds * spec.checkpoints * (params + 1) * 8 * 2  # and the dataset's copy
    largest = run_bytes(spec.seeds, max(games) // 2, spec.checkpoints, params)
    check_memory(f"--seeds: {spec.seeds:,} instances x {runs} runs", kept + largest)


def run(args: argparse.Namespace) -> int:
    from spsa_bench.plan.output import MARKER, output_paths
    from spsa_bench.plan.run import run_plan
    from spsa_bench.plan.spec import check_plan_size

    paths = output_paths(args.output, None if args.params == "-" else args.params)
    spec = spec_of(args)
    check_plan_size(spec)
    check_plan_memory(spec)
    ds = run_plan(spec, progress=Progress("plan", args.quiet))
    markdown = write_plan(ds, paths[0].parent)
    print(markdown, end="")
    if not args.quiet:
        written = ", ".join(str(p) for p in [*paths, paths[0].parent / MARKER])
        print(f"plan: wrote {written}", file=sys.stderr)
    return 0


def write_plan(ds, directory) -> str:
    """``plan.md``, ``plan.nc`` and ``plan.png`` in ``directory``, written as one set
    with its marker ``plan.sha256`` (:func:`spsa_bench.plan.output.write_set`);
    returns the Markdown."""
    import matplotlib

    matplotlib.use("Agg")  # the command line draws to files: no display, the same bytes
    import matplotlib.pyplot as plt

    from spsa_bench.plan.figure import plan_figure
    from spsa_bench.plan.output import write_set
    from spsa_bench.plan.summary import plan_markdown
    from spsa_bench.results.atomic import write_atomic

    markdown = plan_markdown(ds)
    figure = plan_figure(ds)
    try:
        write_set(
            directory,
            {
                "plan.md": lambda path: Path(path).write_text(markdown),
                "plan.nc": lambda path: write_atomic(ds, path),
                "plan.png": lambda path: figure.savefig(path, format="png", dpi=110),
            },
        )
    finally:
        plt.close(figure)
    return markdown
