"""``--force``: the commands that write named files refuse to replace existing ones.

``simulate`` and ``schedule`` write the one file ``--output`` names; ``validate`` and the
studies write a known set of files into a directory (:func:`refuse_existing_files`).

A command run by hand with a path under ``results/`` (the README's example once did
it) would otherwise replace a workflow output, and the next ``snakemake`` would redo
that job and everything after it. The workflow never goes through this check: its
scripts write their outputs themselves, and Snakemake deletes a job's outputs before
the job runs.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable
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


def add_force_dir(parser: argparse.ArgumentParser, flag: str = "--output-dir") -> None:
    """The ``--force`` flag of a command that writes a known set of files into the
    directory ``flag`` names."""
    parser.add_argument(
        "--force",
        action="store_true",
        help=f"replace the files of the same names in {flag} (without it, a file this "
        "command would write that exists there is refused, and nothing is written)",
    )


def refuse_existing_files(
    paths: Iterable[str | Path], force: bool, flag: str = "--output-dir"
) -> None:
    """Refuse (exit 2, one line naming ``flag``, the first existing file, how many more
    and ``--force``) to replace any of ``paths`` that exists unless ``force``; before any
    work, so nothing is written."""
    from spsa_bench.results.atomic import OutputPathError

    if force:
        return
    existing = [str(path) for path in paths if os.path.lexists(path)]
    if existing:
        more = f" (and {len(existing) - 1} more it would write)" if len(existing) > 1 else ""
        raise OutputPathError(f"{flag}: {existing[0]!r} exists{more}; pass --force to replace them")
