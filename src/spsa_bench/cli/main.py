"""The ``spsa-bench`` command line: one module per subcommand, each with
``add_parser(subparsers)`` and ``run(args) -> exit status``.

Every error is one line on stderr: exit 2 for bad input (configuration, flags,
output paths, limits, a malformed parameter block or prior), 1 for a failure while
running (a file that cannot be written, a validation gate, a non-finite state). A
numpy floating-point warning is an error (the code silences it with ``np.errstate``
where the math is known to be safe), so none reaches the terminal.
``SPSA_BENCH_TRACEBACK=1`` shows the traceback of an unexpected error instead of its
one line.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

from spsa_bench.cli import (
    bench,
    listing,
    noise,
    plan,
    schedule,
    schema,
    simulate,
    study,
    tune,
    tunes,
    validate,
)
from spsa_bench.config.loader import ConfigError

#: Each command's name and the module whose ``add_parser`` registers it, in --help order
#: (the studies' commands come from their rows, :mod:`spsa_bench.cli.study`).
COMMANDS = {
    "simulate": simulate, "list": listing, "schema": schema, "validate": validate,
    "schedule": schedule, "bench": bench, "noise": noise, **study.commands(),
    "tune": tune, "plan": plan,
    "tunes": tunes,
}  # fmt: skip


class _Version(argparse.Action):
    """``--version``: prints the installed version, looked up only when asked."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, help="print the version and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        import spsa_bench

        print(f"spsa-bench {spsa_bench.__version__}")
        parser.exit()


class OneLineParser(argparse.ArgumentParser):
    """An argument error is one line naming the flag (and exit 2), not usage plus error."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())} (see --help)\n")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; with ``only``, a command name, just that command's
    (what its options' defaults need is then all that is imported)."""
    parser = OneLineParser(
        prog="spsa-bench",
        description="Reproducible, vectorized benchmark of SPSA-family optimizers for "
        "Fishtest-style tuning.",
    )
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, command in COMMANDS.items():
        if only is None or name == only:
            command.add_parser(sub)
    return parser


def _exit_status(error: BaseException) -> int:
    """2 for bad input, 1 for a failure while running."""
    from spsa_bench.config.limits import LimitError
    from spsa_bench.config.param_block import BlockError
    from spsa_bench.model.instances import PriorError
    from spsa_bench.results.atomic import OutputPathError

    bad_input = (ConfigError, LimitError, OutputPathError, BlockError, PriorError)
    return 2 if isinstance(error, bad_input) else 1


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    if isinstance(error, ConfigError):
        return f"config error: {text}"
    if isinstance(error, (ValueError, OSError, FloatingPointError, RuntimeWarning)):
        return f"error: {text}"
    return f"error: {type(error).__name__}: {text}"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    command = argv[0] if argv and argv[0] in COMMANDS else None  # else the whole parser
    args = build_parser(only=command).parse_args(argv)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            return args.func(args)
    except KeyboardInterrupt:
        print("spsa-bench: interrupted", file=sys.stderr)
        return 130
    except MemoryError:
        print("spsa-bench: error: out of memory; run fewer seeds at a time", file=sys.stderr)
        return 1
    except Exception as error:
        if os.environ.get("SPSA_BENCH_TRACEBACK") and _exit_status(error) != 2:
            raise
        print(f"spsa-bench: {_one_line(error)}", file=sys.stderr)
        return _exit_status(error)


if __name__ == "__main__":
    sys.exit(main())
