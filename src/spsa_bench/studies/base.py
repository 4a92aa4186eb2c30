"""What every study shares: its row (:class:`Study`), progress, the start gap, the
dataset's provenance and CF attributes, and the command-line and workflow entries.

A study is a declared row, as an optimizer kind is: the section it reads (a record of
:mod:`spsa_bench.config.sections`), the function that runs it over all seeds at once
and returns one CF-1.11 dataset, the analysis that turns the dataset into its table
and figure (named as ``"module:function"`` and imported only when the outputs are
written, so this package never imports the analysis above it), its outputs, and the
memory, runtime and rerun inputs the workflow needs. :data:`spsa_bench.studies.STUDIES`
is the table the command line, the workflow and the documentation iterate.
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from spsa_bench.config.records import Config, ConfigError
from spsa_bench.config.sections import SECTIONS

if TYPE_CHECKING:
    import xarray as xr


@dataclasses.dataclass(frozen=True)
class Output:
    """One output of a study: its name in the workflow rule (``nc``, ``csv``, ...), its
    path in the workflow and, when the report shows it, its caption, category and label."""

    name: str
    path: str
    caption: str | None = None
    category: str | None = None
    labels: dict | None = None

    @property
    def file(self) -> str:
        """The file's name, as the command writes it into ``--output-dir``."""
        return Path(self.path).name


@dataclasses.dataclass(frozen=True)
class Scope:
    """What a study's results depend on beyond the study's own section (its rerun
    trigger in the workflow): a batch mode, scenarios, configured arms (by name) and
    the budget; ``per_cell`` takes them as one grid cell (scenario and arm single)."""

    batch_mode: str
    scenarios: tuple[str, ...]
    arms: tuple[str, ...]
    num_pairs: int
    per_cell: bool = False


@dataclasses.dataclass(frozen=True)
class Study:
    """A study's row: see the module docstring. ``memory_mb`` is the fitted peak RSS of
    its job in MB (the workflow adds its margin and the job overhead), ``runtime_min``
    the minutes a cluster job is given; both take the configuration and the parsed
    section. ``check_seeds(section, seeds)`` refuses seeds the study cannot take."""

    key: str
    command: str
    help: str
    doc: str
    label: str
    rule: str
    run: Callable[..., Any]
    report: str
    outputs: tuple[Output, ...]
    scope: Callable[[Config, Any], Scope]
    memory_mb: Callable[[Config, Any], float]
    runtime_min: Callable[[Config, Any], int]
    check_seeds: Callable[[Any, range], None] | None = None
    priority: int = -10
    comment: str = ""

    def section(self, config: Config):
        """The study's parsed section of ``config`` (``None`` when it has none)."""
        return SECTIONS[self.key].parse(config)

    def required(self, config: Config):
        """The parsed section, refused (pointing to the docs) when the config has none."""
        section = self.section(config)
        if section is None:
            raise ConfigError(f"{self.key}: this configuration has none (see {self.doc})")
        return section

    def check_estimates(self, config: Config, section, seeds: range) -> None:
        """Refuse, before any run, a study on ``seeds`` whose estimated memory exceeds
        what the machine has (the check ``simulate`` makes) or whose estimated time
        exceeds :data:`~spsa_bench.config.limits.MAX_STUDY_MINUTES`; one
        :class:`~spsa_bench.config.limits.LimitError` giving the estimate, the limit and
        the keys to change. The memory is the row's fitted :attr:`memory_mb`, and at
        least one simulation of one seed at the study's largest budget
        (:func:`~spsa_bench.config.limits.run_bytes`), which any study runs."""
        from spsa_bench.config.limits import check_memory, check_minutes, run_bytes

        config = dataclasses.replace(config, seeds_first=seeds.start, seeds_count=len(seeds))
        budgets = getattr(section, "num_pairs", None) or (config.num_pairs,)
        budget_key = f"{self.key}.num_pairs" if hasattr(section, "num_pairs") else "num_pairs"
        largest = max(np.atleast_1d(budgets).tolist())
        needed = max(
            self.memory_mb(config, section) * 1e6, run_bytes(1, largest, config.checkpoints, 1)
        )
        hint = f"lower {budget_key} (largest {largest:,}) or the seeds ({len(seeds):,})"
        check_memory(f"{self.key}: on {len(seeds):,} seeds", int(needed), hint)
        check_minutes(
            f"{self.key}: on {len(seeds):,} seeds", self.runtime_min(config, section), hint
        )

    def progress(self, message: str) -> None:
        """One progress line on stderr, prefixed with the study's label."""
        print(f"{self.label}: {message}", file=sys.stderr, flush=True)

    def write(self, ds: xr.Dataset, paths: Sequence[str | Path]) -> list[Path]:
        """The study's outputs at ``paths`` (in :attr:`outputs` order), each written
        atomically by its analysis (:attr:`report`)."""
        module, name = self.report.split(":")
        return getattr(importlib.import_module(module), name)(ds, [Path(p) for p in paths])

    def run_job(self, settings: str, outputs: Sequence[str | Path]) -> list[Path]:
        """The workflow's job: the study of ``settings`` (the rule's canonical JSON
        configuration, its rerun trigger) on its seeds with progress, written to
        ``outputs``."""
        import json

        from spsa_bench.config.loader import resolve

        config = resolve(json.loads(settings))
        ds = self.run(config, self.section(config), config.seed_range(), progress=self.progress)
        return self.write(ds, outputs)


#: The per-(arm, c_end, seed) variables of the studies that play a block at several
#: c_end (c_end and framework studies): name -> (long_name, units).
PROBE_VARIABLES = {
    "final_elo_loss": ("true Elo loss at the end of the budget", "Elo"),
    "probe_equal_fraction": (
        "share of jobs x integer parameters where both engines played the same integer",
        "1",
    ),
    "probe_swapped_fraction": (
        "share of jobs x integer parameters played in the opposite order to the flip",
        "1",
    ),
}


def start_gap(problem, n_seeds: int) -> np.ndarray:
    """The true Elo loss at the start of each seed's instance, ``(seed,)``."""
    return problem.bowl.elo_loss(np.tile(problem.view.theta_start, (n_seeds, 1)))


def study_dataset(config: Config, data_vars: dict, coords: dict, attrs: dict) -> xr.Dataset:
    """A study's dataset with the configuration's provenance and CF-1.11 attributes."""
    import xarray as xr

    from spsa_bench.results.cf import conform
    from spsa_bench.results.provenance import provenance

    return conform(xr.Dataset(data_vars, coords, {**attrs, **provenance(config.to_json())}))
