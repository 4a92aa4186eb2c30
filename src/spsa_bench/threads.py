"""One BLAS thread per process, unless the environment says otherwise.

spsa-bench computes on one core per process: its numpy work is many small array
operations, and parallelism comes from running jobs side by side (Snakemake's
``--cores``, one job per core). OpenBLAS otherwise starts a thread per core at numpy's
import and its idle threads spin after each small product: a 1000-seed ``simulate``
took 0.04 s longer with a third more CPU time (docs/performance.md, "Whole process"), and two
jobs on two cores would each try to use both.
"""

from __future__ import annotations

import os

#: BLAS thread-pool variables set to one thread unless the environment already sets them.
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def single_threaded_blas() -> None:
    """Default every :data:`BLAS_THREAD_VARIABLES` to ``1`` (a set value is kept). It acts
    on numpy imported after the call, in this process or in its child processes."""
    for name in BLAS_THREAD_VARIABLES:
        os.environ.setdefault(name, "1")
