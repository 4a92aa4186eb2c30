"""Snakemake script: one optimizer arm x batch mode x scenario for one seed chunk.

The run is built from the rule's params only (the cell's resolved settings), so
its result depends on exactly what Snakemake's params rerun trigger compares.
"""
# ruff: noqa: F821 - `snakemake` is defined by Snakemake's script preamble

import json
import sys
import time
import warnings
from pathlib import Path

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 - lives as long as the job
SRC = Path(snakemake.scriptdir).resolve().parents[1] / "src"  # scriptdir may hold ".."
sys.path.insert(0, str(SRC))

import spsa_bench  # noqa: E402

# Run the package of this repository, never another checkout installed in the environment.
if Path(spsa_bench.__file__).resolve().parent != (SRC / "spsa_bench").resolve():
    sys.exit(f"spsa_bench imported from {spsa_bench.__file__}, not from this repository's {SRC}")

from spsa_bench import workflow as grid  # noqa: E402
from spsa_bench.config.limits import check_memory, run_bytes  # noqa: E402
from spsa_bench.config.loader import resolve, scenario_param_count  # noqa: E402
from spsa_bench.dispatch.storage import read_schedule  # noqa: E402
from spsa_bench.engine.simulate import simulate  # noqa: E402
from spsa_bench.results.atomic import write_atomic  # noqa: E402
from spsa_bench.results.provenance import history, rule_command  # noqa: E402


def main() -> None:
    start = time.perf_counter()
    w = snakemake.wildcards
    first, last = int(w.a), int(w.b)
    config = resolve(grid.with_seeds(json.loads(snakemake.params.cell), first, last))
    params = scenario_param_count(config.scenario(w.scenario))
    needed = run_bytes(last - first + 1, config.num_pairs, config.checkpoints, params)
    check_memory(f"seeds.per_job: seeds {first}-{last}", needed)
    schedule = None
    if len(snakemake.input):
        mode = config.batch_mode(w.batch_mode)
        schedule = read_schedule(
            snakemake.input[0],
            num_pairs=config.num_pairs,
            num_workers=mode.workers,
            seeds=range(first, last + 1),
        )
    ds = simulate(
        config,
        optimizer=w.optimizer,
        batch_mode=w.batch_mode,
        scenario=w.scenario,
        seeds=range(first, last + 1),
        schedule=schedule,
    )
    ds.attrs["history"] = history(
        rule_command(snakemake.rule, dict(w.items())), when=ds.attrs["created"]
    )
    write_atomic(ds, snakemake.output.run)
    loss = ds["elo_loss"].isel(pairs=-1)
    print(
        f"{w.optimizer}/{w.batch_mode}/{w.scenario} seeds {first}-{last}: final Elo loss "
        f"mean {float(loss.mean()):.3f}, median {float(loss.median()):.3f} "
        f"({time.perf_counter() - start:.2f} s)",
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
