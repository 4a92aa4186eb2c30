"""Snakemake script: the job schedule of one asynchronous batch mode and seed chunk.

The rule's params hold what a schedule depends on (budget, entropy, the batch
mode); they are taken from the same configuration resolved here.
"""
# ruff: noqa: F821 - `snakemake` is defined by Snakemake's script preamble

import sys
from pathlib import Path

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 - lives as long as the job
sys.path.insert(
    0, str(Path(snakemake.scriptdir).resolve().parents[1] / "src")
)  # scriptdir holds ".."

from spsa_bench.config.loader import resolve  # noqa: E402
from spsa_bench.engine.simulate import make_schedule  # noqa: E402
from spsa_bench.results.datasets import write_schedule  # noqa: E402
from spsa_bench.results.provenance import rule_command  # noqa: E402

first, last = int(snakemake.wildcards.a), int(snakemake.wildcards.b)
config = resolve(snakemake.config)
mode = config.batch_mode(snakemake.wildcards.batch_mode)
schedule = make_schedule(config, mode, range(first, last + 1))
write_schedule(
    schedule,
    snakemake.output[0],
    batch_mode=mode.name,
    settings_json=snakemake.params.settings,
    command=rule_command(snakemake.rule, dict(snakemake.wildcards.items())),
)
print(
    f"schedule {mode.name} seeds {first}-{last}: {int(schedule.n_jobs.sum())} jobs", file=sys.stderr
)
