"""Snakemake script: combine every run file into results/benchmark.nc, one cell at a time."""
# ruff: noqa: F821 - `snakemake` is defined by Snakemake's script preamble

import sys
import time
from pathlib import Path

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 - lives as long as the job
sys.path.insert(
    0, str(Path(snakemake.scriptdir).resolve().parents[1] / "src")
)  # scriptdir holds ".."

from spsa_bench.config.loader import resolve  # noqa: E402
from spsa_bench.engine.simulate import make_problem  # noqa: E402
from spsa_bench.results.provenance import rule_command  # noqa: E402
from spsa_bench.results.stream import quarter_lines, stream_benchmark  # noqa: E402


def tell(line: str) -> None:
    """One progress line on the console (the job's own stderr, which the log replaced
    above): combine is the longest serial step of the run. Not in the log, which holds
    the one line of a refusal, or the summary below."""
    print(line, file=sys.__stderr__, flush=True)


start = time.perf_counter()
config = resolve(snakemake.config)
# each scenario's parameter count: a run file with another is refused, naming both
counts = {
    name: len(make_problem(config, name, [0]).params.theta_start) for name in config.scenarios
}
try:
    ds = stream_benchmark(
        snakemake.input.runs,
        snakemake.output[0],
        order=snakemake.params.order,
        config_json=config.to_json(),  # provenance: the whole config
        command=rule_command(snakemake.rule, {}),
        param_counts=counts,
        progress=quarter_lines(tell),  # a line at each quarter of each pass
    )
except ValueError as error:  # a bad run file: one line naming it, exit 2
    print(f"combine: {' '.join(str(error).split())}", file=sys.stderr)
    sys.exit(2)
print(
    f"combined {len(snakemake.input.runs)} run files: {dict(ds.sizes)} ({time.perf_counter() - start:.1f} s)",
    file=sys.stderr,
)
