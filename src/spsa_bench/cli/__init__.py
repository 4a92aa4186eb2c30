"""The ``spsa-bench`` command line."""

from spsa_bench.cli.main import main

__all__ = ["main"]
