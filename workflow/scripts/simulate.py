"""Snakemake script: one arm group x one scenario x every batch mode, one seed chunk.

The arms outside a sweep (rule simulate) or every arm of one hyperparameter sweep
(rules simulate_sweep_<name>), in each batch mode of the configuration, one cell
after another: ``params.cells`` lists each batch mode's ``[arm, cell settings]`` pairs
in the order of the outputs (lists: the canonical JSON sorts a mapping's keys), and
``params.schedules`` maps each batch mode to its job schedule file (none for a
synchronous one). Each run is built from its cell's settings only, so its result
depends on exactly what Snakemake's params rerun trigger compares; the arms of a cell
share the schedule, read once, and are replayed together as one replay of arms x
seeds rows where they can (spsa_bench.engine.stack; a sweep's arms: each arm's run
bit-identical to its own replay's), or one after another where they cannot.

A sweep's job of a configuration with a ``tuning`` section also replays its share
of the tuning seeds (``params.tuning_seeds``, spsa_bench.workflow.chunk_tuning_seeds)
as extra rows of the same replays and writes their final Elo losses to
``output.tuning`` (one file per batch mode; rule tuning_runs gathers them); the run
files hold the chunk's seeds only, bit-identical to a replay of those alone.
"""
# ruff: noqa: F821 - `snakemake` is defined by Snakemake's script preamble

import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 - lives as long as the job
SRC = Path(snakemake.scriptdir).resolve().parents[1] / "src"  # scriptdir may hold ".."
sys.path.insert(0, str(SRC))

import spsa_bench  # noqa: E402

# Run the package of this repository, never another checkout installed in the environment.
if Path(spsa_bench.__file__).resolve().parent != (SRC / "spsa_bench").resolve():
    sys.exit(f"spsa_bench imported from {spsa_bench.__file__}, not from this repository's {SRC}")

from spsa_bench import workflow as grid  # noqa: E402
from spsa_bench.config.limits import arms_per_replay, check_memory, run_bytes  # noqa: E402
from spsa_bench.config.loader import resolve, scenario_param_count  # noqa: E402
from spsa_bench.dispatch.storage import read_schedule  # noqa: E402
from spsa_bench.engine.simulate import held_out, simulate_runs_held_out  # noqa: E402
from spsa_bench.results.atomic import atomic_write  # noqa: E402
from spsa_bench.results.provenance import history, rule_command, start_git_state  # noqa: E402
from spsa_bench.results.reading import check_metadata  # noqa: E402
from spsa_bench.studies.tuning import tuning_part  # noqa: E402


def main() -> None:
    start_git_state()  # the run files' git provenance, queried beside the simulation
    # [[batch mode, [[arm, cell], ...]], ...] in the order of the outputs
    cells = {mode: dict(arms) for mode, arms in json.loads(snakemake.params.cells)["cells"]}
    schedules = json.loads(snakemake.params.schedules)  # {batch mode: its file or None}
    tuning_seeds = [int(s) for s in getattr(snakemake.params, "tuning_seeds", None) or []]
    # outputs `runs` (batch mode by batch mode, the arms in order) and, for a sweep's job
    # with a tuning section, `tuning` (one per batch mode); an object without names, as
    # a test's stand-in, is the list of runs
    names = set(snakemake.output.keys()) if hasattr(snakemake.output, "keys") else set()
    runs = list(snakemake.output.runs) if "runs" in names else list(snakemake.output)
    tuning = list(snakemake.output.tuning) if "tuning" in names else [None] * len(cells)
    at = 0
    for (batch_mode, arms), tuning_output in zip(cells.items(), tuning, strict=True):
        outputs = runs[at : at + len(arms)]
        at += len(arms)
        simulate_cell(batch_mode, arms, schedules[batch_mode], tuning_seeds, outputs, tuning_output)
    if at != len(runs):
        raise ValueError(f"{len(runs)} run files for {at} arm x batch mode cells")


def simulate_cell(
    batch_mode: str,
    cells: dict,
    schedule: str | None,
    tuning_seeds: list[int],
    runs: list[str],
    tuning_output: str | None,
) -> None:
    """The job's arms in one batch mode (and the job's scenario): their run files and,
    given ``tuning_output``, the final Elo losses at the tuning seeds."""
    w = snakemake.wildcards
    first, last = int(w.a), int(w.b)
    configs = {arm: resolve(grid.with_seeds(cell, first, last)) for arm, cell in cells.items()}
    shared = next(iter(configs.values()))  # the arms differ in hyperparameters only
    check_memory(
        f"seeds.per_job: seeds {first}-{last}"
        + (" and their tuning seeds" if tuning_seeds else ""),
        cell_bytes(shared, w, len(tuning_seeds), len(configs)),
    )
    held = held_out(
        shared,
        shared.batch_mode(batch_mode),
        range(first, last + 1),
        tuning_seeds,
        schedule=job_schedule(shared, batch_mode, schedule, first, last),
    )
    start = time.perf_counter()
    # the arms in one stacked replay where they can share one (else one after another)
    results = simulate_runs_held_out(
        configs,
        batch_mode=batch_mode,
        scenario=w.scenario,
        schedules=held,
        report=lambda line: print(f"{batch_mode}: {line}", file=sys.stderr),
    )
    print(
        f"{batch_mode}: {len(configs)} arms replayed ({time.perf_counter() - start:.2f} s)",
        file=sys.stderr,
    )
    losses = {}
    for (arm, (run, tuning_loss)), output in zip(results.items(), runs, strict=True):
        write_run(run, arm, batch_mode, first, last, output)
        losses[arm] = tuning_loss
    if tuning_output is not None:
        part = tuning_part(batch_mode, w.scenario, tuning_seeds, losses)
        text = json.dumps(part) + "\n"
        atomic_write(tuning_output, lambda path: Path(path).write_text(text))


def cell_bytes(config, w, extra_seeds: int = 0, arms: int = 1) -> int:
    """The job's memory estimate: a replay's rows are those of the arms it stacks
    (spsa_bench.engine.stack, at most config.limits.arms_per_replay of them), each arm
    the chunk's seeds and the tuning seeds."""
    params = scenario_param_count(config.scenario(w.scenario))
    seeds = int(w.b) - int(w.a) + 1 + extra_seeds
    stacked = arms_per_replay(arms, seeds, config.num_pairs)
    return run_bytes(stacked * seeds, config.num_pairs, config.checkpoints, params)


def job_schedule(config, batch_mode: str, path: str | None, first: int, last: int):
    """The shared job schedule (``path``) of an asynchronous cell; none for a synchronous
    one.

    The file is checked before netCDF4 reads it (a regular HDF5 file, its attributes
    within their cap by its metadata: results.reading.check_metadata), then against
    the run; a refusal is one line naming the file, exit 2, before any run."""
    if path is None:
        return None
    mode = config.batch_mode(batch_mode)
    try:
        check_metadata(path, "not a readable schedule file")
        return read_schedule(
            path,
            num_pairs=config.num_pairs,
            num_workers=mode.workers,
            seeds=range(first, last + 1),
        )
    except ValueError as error:  # ReadError included: one line naming the file
        print(f"simulate: {' '.join(str(error).split())}", file=sys.stderr)
        raise SystemExit(2) from None


def write_run(run, arm: str, batch_mode: str, first: int, last: int, output: str) -> None:
    """Write one arm's run, with its history line, and log its final Elo loss."""
    w = snakemake.wildcards
    labels = {"batch_mode": batch_mode, "scenario": w.scenario, "a": w.a, "b": w.b}
    run.attrs["history"] = history(
        rule_command(snakemake.rule, labels | {"optimizer": arm}), when=run.attrs["created"]
    )
    run.write(output, compress=False)  # the layout xarray writes, without importing it
    loss = run["elo_loss"][:, -1]
    print(
        f"{arm}/{batch_mode}/{w.scenario} seeds {first}-{last}: final Elo loss "
        f"mean {loss.mean():.3f}, median {np.median(loss):.3f}",
        file=sys.stderr,
    )


warnings.simplefilter("error", RuntimeWarning)  # a numpy warning fails the job in one line
try:
    main()
except (
    ValueError,
    OSError,
    RuntimeWarning,
    FloatingPointError,
) as error:  # one line in the log, naming the file or key
    sys.exit(f"error: {' '.join(str(error).split())}")
