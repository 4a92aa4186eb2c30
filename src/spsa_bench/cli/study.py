"""``spsa-bench <study>``: one subcommand per row of :data:`spsa_bench.studies.STUDIES`
(``cend-study``, ``workers-study``, ``budget-study``, ...).

Each runs the configuration's study section on ``--seeds`` (default: the config's)
and writes the row's outputs (its NetCDF dataset, tables and figure) into
``--output-dir``; a configuration without the section is refused, pointing to the
study's docs. A study whose estimated memory exceeds the machine's, or whose
estimated time exceeds a day, is refused before any run
(:meth:`~spsa_bench.studies.base.Study.check_estimates`), as is an ``--output-dir`` that
is empty text or a file, or whose output names are directories, devices or the
configuration (:func:`~spsa_bench.results.atomic.check_output_dir`), and one of whose
files exists there without ``--force``.
"""

from __future__ import annotations

import argparse

from spsa_bench.cli.common import add_config, load, seeds
from spsa_bench.cli.overwrite import add_force_dir, refuse_existing_files


class StudyCommand:
    """The subcommand of one study row (``add_parser`` as every command module has)."""

    def __init__(self, row):
        self.row = row

    def add_parser(self, sub) -> None:
        row = self.row
        files = ", ".join(output.file for output in row.outputs)
        p = sub.add_parser(row.command, help=row.help)
        add_config(p)
        p.add_argument(
            "--seeds", help="FIRST-LAST inclusive, e.g. 0-99 (default: the config's seeds)"
        )
        p.add_argument("--output-dir", required=True, help=f"directory for {files}")
        add_force_dir(p)
        p.add_argument("--quiet", action="store_true", help="no progress on stderr")
        p.set_defaults(func=self.run)

    def run(self, args: argparse.Namespace) -> int:
        from spsa_bench.results.atomic import check_output_dir

        row = self.row
        config = load(args)
        section = row.required(config)
        chosen = seeds(args, config)
        if row.check_seeds is not None:
            row.check_seeds(section, chosen)
        row.check_estimates(config, section, chosen)  # memory and time, before any run
        paths = check_output_dir(
            args.output_dir, [output.file for output in row.outputs], inputs=(args.config,)
        )
        refuse_existing_files(paths, args.force)
        ds = row.run(config, section, chosen, progress=None if args.quiet else row.progress)
        paths = row.write(ds, paths)
        if not args.quiet:
            row.progress(f"wrote {', '.join(str(p) for p in paths)}")
        return 0


def commands() -> dict[str, StudyCommand]:
    """``{command name: its subcommand}`` for every study row, in the table's order."""
    from spsa_bench.studies import STUDIES

    return {row.command: StudyCommand(row) for row in STUDIES.values()}
