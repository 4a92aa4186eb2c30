"""The ``spsa-bench`` command line."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from spsa_bench import __version__
from spsa_bench.config.loader import ConfigError, load_config, parse_seed_range

DEFAULT_CONFIG = "config/config.yaml"


class Progress:
    """Progress on stderr for work that takes more than a second; silent with --quiet."""

    def __init__(self, label: str, quiet: bool):
        self.label = label
        self.quiet = quiet
        self.start = time.monotonic()
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        if self.quiet:
            return
        elapsed = time.monotonic() - self.start
        if elapsed < 1.0 and done < total:
            return
        if done >= total and not self.shown:
            return  # finished within a second: say nothing
        self.shown = True
        percent = 100.0 * done / max(total, 1)
        end = "\n" if done >= total else ""
        prefix = "\r" if sys.stderr.isatty() else ""
        if not sys.stderr.isatty() and done < total:
            end = "\n"
        print(
            f"{prefix}{self.label}: {percent:5.1f}% ({done}/{total} reports, {elapsed:.1f} s)",
            end=end,
            file=sys.stderr,
            flush=True,
        )


def _add_config(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config", default=DEFAULT_CONFIG, help=f"YAML configuration (default: {DEFAULT_CONFIG})"
    )


def cmd_simulate(args: argparse.Namespace) -> int:
    from spsa_bench.engine.simulate import simulate
    from spsa_bench.results.atomic import write_atomic

    config = load_config(args.config)
    seeds = parse_seed_range(args.seeds) if args.seeds else config.seed_range()
    config.optimizer(args.optimizer)
    config.batch_mode(args.batch_mode)
    config.scenario(args.scenario)
    label = (
        f"{args.optimizer}/{args.batch_mode}/{args.scenario} seeds {seeds.start}-{seeds.stop - 1}"
    )
    ds = simulate(
        config,
        optimizer=args.optimizer,
        batch_mode=args.batch_mode,
        scenario=args.scenario,
        seeds=seeds,
        progress=Progress(label, args.quiet),
    )
    path = write_atomic(ds, args.output)
    if not args.quiet:
        loss = ds["elo_loss"].isel(pairs=-1)
        gap = float(ds.attrs["peak_elo"] - ds.attrs["start_elo"])
        print(
            f"{label}: final Elo loss mean {float(loss.mean()):.3f} (start gap {gap:.3f}, "
            f"{100 * (1 - float(loss.mean()) / gap):.1f}% recovered) -> {path}",
            file=sys.stderr,
        )
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    import dataclasses

    from spsa_bench.optimizers import REGISTRY

    config = load_config(args.config)
    print("optimizers:")
    for name, arm in config.optimizers.items():
        values = ", ".join(
            f"{f.name}={getattr(arm.hyper, f.name)}" for f in dataclasses.fields(arm.hyper)
        )
        print(f"  {name:<18} kind={arm.kind}  {values}")
    print("batch modes:")
    for name, mode in config.batch_modes.items():
        kind = "sync" if mode.is_sync else "async"
        size = f"batch {mode.batch_size}" if mode.batch == "fixed" else "variable batch"
        print(f"  {name:<18} {kind}, {mode.workers} worker(s), {size}")
    print("scenarios:")
    for name, scenario in config.scenarios.items():
        count = sum(g["count"] for g in scenario["groups"])
        print(
            f"  {name:<18} {count} params, start_elo {scenario['start_elo']}: {scenario.get('description', '')}"
        )
    print(
        f"seeds: {config.seeds_first}..{config.seeds_first + config.seeds_count - 1} ({config.seeds_per_job} per job)"
    )
    print("optimizer kinds available:")
    for kind, spec in REGISTRY.items():
        print(f"  {kind:<18} {spec.description}")
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    from spsa_bench.config.schema import SCHEMA_PATH, schema_yaml

    text = schema_yaml()
    if args.write:
        SCHEMA_PATH.parent.mkdir(parents=True, exist_ok=True)
        tmp = SCHEMA_PATH.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.replace(SCHEMA_PATH)
        print(f"wrote {SCHEMA_PATH}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from spsa_bench.engine.bench import run_bench

    config = load_config(args.config)
    seed_counts = [int(x) for x in args.seeds.split(",")]
    optimizers = args.optimizers.split(",") if args.optimizers else ["spsa"]
    if optimizers == ["all"]:
        optimizers = list(config.optimizers)
    modes = args.batch_modes.split(",") if args.batch_modes else ["sync"]
    if modes == ["all"]:
        modes = list(config.batch_modes)
    for name in optimizers:
        config.optimizer(name)
    for name in modes:
        config.batch_mode(name)
    run_bench(
        config,
        seed_counts=seed_counts,
        optimizers=optimizers,
        batch_modes=modes,
        scenario=args.scenario,
        repeats=args.repeats,
    )
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from spsa_bench.optimizers import REGISTRY
    from spsa_bench.validation.gates import validate

    kinds = list(REGISTRY) if args.optimizer == "all" else [args.optimizer]
    for kind in kinds:
        if kind not in REGISTRY:
            raise ConfigError(
                f"--optimizer = {kind!r}: unknown optimizer kind; known: {', '.join(REGISTRY)}, all"
            )
    for kind in kinds:
        written = validate(
            kind,
            Path(args.output),
            seed=args.seed,
            n_reports=args.reports,
            sizes=args.sizes,
            max_pairs=args.max_pairs,
            shuffle=args.shuffle,
        )
        if not args.quiet:
            print(
                f"validate {kind}: " + ", ".join(str(p) for p in written.values()), file=sys.stderr
            )
    return 0


def cmd_schedule(args: argparse.Namespace) -> int:
    from spsa_bench.engine.simulate import make_schedule
    from spsa_bench.results.atomic import write_atomic
    from spsa_bench.results.datasets import schedule_dataset

    config = load_config(args.config)
    mode = config.batch_mode(args.batch_mode)
    seeds = parse_seed_range(args.seeds) if args.seeds else config.seed_range()
    schedule = make_schedule(config, mode, seeds)
    path = write_atomic(
        schedule_dataset(schedule, batch_mode=mode.name, config_json=config.to_json()), args.output
    )
    if not args.quiet:
        print(
            f"schedule {mode.name} seeds {seeds.start}-{seeds.stop - 1}: {int(schedule.n_jobs.sum())} jobs -> {path}",
            file=sys.stderr,
        )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="spsa-bench",
        description="Reproducible, vectorized benchmark of SPSA-family optimizers for Fishtest-style tuning.",
    )
    parser.add_argument("--version", action="version", version=f"spsa-bench {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser(
        "simulate", help="run one optimizer x batch mode x scenario for a range of seeds"
    )
    _add_config(p)
    p.add_argument(
        "--optimizer", required=True, help="optimizer arm name from the config (see `list`)"
    )
    p.add_argument("--batch-mode", required=True, help="batch mode name from the config, e.g. sync")
    p.add_argument(
        "--scenario", required=True, help="scenario name from the config, e.g. calibrated"
    )
    p.add_argument("--seeds", help="FIRST-LAST inclusive, e.g. 0-99 (default: the config's seeds)")
    p.add_argument("--output", required=True, help="NetCDF file to write (atomically)")
    p.add_argument("--quiet", action="store_true", help="no progress or summary on stderr")
    p.set_defaults(func=cmd_simulate)

    p = sub.add_parser("list", help="list the optimizers, batch modes and scenarios of a config")
    _add_config(p)
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("schema", help="print the configuration JSON Schema (YAML)")
    p.add_argument(
        "--write",
        action="store_true",
        help="regenerate the packaged schema file instead of printing",
    )
    p.set_defaults(func=cmd_schema)

    p = sub.add_parser(
        "validate", help="macro-versus-micro validation of an optimizer (NetCDF, figure, gap table)"
    )
    p.add_argument("--optimizer", required=True, help="optimizer kind, or 'all'")
    p.add_argument(
        "--output",
        required=True,
        help="directory for <kind>.nc, <kind>.png/.svg and <kind>_gaps.csv",
    )
    p.add_argument(
        "--seed", type=int, default=0, help="seed of the synthetic report sequence (default: 0)"
    )
    p.add_argument("--reports", type=int, default=200, help="number of reports (default: 200)")
    p.add_argument(
        "--sizes",
        default="uniform",
        help="report sizes: uniform (1..max), pow2 or fixed (default: uniform)",
    )
    p.add_argument(
        "--max-pairs", type=int, default=128, help="largest report size in pairs (default: 128)"
    )
    p.add_argument("--shuffle", action="store_true", help="shuffle the report order")
    p.add_argument("--quiet", action="store_true", help="do not list the files written")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser(
        "schedule", help="write the job schedule of a batch mode as NetCDF, for inspection"
    )
    _add_config(p)
    p.add_argument("--batch-mode", required=True, help="batch mode name from the config")
    p.add_argument("--seeds", help="FIRST-LAST inclusive (default: the config's seeds)")
    p.add_argument("--output", required=True, help="NetCDF file to write (atomically)")
    p.add_argument("--quiet", action="store_true", help="no summary on stderr")
    p.set_defaults(func=cmd_schedule)

    p = sub.add_parser("bench", help="time the vectorized core (medians of several runs)")
    _add_config(p)
    p.add_argument(
        "--seeds",
        default="1,10,100,1000",
        help="comma-separated seed counts R (default: 1,10,100,1000)",
    )
    p.add_argument("--optimizers", help="comma-separated optimizer arms, or all (default: spsa)")
    p.add_argument("--batch-modes", help="comma-separated batch modes, or all (default: sync)")
    p.add_argument("--scenario", default="calibrated", help="scenario (default: calibrated)")
    p.add_argument(
        "--repeats",
        type=int,
        default=5,
        help="timed runs per cell; the median is reported (default: 5)",
    )
    p.set_defaults(func=cmd_bench)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except ConfigError as error:
        print(f"spsa-bench: config error: {error}", file=sys.stderr)
        return 2
    except (ValueError, OSError) as error:
        print(f"spsa-bench: error: {error}", file=sys.stderr)
        return 1
    except RuntimeError as error:
        from spsa_bench.engine.replay import NonFiniteStateError

        if not isinstance(error, NonFiniteStateError):
            raise
        print(f"spsa-bench: error: {error}", file=sys.stderr)  # names optimizer, seed, event
        return 1


if __name__ == "__main__":
    sys.exit(main())
