"""The studies: each a declared row (:class:`spsa_bench.studies.base.Study`) over one
optional section of the configuration. :data:`STUDIES` is the table the command line
(``spsa-bench <study>``), the workflow (one rule per row, workflow/rules/studies.smk)
and the docs iterate; docs/benchmark.md, "Adding a study", lists what a new one needs.
The tuning protocol (:mod:`spsa_bench.studies.tuning`) lives here too but is not a row:
its runs feed the grid's tables (``spsa-bench tune``, rules tuning_runs and tuned).
"""

from __future__ import annotations

from spsa_bench.studies import budget, calibration, cend, frameworks, workers
from spsa_bench.studies.base import Output, Scope, Study

#: Every study, in the order of the command line's help.
STUDIES: dict[str, Study] = {
    row.key: row
    for row in (cend.STUDY, workers.STUDY, budget.STUDY, frameworks.STUDY, calibration.STUDY)
}

__all__ = ["STUDIES", "Output", "Scope", "Study"]
