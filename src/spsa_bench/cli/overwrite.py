"""``--force``: the commands that write one named file refuse to replace an existing one.

A command run by hand with a path under ``results/`` (the README's example once did
it) would otherwise replace a workflow output, and the next ``snakemake`` would redo
that job and everything after it. The workflow never goes through this check: its
scripts write their outputs themselves, and Snakemake deletes a job's outputs before
the job runs.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path


def add_force(parser: argparse.ArgumentParser, flag: str = "--output") -> None:
    """The ``--force`` flag of a command whose ``flag`` names the file it writes."""
    parser.add_argument(
        "--force",
        action="store_true",
        help=f"replace the file {flag} names if it exists (without it, an existing file is "
        "refused and left alone)",
    )


def refuse_existing(path: str | Path, force: bool, flag: str = "--output") -> None:
    """Refuse (exit 2, one line naming ``flag``, the file and ``--force``) to replace an
    existing ``path`` unless ``force``; before any work, so nothing is written."""
    from spsa_bench.results.atomic import OutputPathError

    if not force and os.path.lexists(path):  # a symbolic link, even dangling, too
        raise OutputPathError(
            f"{flag} = {str(path)!r}: the file exists; pass --force to replace it"
        )
