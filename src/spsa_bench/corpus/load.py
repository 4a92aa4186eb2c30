"""Read and validate corpus records: one file (:func:`load_record`) or a folder
(:func:`load_corpus`, the packaged ``data/`` by default).

Every refusal is a :class:`~spsa_bench.corpus.records.CorpusError` of one line:
``FILE: field FIELD = VALUE: what is wrong``. The block beside a record
(``<stem>.block``) is parsed with :func:`spsa_bench.config.param_block.parse_block`,
so a bad block line is named by its line, field and value.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from pathlib import Path

from spsa_bench.config.param_block import BlockError, parse_block, read_block_text
from spsa_bench.config.safe_yaml import YamlError, load_text
from spsa_bench.corpus.records import (
    KINDS,
    RESULTS,
    SPRT_SCALES,
    STATUSES,
    TESTS,
    TRACKED,
    CorpusError,
    Parameter,
    Provenance,
    Source,
    Tune,
    TuneRecord,
    Verification,
)

#: The packaged corpus.
DATA = Path(__file__).resolve().parent / "data"
NAME = re.compile(r"^(\d{4})-[a-z0-9]+(-[a-z0-9]+)*$")
TIME_CONTROL = re.compile(r"^\d+(\.\d+)?\+\d+(\.\d+)?$")
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
#: Bytes of a record read at most.
MAX_RECORD_BYTES = 1_000_000

_TOP = {
    "name": True, "title": True, "date": True, "kind": True, "sources": True, "tune": True,
    "parameters": True, "verification": True, "provenance": True, "notes": False,
}  # fmt: skip
_VERIFICATION = (
    "label", "time_control", "threads", "test", "sprt", "sprt_scale", "games", "wins", "losses",
    "draws", "ptnml", "result", "elo", "elo_error",
)  # fmt: skip


class _Checker:
    """Checks of one file's values; every error names the file, the field and the value."""

    def __init__(self, path: Path):
        self.path = path

    def fail(self, field: str, value, problem: str):
        shown = repr(value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        raise CorpusError(f"{self.path}: field {field} = {shown}: {problem}")

    def mapping(self, field: str, value, required: dict[str, bool]) -> dict:
        if not isinstance(value, dict):
            self.fail(field, value, "must be a mapping")
        prefix = f"{field}." if field else ""
        for key in value:
            if key not in required:
                self.fail(
                    f"{prefix}{key}", value[key], f"unknown key (expected {sorted(required)})"
                )
        for key, needed in required.items():
            if needed and key not in value:
                self.fail(f"{prefix}{key}", None, "is missing")
        return value

    def text(self, field: str, value, *, optional: bool = False) -> str | None:
        if value is None and optional:
            return None
        if not isinstance(value, str) or not value.strip():
            self.fail(field, value, "must be non-empty text")
        return value

    def choice(self, field: str, value, choices, *, optional: bool = False):
        if value is None and optional:
            return None
        if value not in choices:
            self.fail(field, value, f"must be one of {', '.join(choices)}")
        return value

    def number(self, field: str, value, *, optional: bool = False, low=None) -> float | None:
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(field, value, "must be a number")
        if not math.isfinite(value):
            self.fail(field, value, "must be finite")
        if low is not None and value < low:
            self.fail(field, value, f"must be >= {low}")
        return float(value)

    def count(self, field: str, value, *, optional: bool = False, low: int = 0) -> int | None:
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            self.fail(field, value, f"must be an integer >= {low}")
        return value

    def time_control(self, field: str, value, *, optional: bool = False) -> str | None:
        if value is None and optional:
            return None
        if not isinstance(value, str) or not TIME_CONTROL.match(value):
            self.fail(field, value, 'must be "base+increment" in seconds, e.g. "60+0.6"')
        return value


def _sources(check: _Checker, value) -> tuple[Source, ...]:
    if not isinstance(value, list) or not value:
        check.fail("sources", value, "must be a non-empty list")
    sources = []
    for i, item in enumerate(value):
        field = f"sources[{i}]"
        check.mapping(field, item, {"id": True, "ref": True, "what": True})
        source = Source(
            check.text(f"{field}.id", item["id"]),
            check.text(f"{field}.ref", item["ref"]),
            check.text(f"{field}.what", item["what"]),
        )
        if source.id in {s.id for s in sources}:
            check.fail(f"{field}.id", source.id, "repeats an earlier source id")
        sources.append(source)
    return tuple(sources)


def _tune(check: _Checker, value) -> Tune:
    check.mapping("tune", value, {key: True for key in TRACKED})
    tune = Tune(
        time_control=check.time_control("tune.time_control", value["time_control"], optional=True),
        threads=check.count("tune.threads", value["threads"], optional=True, low=1),
        games=check.count("tune.games", value["games"], optional=True, low=1),
        A=check.number("tune.A", value["A"], optional=True, low=0),
        A_ratio=check.number("tune.A_ratio", value["A_ratio"], optional=True, low=0),
        alpha=check.number("tune.alpha", value["alpha"], optional=True, low=0),
        gamma=check.number("tune.gamma", value["gamma"], optional=True, low=0),
    )
    if tune.A is not None and tune.A_ratio is not None:
        check.fail("tune.A_ratio", tune.A_ratio, "give A or A_ratio, not both")
    return tune


def _parameters(check: _Checker, value) -> tuple[Parameter, ...]:
    if not isinstance(value, list) or not value:
        check.fail("parameters", value, "must be a non-empty list")
    parameters, seen = [], set()
    for i, item in enumerate(value):
        field = f"parameters[{i}]"
        check.mapping(field, item, {"name": True, "start": True, "final": True, "note": False})
        name = check.text(f"{field}.name", item["name"])
        if name in seen:
            check.fail(f"{field}.name", name, "repeats an earlier parameter")
        seen.add(name)
        parameters.append(
            Parameter(
                name,
                check.number(f"{field}.start", item["start"]),
                check.number(f"{field}.final", item["final"]),
                check.text(f"{field}.note", item.get("note"), optional=True),
            )
        )
    return tuple(parameters)


def _verification(check: _Checker, i: int, item) -> Verification:
    field = f"verification[{i}]"
    check.mapping(field, item, {key: True for key in _VERIFICATION})
    test = check.choice(f"{field}.test", item["test"], TESTS)
    sprt = item["sprt"]
    if test == "sprt":
        if not isinstance(sprt, list) or len(sprt) != 2:
            check.fail(f"{field}.sprt", sprt, "an SPRT needs its bounds [elo0, elo1]")
        sprt = tuple(check.number(f"{field}.sprt[{j}]", v) for j, v in enumerate(sprt))
        if not sprt[0] < sprt[1]:
            check.fail(f"{field}.sprt", list(sprt), "elo0 must be below elo1")
    elif sprt is not None:
        check.fail(f"{field}.sprt", sprt, "a fixed-games test has no SPRT bounds (null)")
    counts = {
        key: check.count(f"{field}.{key}", item[key], optional=True)
        for key in ("games", "wins", "losses", "draws")
    }
    if None not in counts.values():
        total = counts["wins"] + counts["losses"] + counts["draws"]
        if total != counts["games"]:
            check.fail(f"{field}.games", counts["games"], f"W + L + D = {total}")
    ptnml = item["ptnml"]
    if ptnml is not None:
        if not isinstance(ptnml, list) or len(ptnml) != 5:
            check.fail(f"{field}.ptnml", ptnml, "must be five pair counts (0-2) or null")
        ptnml = tuple(check.count(f"{field}.ptnml[{j}]", v) for j, v in enumerate(ptnml))
        if counts["games"] is not None and 2 * sum(ptnml) != counts["games"]:
            check.fail(f"{field}.ptnml", list(ptnml), f"2 x pairs != games {counts['games']}")
    result = check.choice(f"{field}.result", item["result"], RESULTS)
    if (result == "fixed") != (test == "fixed"):
        check.fail(f"{field}.result", result, f"does not fit test {test}")
    return Verification(
        label=check.text(f"{field}.label", item["label"], optional=True),
        time_control=check.time_control(
            f"{field}.time_control", item["time_control"], optional=True
        ),
        threads=check.count(f"{field}.threads", item["threads"], optional=True, low=1),
        test=test,
        sprt=sprt,
        sprt_scale=check.choice(
            f"{field}.sprt_scale", item["sprt_scale"], SPRT_SCALES, optional=True
        ),
        ptnml=ptnml,
        result=result,
        elo=check.number(f"{field}.elo", item["elo"], optional=True),
        elo_error=check.number(f"{field}.elo_error", item["elo_error"], optional=True, low=0),
        **counts,
    )


def _provenance(check: _Checker, value, sources, covered: set[str]) -> dict[str, Provenance]:
    if not isinstance(value, dict):
        check.fail("provenance", value, "must be a mapping of field -> {status, source, note}")
    ids = {s.id for s in sources}
    result = {}
    for key, item in value.items():
        field = f"provenance.{key}"
        if key not in covered:
            check.fail(field, item, f"names no non-null field (expected {sorted(covered)})")
        check.mapping(field, item, {"status": True, "source": True, "note": False})
        status = check.choice(f"{field}.status", item["status"], STATUSES)
        source = item["source"]
        if source not in ids:
            check.fail(f"{field}.source", source, f"is not a source id ({sorted(ids)})")
        note = check.text(f"{field}.note", item.get("note"), optional=True)
        if status == "inferred" and note is None:
            check.fail(f"{field}.note", None, "an inferred field says how (note)")
        result[key] = Provenance(status, source, note)
    for key in sorted(covered - result.keys()):
        check.fail(f"provenance.{key}", None, "is missing: say where this field comes from")
    return result


def _block(check: _Checker, path: Path, parameters):
    block_path = path.with_suffix(".block")
    if not block_path.exists():
        return None
    try:
        block = parse_block(read_block_text(block_path))
    except BlockError as error:
        raise CorpusError(f"{block_path}: {error}") from None
    by_name = {p.name: (i, p) for i, p in enumerate(parameters)}
    for j, name in enumerate(block.names):
        if name not in by_name:
            check.fail("parameters", name, f"block line for {name!r} has no parameter entry")
        i, parameter = by_name[name]
        if parameter.start != block.start[j]:
            check.fail(
                f"parameters[{i}].start",
                parameter.start,
                f"differs from the block's start {block.start[j]:g}",
            )
    return block


def _read(path: Path):
    try:
        if path.stat().st_size > MAX_RECORD_BYTES:
            raise CorpusError(f"{path}: larger than {MAX_RECORD_BYTES:,} bytes: not a record")
        return load_text(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError:
        raise CorpusError(f"{path}: not UTF-8 text") from None
    except YamlError as error:
        raise CorpusError(f"{path}: {error}") from None
    except OSError as error:
        raise CorpusError(f"{path}: cannot read: {error.strerror or error}") from None


def load_record(path) -> TuneRecord:
    """One record, validated, with its block when ``<stem>.block`` exists beside it."""
    path = Path(path)
    raw = _read(path)
    check = _Checker(path)
    check.mapping("", raw, _TOP)
    name = check.text("name", raw["name"])
    match = NAME.match(name)
    if not match or name != path.stem:
        check.fail("name", name, f"must be the file's stem {path.stem!r}, YEAR-short-name")
    date = raw["date"]
    if isinstance(date, _dt.date):
        date = date.isoformat()
    if not isinstance(date, str) or not DATE.match(date):
        check.fail("date", raw["date"], "must be a date YYYY-MM-DD")
    try:
        _dt.date.fromisoformat(date)
    except ValueError:
        check.fail("date", date, "is not a calendar date")
    if date[:4] != match.group(1):
        check.fail("date", date, f"year differs from the name's {match.group(1)}")
    sources = _sources(check, raw["sources"])
    tune = _tune(check, raw["tune"])
    parameters = _parameters(check, raw["parameters"])
    if not isinstance(raw["verification"], list):
        check.fail("verification", raw["verification"], "must be a list (empty when unknown)")
    verification = tuple(_verification(check, i, v) for i, v in enumerate(raw["verification"]))
    block = _block(check, path, parameters)
    covered = {key for key in TRACKED if getattr(tune, key) is not None} | {"parameters"}
    covered |= {f"verification[{i}]" for i in range(len(verification))}
    if any(v.sprt_scale is not None for v in verification):
        covered.add("sprt_scale")
    if block is not None:
        covered |= {"block", "step"}
    provenance = _provenance(check, raw["provenance"], sources, covered)
    return TuneRecord(
        name=name,
        title=check.text("title", raw["title"]),
        date=date,
        kind=check.choice("kind", raw["kind"], KINDS),
        sources=sources,
        tune=tune,
        parameters=parameters,
        verification=verification,
        provenance=provenance,
        block=block,
        notes=check.text("notes", raw.get("notes"), optional=True),
    )


def load_corpus(folder=None) -> tuple[TuneRecord, ...]:
    """Every record of ``folder`` (the packaged corpus by default), sorted by date and
    name; a ``.block`` file without its record is refused too."""
    folder = Path(DATA if folder is None else folder)
    if not folder.is_dir():
        raise CorpusError(f"{folder}: not a folder of tune records")
    stems = {p.stem for p in folder.glob("*.yaml")}
    for orphan in sorted(folder.glob("*.block")):
        if orphan.stem not in stems:
            raise CorpusError(f"{orphan}: a block without its record {orphan.stem}.yaml")
    records = [load_record(path) for path in sorted(folder.glob("*.yaml"))]
    return tuple(sorted(records, key=lambda r: (r.date, r.name)))
