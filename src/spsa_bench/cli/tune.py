"""``spsa-bench tune``: the tuning protocol (issue 16; :mod:`spsa_bench.studies.tuning`).

Runs every swept arm on every scenario and batch mode at the configuration's tuning
seeds, chooses each sweep's oracle and robust setting from those runs alone, and
reports the choices on the benchmark's seeds read from ``--benchmark`` (the
workflow's ``results/benchmark.nc``). Writes, into ``--output-dir``: ``tuning.nc``
(the tuning runs), ``tuned.csv`` and ``tuned.md`` (the report).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from spsa_bench.cli.common import add_config, load

OUTPUTS = ("tuning.nc", "tuned.csv", "tuned.md")


def add_parser(sub) -> None:
    p = sub.add_parser(
        "tune",
        help="choose each sweep's setting on the tuning seeds and report it on the "
        "benchmark's seeds (the config's tuning section)",
    )
    add_config(p)
    p.add_argument(
        "--benchmark",
        default="results/benchmark.nc",
        help="the benchmark's results on the test seeds (default: results/benchmark.nc)",
    )
    p.add_argument("--output-dir", required=True, help=f"directory for {', '.join(OUTPUTS)}")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from spsa_bench.config.loader import ConfigError
    from spsa_bench.config.sections.tuning import parse as tuning_settings
    from spsa_bench.studies.tuning import print_progress, run_tuning
    from spsa_bench.results.combine import open_benchmark

    config = load(args)
    settings = tuning_settings(config)
    if settings is None:
        raise ConfigError("tuning: this configuration has none (see docs/benchmark.md)")
    ds = run_tuning(config, settings, progress=None if args.quiet else print_progress)
    benchmark = open_benchmark(args.benchmark, ["elo_loss"])
    paths = [Path(args.output_dir) / name for name in OUTPUTS]
    paths = write_tuned(ds, benchmark, settings.baseline_sweep, paths)
    if not args.quiet:
        print(f"tuning: wrote {', '.join(str(p) for p in paths)}", file=sys.stderr)
    return 0


def write_tuned(ds, benchmark, baseline_sweep: str, paths) -> list[Path]:
    """The tuning runs' NetCDF file, the tuned CSV table and its Markdown at ``paths``
    (in that order), each written atomically."""
    from spsa_bench.results.atomic import write_atomic

    nc, csv, md = paths = [Path(path) for path in paths]
    nc.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(ds, nc)
    write_tuned_tables(ds, benchmark, baseline_sweep, csv, md)
    return paths


def write_tuned_tables(ds, benchmark, baseline_sweep: str, csv, md) -> None:
    """The choice made from the tuning runs ``ds`` alone, reported on ``benchmark``'s
    seeds: the tuned CSV table and its Markdown, each written atomically."""
    from spsa_bench.analysis.tuning import choose, tuned_markdown, tuned_table
    from spsa_bench.results.atomic import atomic_write

    choice = choose(ds)
    table = tuned_table(choice, benchmark, baseline_sweep)
    for path in (csv, md):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    atomic_write(csv, lambda tmp: table.to_csv(tmp, index=False))
    text = tuned_markdown(table, choice)
    atomic_write(md, lambda tmp: Path(tmp).write_text(text))
