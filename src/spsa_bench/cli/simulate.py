"""``spsa-bench simulate``: one optimizer x batch mode x scenario for a range of seeds."""

from __future__ import annotations

import argparse
import itertools
import sys
import time

from spsa_bench.cli.arm_names import arm_for
from spsa_bench.cli.common import (
    Progress,
    add_config,
    check_output,
    check_run_memory,
    load,
    pick,
    seeds,
)
from spsa_bench.cli.overwrite import add_force, refuse_existing


def add_parser(sub) -> None:
    p = sub.add_parser(
        "simulate", help="run one optimizer x batch mode x scenario for a range of seeds"
    )
    add_config(p)
    p.add_argument(
        "--optimizer",
        required=True,
        help="optimizer arm name from the config (see `list`); a swept arm's name runs "
        "its hand-set value (the kind's default), a registered kind's name not in the "
        "config runs that kind with its default hyperparameters (each said on stderr)",
    )
    p.add_argument("--batch-mode", required=True, help="batch mode name from the config, e.g. sync")
    p.add_argument(
        "--scenario", required=True, help="scenario name from the config, e.g. calibrated"
    )
    p.add_argument("--seeds", help="FIRST-LAST inclusive, e.g. 0-99 (default: the config's seeds)")
    p.add_argument("--output", required=True, help="NetCDF file to write (atomically)")
    add_force(p)
    p.add_argument("--quiet", action="store_true", help="no progress or summary on stderr")
    p.add_argument(
        "--timings",
        action="store_true",
        help="print the seconds of each phase (configuration, simulation, write) as the last "
        "line on stderr, also with --quiet",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    clock = [time.perf_counter()]
    from spsa_bench.engine.simulate import TIMED_PHASES, simulate_run
    from spsa_bench.results.provenance import start_git_state

    check_output(args)
    refuse_existing(args.output, args.force)
    config = load(args)
    chosen = seeds(args, config)
    config, optimizer = arm_for(config, args.optimizer, quiet=args.quiet)
    pick(config, "batch_mode", "--batch-mode", args.batch_mode)
    pick(config, "scenario", "--scenario", args.scenario)
    check_run_memory(config, args.scenario, len(chosen))
    start_git_state()  # the run file's git provenance, queried beside the simulation
    clock.append(time.perf_counter())
    label = f"{optimizer}/{args.batch_mode}/{args.scenario} seeds {chosen.start}-{chosen.stop - 1}"
    run_file = simulate_run(
        config,
        optimizer=optimizer,
        batch_mode=args.batch_mode,
        scenario=args.scenario,
        seeds=chosen,
        progress=Progress(label, args.quiet),
    )
    clock.append(time.perf_counter())
    path = run_file.write(args.output, compress=False)  # netCDF4 directly, without xarray
    clock.append(time.perf_counter())
    if not args.quiet:
        loss = run_file["elo_loss"]
        final, gap = loss[:, -1].mean(), loss[:, 0].mean()  # per-seed instances differ
        print(
            f"{label}: final Elo loss mean {final:.3f} (mean start gap {gap:.3f}, "
            f"{100 * (1 - final / gap):.1f}% recovered) -> {path}",
            file=sys.stderr,
        )
    if args.timings:
        phases = dict(zip(TIMED_PHASES, (b - a for a, b in itertools.pairwise(clock)), strict=True))
        print("timings: " + ", ".join(f"{k} {v:.3f} s" for k, v in phases.items()), file=sys.stderr)
    return 0
