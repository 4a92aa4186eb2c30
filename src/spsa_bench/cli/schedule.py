"""``spsa-bench schedule``: write the job schedule of a batch mode, for inspection."""

from __future__ import annotations

import argparse
import sys

from spsa_bench.cli.common import add_config, check_output, check_run_memory, load, pick, seeds
from spsa_bench.cli.overwrite import add_force, refuse_existing


def add_parser(sub) -> None:
    p = sub.add_parser(
        "schedule", help="write the job schedule of a batch mode as NetCDF, for inspection"
    )
    add_config(p)
    p.add_argument("--batch-mode", required=True, help="batch mode name from the config")
    p.add_argument("--seeds", help="FIRST-LAST inclusive (default: the config's seeds)")
    p.add_argument("--output", required=True, help="NetCDF file to write (atomically)")
    add_force(p)
    p.add_argument("--quiet", action="store_true", help="no summary on stderr")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from spsa_bench.engine.simulate import make_schedule
    from spsa_bench.results.atomic import write_atomic
    from spsa_bench.results.datasets import schedule_dataset

    check_output(args)
    refuse_existing(args.output, args.force)
    config = load(args)
    mode = pick(config, "batch_mode", "--batch-mode", args.batch_mode)
    chosen = seeds(args, config)
    check_run_memory(config, next(iter(config.scenarios)), len(chosen))
    schedule = make_schedule(config, mode, chosen)
    dataset = schedule_dataset(schedule, batch_mode=mode.name, config_json=config.to_json())
    path = write_atomic(dataset, args.output)
    if not args.quiet:
        jobs = int(schedule.n_jobs.sum())
        print(
            f"schedule {mode.name} seeds {chosen.start}-{chosen.stop - 1}: {jobs} jobs -> {path}",
            file=sys.stderr,
        )
    return 0
