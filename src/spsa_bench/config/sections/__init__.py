"""The optional sections of a configuration, each a declared row: its key, the JSON
Schema of its YAML (the configuration schema is built from these rows) and
``parse(config)``, which checks it against the resolved grid (the scenarios, batch
modes and arms it names) and returns a frozen record, or ``None`` when the section is
absent. The loader checks every row's section after resolving the grid; the studies
(:mod:`spsa_bench.studies`) read the records.

The grid itself never depends on these sections: :func:`spsa_bench.config.resolve_core`
resolves a configuration without them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from spsa_bench.config.records import Config
from spsa_bench.config.sections import budget, calibration, cend, frameworks, tuning, workers
from spsa_bench.config.sections.schemas import (
    BUDGET_STUDY,
    CALIBRATION,
    CEND_STUDY,
    FRAMEWORK_STUDY,
    TUNING,
    WORKERS_STUDY,
)


@dataclasses.dataclass(frozen=True)
class Section:
    key: str
    schema: dict
    parse: Callable[[Config], Any]


#: Every optional section, in the schema's order (also the order they are checked in).
SECTIONS: dict[str, Section] = {
    row.key: row
    for row in (
        Section(cend.KEY, CEND_STUDY, cend.parse),
        Section(workers.KEY, WORKERS_STUDY, workers.parse),
        Section(budget.KEY, BUDGET_STUDY, budget.parse),
        Section(tuning.KEY, TUNING, tuning.parse),
        Section(frameworks.KEY, FRAMEWORK_STUDY, frameworks.parse),
        Section(calibration.KEY, CALIBRATION, calibration.parse),
    )
}
SECTION_KEYS = tuple(SECTIONS)


def check_sections(config: Config) -> None:
    """Every optional section of ``config`` parsed, refusing the first bad one."""
    for section in SECTIONS.values():
        section.parse(config)
