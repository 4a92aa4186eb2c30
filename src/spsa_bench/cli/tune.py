"""``spsa-bench tune``: the tuning protocol (issue 16; :mod:`spsa_bench.studies.tuning`).

Runs every swept arm on every scenario and batch mode at the configuration's tuning
seeds, chooses each sweep's oracle and robust setting from those runs alone, and
reports the choices on the benchmark's seeds read from ``--benchmark`` (the
workflow's ``results/benchmark.nc``). Writes, into ``--output-dir``: ``tuning.nc``
(the tuning runs), ``tuned.csv`` and ``tuned.md`` (the report).

Every input and output is checked before the first tuning run (exit 2, one line
naming the flag, nothing written): ``--output-dir`` is a directory or absent and none
of its outputs is a directory, a device or the configuration or the benchmark;
``--benchmark`` is a regular file (not a FIFO, which could block), readable as NetCDF,
with ``elo_loss`` over optimizer, batch mode, scenario, seed and pairs, a cell for every
swept arm (and the baseline) on every scenario and batch mode of the tuning section,
no tuning seed among its seeds, and a finite final loss at every seed of those cells:
a NaN or infinite seed is refused naming the file, the cell and the seed, never
dropped from the report's mean.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from spsa_bench.cli.common import add_config, load
from spsa_bench.cli.overwrite import add_force_dir, refuse_existing_files

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
    add_force_dir(p)
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from spsa_bench.config.loader import ConfigError
    from spsa_bench.config.sections.tuning import parse as tuning_settings
    from spsa_bench.studies.tuning import print_progress, run_tuning

    config = load(args)
    settings = tuning_settings(config)
    if settings is None:
        raise ConfigError("tuning: this configuration has none (see docs/benchmark.md)")
    paths = output_paths(args.output_dir, inputs=(args.config, args.benchmark))
    refuse_existing_files(paths, args.force)
    benchmark = checked_benchmark(args.benchmark, settings)
    ds = run_tuning(config, settings, progress=None if args.quiet else print_progress)
    paths = write_tuned(ds, benchmark, settings.baseline_sweep, paths)
    if not args.quiet:
        print(f"tuning: wrote {', '.join(str(p) for p in paths)}", file=sys.stderr)
    return 0


def output_paths(directory: str, inputs=()) -> list[Path]:
    """``tuning.nc``, ``tuned.csv`` and ``tuned.md`` in ``directory``, refused (naming
    ``--output-dir``) when it is empty text or a file, or an output is a directory, a
    device or one of ``inputs``."""
    from spsa_bench.results.atomic import check_output_dir

    return check_output_dir(directory, OUTPUTS, inputs=inputs)


#: The dimensions of ``elo_loss`` in a benchmark file.
BENCHMARK_DIMS = ("optimizer", "batch_mode", "scenario", "seed", "pairs")


def checked_benchmark(path: str, settings):
    """``--benchmark``'s ``elo_loss``, opened lazily, after the checks of the module
    docstring; :class:`~spsa_bench.config.loader.ConfigError` names the flag and the file."""
    import stat

    import numpy as np

    from spsa_bench.config.loader import ConfigError
    from spsa_bench.results.combine import open_benchmark

    where = f"--benchmark = {path!r}"
    try:
        mode = Path(path).stat().st_mode
    except OSError as error:
        raise ConfigError(f"{where}: {error.strerror or error}") from None
    if not stat.S_ISREG(mode):
        raise ConfigError(f"{where}: not a regular file")
    try:
        benchmark = open_benchmark(path, ["elo_loss"])
    except (OSError, ValueError, RuntimeError, KeyError) as error:
        reason = " ".join(str(error).split()) or type(error).__name__
        raise ConfigError(f"{where}: not a readable NetCDF benchmark file ({reason})") from None
    if "elo_loss" not in benchmark or set(benchmark["elo_loss"].dims) != set(BENCHMARK_DIMS):
        raise ConfigError(
            f"{where}: not a benchmark file: expected elo_loss over {', '.join(BENCHMARK_DIMS)}"
        )
    cells = {
        "optimizer": _reported_arms(settings),
        "batch_mode": [mode.name for mode in settings.batch_modes],
        "scenario": list(settings.scenarios),
    }
    for dim, names in cells.items():
        have = {str(name) for name in benchmark[dim].values}
        missing = [name for name in names if name not in have]
        if missing:
            raise ConfigError(
                f"{where}: has no {dim} {missing[0]!r} (it has {', '.join(sorted(have))}); "
                "run the benchmark of this configuration first"
            )
    seeds = benchmark["seed"].values.astype(np.int64)
    shared = sorted(seed for seed in set(seeds.tolist()) if seed in settings.seeds)
    if shared:
        raise ConfigError(
            f"{where}: its seeds include the tuning seeds {shared[0]}..{shared[-1]}: the "
            "report would not be held out"
        )
    final = benchmark["elo_loss"].sel(cells).isel(pairs=-1).transpose(*BENCHMARK_DIMS[:4])
    try:
        values = final.values
    except ValueError as error:  # a chunk failing its checksum, read lazily here
        raise ConfigError(f"{where}: {' '.join(str(error).split())}") from None
    bad = ~np.isfinite(values)
    if bad.any():
        o, m, s, k = (int(i[0]) for i in np.nonzero(bad))
        raise ConfigError(
            f"{where}: the final elo_loss of optimizer {cells['optimizer'][o]!r}, batch mode "
            f"{cells['batch_mode'][m]!r}, scenario {cells['scenario'][s]!r} is "
            f"{values[o, m, s, k]} at seed {int(seeds[k])} ({int(bad[o, m, s].sum())} of "
            f"{seeds.size} seeds non-finite); the report would drop it"
        )
    return benchmark


def _reported_arms(settings) -> list[str]:
    """The optimizers the report reads: every swept arm, and the baseline arm when it is
    not swept."""
    arms = [arm.name for arm in settings.arms]
    if settings.baseline_sweep not in settings.sweeps:
        arms.append(settings.baseline_sweep)
    return arms


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
