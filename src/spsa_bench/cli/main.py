"""The ``spsa-bench`` command line: one module per subcommand, each with
``add_parser(subparsers)`` and ``run(args) -> exit status``."""

from __future__ import annotations

import argparse
import sys

from spsa_bench import __version__
from spsa_bench.cli import bench, listing, noise, schedule, schema, simulate, validate
from spsa_bench.config.loader import ConfigError

COMMANDS = (simulate, listing, schema, validate, schedule, bench, noise)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="spsa-bench",
        description="Reproducible, vectorized benchmark of SPSA-family optimizers for "
        "Fishtest-style tuning.",
    )
    parser.add_argument("--version", action="version", version=f"spsa-bench {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except ConfigError as error:
        print(f"spsa-bench: config error: {error}", file=sys.stderr)
        return 2
    except (ValueError, OSError) as error:
        print(f"spsa-bench: error: {error}", file=sys.stderr)
        return 1
    except RuntimeError as error:
        from spsa_bench.engine.replay import NonFiniteStateError

        if not isinstance(error, NonFiniteStateError):
            raise
        print(f"spsa-bench: error: {error}", file=sys.stderr)  # names optimizer, seed, event
        return 1


if __name__ == "__main__":
    sys.exit(main())
