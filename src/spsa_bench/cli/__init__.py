"""The ``spsa-bench`` command line (one BLAS thread: :mod:`spsa_bench.threads`)."""

from spsa_bench.threads import single_threaded_blas

single_threaded_blas()  # before numpy's first import

from spsa_bench.cli.main import main  # noqa: E402 - after the thread settings

__all__ = ["main"]
