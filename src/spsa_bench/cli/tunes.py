"""``spsa-bench tunes``: the corpus of real Stockfish SPSA tunes (issue 30).

``tunes list`` prints one row per record (name, date, kind, the tune's time control,
parameters, games, the verification results); ``tunes show NAME`` prints one record:
its sources, hyperparameters, every parameter's start and final value (with its move
in c_end units when the block is known), the block, the verification tests and what
is quoted and what inferred. ``--corpus DIR`` reads another folder of records.
"""

from __future__ import annotations

import argparse
import difflib
import sys


def add_parser(sub) -> None:
    p = sub.add_parser(
        "tunes",
        help="list or show the sourced corpus of real Stockfish SPSA tunes",
        description="The corpus of real Stockfish SPSA tunes: one validated record per tune "
        "(sources, time control, games, hyperparameters, start and final values, "
        "verification tests, what is quoted and what inferred).",
    )
    p.add_argument(
        "--corpus",
        metavar="DIR",
        default=None,
        help="a folder of tune records (default: the corpus shipped with the package)",
    )
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    actions.add_parser("list", help="one row per tune: name, date, kind, TC, parameters, games, "
                       "verification")  # fmt: skip
    show = actions.add_parser(
        "show", help="one tune: sources, parameters and their moves, block, tests, provenance"
    )
    show.add_argument("name", help="the tune's name, as `tunes list` prints it")
    p.set_defaults(func=run)


def _number(value) -> str:
    if value is None:
        return "?"
    return f"{int(value)}" if float(value).is_integer() else f"{value:g}"


def _test_text(test) -> str:
    result = test.result if test.test == "sprt" else "fixed"
    elo = ""
    if test.elo is not None:
        error = f"+-{test.elo_error:g}" if test.elo_error is not None else ""
        elo = f" {test.elo:+g}{error}"
    elif test.score_elo is not None:
        elo = f" ~{test.score_elo:+.1f}"
    where = test.time_control or test.label or "TC ?"
    return f"{where} {result}{elo}"


def _list(records) -> str:
    header = ("name", "date", "kind", "TC", "params", "games", "verification")
    rows = [
        (
            r.name,
            r.date,
            r.kind,
            r.tune.time_control or "?",
            str(len(r.parameters)),
            _number(r.tune.games),
            "; ".join(_test_text(t) for t in r.verification) or "-",
        )
        for r in records
    ]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header) - 1)]
    lines = []
    for row in [header, *rows]:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    known = sum(r.tune.games is not None for r in records)
    lines.append(f"{len(records)} tunes, {known} with a known budget (games).")
    lines.append(
        "verification: time control, SPRT result or fixed games, Elo as quoted (+-error), "
        "else ~ the logistic Elo of the quoted W/L/D."
    )
    return "\n".join(lines) + "\n"


def _provenance_text(record, key: str) -> str:
    entry = record.provenance.get(key)
    if entry is None:
        return ""
    note = f": {entry.note}" if entry.note else ""
    return f"  [{entry.status}, {entry.source}{note}]"


def _show(record) -> str:
    out = [f"{record.name}: {record.title}", f"date {record.date}, kind {record.kind}", ""]
    out.append("sources:")
    out += [f"  {s.id}: {s.ref} ({s.what})" for s in record.sources]
    out.append("")
    out.append("tune (null = unknown):")
    for key in ("time_control", "threads", "games", "A", "A_ratio", "alpha", "gamma"):
        value = getattr(record.tune, key)
        shown = "null" if value is None else _number(value) if key != "time_control" else value
        out.append(f"  {key}: {shown}{_provenance_text(record, key)}")
    out.append("")
    moves = record.moves()
    out.append(f"parameters ({len(record.parameters)}):{_provenance_text(record, 'parameters')}")
    heading = f"  {'name':<28} {'start':>9} {'final':>9}"
    out.append(heading + ("  move (c_end)" if moves else ""))
    for p in record.parameters:
        move = f"  {moves[p.name]:+.2f}" if p.name in moves else ""
        note = f"  ({p.note})" if p.note else ""
        out.append(f"  {p.name:<28} {_number(p.start):>9} {_number(p.final):>9}{move}{note}")
    if moves:
        out.append(f"  median |move|: {record.median_abs_move():.2f} c_end")
    out.append("")
    if record.block is None:
        out.append("block: unknown (no c_end, no moves in c_end units)")
    else:
        out.append(f"block (name,start,min,max,c_end,r_end):{_provenance_text(record, 'block')}")
        out += [f"  {line}" for line in record.block.to_text().splitlines()]
    out.append("")
    out.append("verification:")
    if not record.verification:
        out.append("  none recorded")
    for i, t in enumerate(record.verification):
        bounds = f" SPRT{list(t.sprt)} ({t.sprt_scale or 'scale ?'})" if t.sprt else ""
        counts = f" N {_number(t.games)} W {_number(t.wins)} L {_number(t.losses)}"
        counts += f" D {_number(t.draws)}"
        ptnml = f" ptnml {list(t.ptnml)}" if t.ptnml else ""
        threads = f" th {t.threads}" if t.threads else ""
        out.append(
            f"  {t.label or '-'} {t.time_control or 'TC ?'}{threads}{bounds}{counts}{ptnml}: {_test_text(t)}"
            f"{_provenance_text(record, f'verification[{i}]')}"
        )
    if record.notes:
        out += ["", "notes: " + " ".join(record.notes.split())]
    return "\n".join(out) + "\n"


def run(args: argparse.Namespace) -> int:
    from spsa_bench.corpus.load import load_corpus
    from spsa_bench.corpus.records import CorpusError

    try:
        records = load_corpus(args.corpus)
    except CorpusError as error:
        print(f"spsa-bench: error: {' '.join(str(error).split())}", file=sys.stderr)
        return 2
    if args.action == "list":
        sys.stdout.write(_list(records))
        return 0
    by_name = {r.name: r for r in records}
    if args.name not in by_name:
        close = difflib.get_close_matches(args.name, list(by_name), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else "; see `spsa-bench tunes list`"
        print(f"spsa-bench: error: no tune named {args.name!r}{hint}", file=sys.stderr)
        return 2
    sys.stdout.write(_show(by_name[args.name]))
    return 0
