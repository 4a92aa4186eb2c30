"""``spsa-bench schema``: print or regenerate the packaged configuration schema."""

from __future__ import annotations

import argparse
import sys


def add_parser(sub) -> None:
    p = sub.add_parser(
        "schema", help="print the configuration JSON Schema of the built-in kinds (YAML)"
    )
    p.add_argument(
        "--write",
        action="store_true",
        help="regenerate the packaged schema file instead of printing",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from spsa_bench.config.schema import SCHEMA_PATH, schema_yaml

    text = schema_yaml()
    if args.write:
        SCHEMA_PATH.parent.mkdir(parents=True, exist_ok=True)
        tmp = SCHEMA_PATH.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.replace(SCHEMA_PATH)
        print(f"wrote {SCHEMA_PATH}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
