"""The ``spsa-bench`` command line (one BLAS thread: :mod:`spsa_bench.threads`; the
Agg matplotlib backend).

:func:`main` parses and runs a command and returns its exit status (tests call it
in-process); :func:`run` is the installed entry point and ``python -m spsa_bench``.
"""

import atexit
import os
import sys
from typing import NoReturn

from spsa_bench.threads import single_threaded_blas

single_threaded_blas()  # before numpy's first import
# The command line draws to files only: matplotlib reads this at its first import, so
# no figure module ever switches the backend (and none is imported here).
os.environ["MPLBACKEND"] = "Agg"

from spsa_bench.cli.main import main  # noqa: E402 - after the thread settings

__all__ = ["main", "run"]


def run() -> NoReturn:
    """Run :func:`main` on the command line's arguments and end the process promptly.

    Once a command has returned, what it wrote is complete: files closed (run files
    also synced and renamed into place). The exit handlers registered with
    :mod:`atexit` run and standard output and error are flushed, then the process ends
    with ``os._exit``, skipping the interpreter's teardown of modules and objects:
    about 25 ms of a 0.5 s ``spsa-bench simulate`` (numpy's own teardown is 9 ms).
    ``--help``, usage errors and tracebacks asked for with ``SPSA_BENCH_TRACEBACK``
    leave through the ordinary exit."""
    status = main()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more to deliver
            pass
    os._exit(status)
