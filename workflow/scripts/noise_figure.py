"""Snakemake script: the noise-model figure (PNG and SVG)."""
# ruff: noqa: F821 - `snakemake` is defined by Snakemake's script preamble

import sys
from pathlib import Path

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 - lives as long as the job
sys.path.insert(
    0, str(Path(snakemake.scriptdir).resolve().parents[1] / "src")
)  # scriptdir holds ".."

from spsa_bench.analysis.noise_figure import noise_figure  # noqa: E402
from spsa_bench.model.noise import noise_model  # noqa: E402
from spsa_bench.results.atomic import atomic_write  # noqa: E402

figure = noise_figure([noise_model(setting) for setting in snakemake.params.settings])
for path, kind in (
    (snakemake.output.noise_models, "png"),
    (snakemake.output.noise_models_svg, "svg"),
):
    atomic_write(path, lambda tmp, kind=kind: figure.savefig(tmp, format=kind, dpi=110))
