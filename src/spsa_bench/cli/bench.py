"""``spsa-bench bench``: time the vectorized core (medians of several runs)."""

from __future__ import annotations

import argparse
from pathlib import Path

from spsa_bench.cli.common import add_config, bounded_int, check_run_memory, load, pick
from spsa_bench.config.limits import MAX_SEEDS


def add_parser(sub) -> None:
    p = sub.add_parser("bench", help="time the vectorized core (medians of several runs)")
    add_config(p)
    p.add_argument(
        "--seeds",
        default="1,10,100,1000",
        help="comma-separated seed counts R (default: 1,10,100,1000)",
    )
    p.add_argument("--optimizers", help="comma-separated optimizer arms, or all (default: spsa)")
    p.add_argument("--batch-modes", help="comma-separated batch modes, or all (default: sync)")
    p.add_argument("--scenario", default="calibrated", help="scenario (default: calibrated)")
    p.add_argument(
        "--noise",
        choices=["vendored", "STC", "LTC", "VLTC"],
        help="game-noise model to time (default: the scenario's, from the config)",
    )
    p.add_argument(
        "--pool-workers",
        type=bounded_int("--pool-workers", 0, 100000),
        default=1000,
        help="workers of the Fishtest pool row (batch: fishtest at STC, 100 seeds, 60,000 "
        "pairs; target: replay under 10 s); 0 skips it (default: 1000)",
    )
    p.add_argument(
        "--tune-seeds",
        type=bounded_int("--tune-seeds", 0, MAX_SEEDS),
        default=100,
        help="seeds of the tune-size rows (synthetic Stockfish tunes of 4, 64 and 512 int "
        "parameters, stochastic rounding); 0 skips them (default: 100)",
    )
    p.add_argument(
        "--lab",
        type=Path,
        metavar="CHECKOUT",
        help="a checkout of the original lab (ppigazzini/fishtest-spsa-lab): its per-seed "
        "time is measured in this run for the whole-process speed-up (default: the recorded "
        "0.13 s)",
    )
    p.add_argument(
        "--repeats",
        type=bounded_int("--repeats", 1, 1000),
        default=5,
        help="timed runs per cell; the median is reported (default: 5)",
    )
    p.set_defaults(func=run)


def _names(text: str | None, default: str, every) -> list[str]:
    names = text.split(",") if text else [default]
    return list(every) if names == ["all"] else names


def run(args: argparse.Namespace) -> int:
    from spsa_bench.config.loader import ConfigError
    from spsa_bench.engine.bench import check_lab, run_bench
    from spsa_bench.model.noise import noise_model

    parse = bounded_int("--seeds", 1, MAX_SEEDS)
    try:
        counts = [parse(item) for item in args.seeds.split(",")]
    except argparse.ArgumentTypeError as error:
        raise ConfigError(f"--seeds = {args.seeds!r}: {error}") from None
    if args.lab is not None:  # before any timing: a bad checkout wastes no minutes
        check_lab(args.lab)
    config = load(args)
    pick(config, "scenario", "--scenario", args.scenario)
    check_run_memory(config, args.scenario, max(counts))
    optimizers = _names(args.optimizers, "spsa", config.optimizers)
    modes = _names(args.batch_modes, "sync", config.batch_modes)
    for name in optimizers:
        pick(config, "optimizer", "--optimizers", name)
    for name in modes:
        pick(config, "batch_mode", "--batch-modes", name)
    run_bench(
        config,
        seed_counts=counts,
        optimizers=optimizers,
        batch_modes=modes,
        scenario=args.scenario,
        repeats=args.repeats,
        noise=noise_model(args.noise) if args.noise else None,
        tune_seeds=args.tune_seeds,
        pool_workers=args.pool_workers,
        lab=args.lab,
    )
    return 0
