"""The benchmark grid as the Snakemake workflow sees it.

The workflow expands optimizer arms x batch modes x scenarios x seed chunks into
cells, simulated by one job per arm group (a sweep's arms, or the arms outside a
sweep) x scenario x seed chunk. Each simulate job receives its cells' *cell
settings*: the part of the resolved configuration a cell's result depends on (that
arm's hyperparameters, that batch mode, that scenario, the budget, checkpoints,
signal, iteration counter and entropy) and nothing else, as one canonical JSON
string. Snakemake's params rerun trigger compares exactly this string, so editing
one arm re-runs the jobs of its group only, and rewriting a value in an equivalent
way (``5000`` for ``5000.0``, a default spelled out, keys reordered) re-runs nothing.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence

from spsa_bench.config.loader import Config, without_studies
from spsa_bench.config.schema import arm_properties, build_schema
from spsa_bench.optimizers import REGISTRY
from spsa_bench.optimizers.base import hyper_schema
from spsa_bench.studies import Study

#: The figures the figure rules draw (each as PNG and SVG), in the report's order.
FIGURES = (
    "convergence",
    "ecdf_pairs_to_target",
    "final_loss",
    "paired_difference",
    "async_staleness",
    "async_workers",
    "performance_profile",
    "aggregated_ecdf",
)

#: Top-level keys every simulation depends on.
RUN_KEYS = ("num_pairs", "checkpoints", "signal", "iteration_counter", "entropy")


def seed_chunks(first: int, count: int, per_job: int) -> list[tuple[int, int]]:
    """Inclusive ``(a, b)`` seed ranges of at most ``per_job`` seeds covering ``first .. first+count-1``."""
    if count < 1 or per_job < 1:
        raise ValueError("count and per_job must be positive")
    last = first + count - 1
    return [(a, min(a + per_job - 1, last)) for a in range(first, last + 1, per_job)]


def config_chunks(config: Config) -> list[tuple[int, int]]:
    return seed_chunks(config.seeds_first, config.seeds_count, config.seeds_per_job)


def _map_leaves(value, schema: dict | None, leaf):
    """``value`` with every non-container ``item`` replaced by ``leaf(item, its schema)``.

    Walks dicts (``properties``, else a dict-valued ``additionalProperties``) and lists
    (``items``) alongside the JSON Schema.
    """
    schema = schema or {}
    if isinstance(value, dict):
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        extra = extra if isinstance(extra, dict) else None
        return {key: _map_leaves(item, props.get(key, extra), leaf) for key, item in value.items()}
    if isinstance(value, list):
        return [_map_leaves(item, schema.get("items"), leaf) for item in value]
    return leaf(value, schema)


def _types(schema: dict) -> tuple:
    """The JSON Schema ``type`` of ``schema`` as a tuple (a nullable type is a list)."""
    kind = schema.get("type")
    return tuple(kind) if isinstance(kind, list) else (kind,)


def _as_number(value, schema: dict):
    """Integers as floats where the schema says ``number``."""
    if "number" in _types(schema) and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def _canonical(value, schema: dict | None):
    """``value`` with integers written as floats wherever ``schema`` says ``number``."""
    return _map_leaves(value, schema, _as_number)


_SCHEMA_CACHE: dict[tuple, dict] = {}


def _schema_properties() -> dict:
    """``build_schema()["properties"]`` for the kinds registered now, built once per set of
    kinds: Snakemake evaluates every job's params (its cell settings) several times,
    and rebuilding the whole schema for each was a third of the samples of a profile of
    the Snakemake process (2026-11-27; that profile's CPU total, about 200 s, was later
    found too high: the process uses 37-39 s in a whole default run, docs/performance.md).
    Read-only to its callers."""
    key = tuple((kind, id(spec)) for kind, spec in REGISTRY.items())
    if key not in _SCHEMA_CACHE:
        _SCHEMA_CACHE.clear()
        _SCHEMA_CACHE[key] = build_schema()["properties"]
    return _SCHEMA_CACHE[key]


def arm_settings(config: Config, optimizer: str) -> dict:
    """The resolved settings of one optimizer arm: ``{"kind": ..., **hyperparameters}``."""
    arm = config.optimizer(optimizer)
    settings = copy.deepcopy(config.resolved["optimizers"][optimizer])
    return _canonical(settings, {"properties": hyper_schema(REGISTRY[arm.kind].hyper)})


def cell_settings(config: Config, optimizer: str, batch_mode: str, scenario: str) -> dict:
    """A raw configuration holding only what one cell's simulation depends on.

    ``resolve(cell | {"seeds": ...})`` gives back a configuration whose
    simulation of this cell equals the full configuration's. Free-text scenario
    descriptions are left out (they change no number).
    """
    config.batch_mode(batch_mode)
    config.scenario(scenario)
    schema = _schema_properties()
    resolved = config.resolved
    # the budget as num_pairs whether the config gave num_pairs or games
    cell = {key: _canonical(resolved[key], schema[key]) for key in RUN_KEYS if key != "num_pairs"}
    cell["num_pairs"] = int(config.num_pairs)
    mode = _canonical(
        copy.deepcopy(resolved["batch_modes"][batch_mode]),
        schema["batch_modes"]["additionalProperties"],
    )
    scen = copy.deepcopy(resolved["scenarios"][scenario])
    scen.pop("description", None)
    cell["batch_modes"] = {batch_mode: mode}
    cell["scenarios"] = {scenario: _canonical(scen, schema["scenarios"]["additionalProperties"])}
    cell["optimizers"] = {optimizer: arm_settings(config, optimizer)}
    cell["baseline"] = optimizer
    return cell


def _study_settings(config: Config, key: str, scope) -> dict:
    """What a study of scenarios and arms depends on: the run keys (the scope's
    ``num_pairs``), the noise, the seeds, the scope's batch mode, scenarios and
    configured arms, and the study's section itself."""
    schema = _schema_properties()
    resolved = config.resolved
    settings = {k: _canonical(resolved[k], schema[k]) for k in RUN_KEYS if k != "num_pairs"}
    settings["num_pairs"] = int(scope.num_pairs)
    settings["noise"] = copy.deepcopy(resolved["noise"])
    settings["seeds"] = {"first": config.seeds_first, "count": config.seeds_count}
    mode = scope.batch_mode
    settings["batch_modes"] = {mode: copy.deepcopy(resolved["batch_modes"][mode])}
    settings["scenarios"] = {
        name: {k: v for k, v in resolved["scenarios"][name].items() if k != "description"}
        for name in scope.scenarios
    }
    settings["optimizers"] = {name: arm_settings(config, name) for name in scope.arms}
    if not scope.arms:  # a configuration needs one arm: any of the grid's, unused
        first = next(iter(resolved["optimizers"]))
        settings["optimizers"] = {first: arm_settings(config, first)}
    settings["baseline"] = next(iter(settings["optimizers"]))
    settings[key] = copy.deepcopy(resolved[key])
    return settings


def study_settings(config: Config, study: Study) -> dict | None:
    """What the study of row ``study`` depends on (its rerun trigger, and the
    configuration its job resolves): the run keys and seeds, the batch mode, scenarios
    and configured arms of its :class:`~spsa_bench.studies.base.Scope`, and the study's
    own section; ``None`` when the configuration has no such section. A per-cell scope
    is the cell's settings (:func:`cell_settings`) with the seeds and the section."""
    section = study.section(config)
    if section is None:
        return None
    scope = study.scope(config, section)
    if scope.per_cell:
        (scenario,), (arm,) = scope.scenarios, scope.arms
        settings = cell_settings(config, arm, scope.batch_mode, scenario)
        settings["seeds"] = {"first": config.seeds_first, "count": config.seeds_count}
        settings[study.key] = copy.deepcopy(config.resolved[study.key])
        return settings
    return _study_settings(config, study.key, scope)


def tuning_trigger(config: Config) -> dict:
    """What the tuning runs read (rule tuning_runs): the grid (every swept arm on every
    scenario and batch mode, at the run keys and noise) and the ``tuning`` section, not
    the studies' sections, so editing a study reruns no tuning run."""
    return {**without_studies(config.resolved), "tuning": config.resolved["tuning"]}


def chunk_tuning_seeds(config: Config, first: int, last: int) -> list[int]:
    """The tuning seeds the sweep jobs of seed chunk ``first .. last`` replay beside
    their own (docs/benchmark.md, "Tuning protocol"): the configuration's tuning seeds
    shared out over its seed chunks in order, the k-th of ``n`` chunks taking
    ``seeds[k * T // n : (k + 1) * T // n]`` of the ``T`` (none without a ``tuning``
    section, or for a range that is not one of the chunks)."""
    from spsa_bench.config.sections.tuning import parse

    settings = parse(config) if config.resolved.get("tuning") is not None else None
    chunks = config_chunks(config)
    if settings is None or (int(first), int(last)) not in chunks:
        return []
    k, seeds = chunks.index((int(first), int(last))), list(settings.seeds)
    return seeds[k * len(seeds) // len(chunks) : (k + 1) * len(seeds) // len(chunks)]


def tuning_part_path(batch_mode: str, scenario: str, sweep: str, chunk: Sequence[int]) -> str:
    """The final Elo losses at the tuning seeds that one sweep job writes (rule
    tuning_runs gathers them into ``results/fishtest/tuning.nc``)."""
    a, b = chunk
    return f"results/fishtest/tuning/{batch_mode}/{scenario}/{sweep}/seeds-{a}-{b}.json"


def sweeps(config: Config) -> dict[str, list[list]]:
    """``{configured arm: [[expanded arm, {hyperparameter: value}], ...]}`` of the
    configuration's hyperparameter sweeps (empty when nothing is swept; the record
    exists only when the user's configuration was resolved, not a resolved copy)."""
    out: dict[str, list[list]] = {}
    for name, arm in config.optimizers.items():
        if arm.sweep is not None:
            out.setdefault(arm.sweep, []).append([name, dict(arm.swept)])
    return out


def validated_arms(config: Config) -> list[str]:
    """The arms the workflow's macro-versus-micro validation runs, in config order:
    every arm whose kind has a micro reference, but of a sweep only its middle arm
    (the arms of a sweep run one code path and differ in one number, so validating
    one of them checks the path)."""
    middle = {sweep: arms[len(arms) // 2][0] for sweep, arms in sweeps(config).items()}
    return [
        name
        for name, arm in config.optimizers.items()
        if REGISTRY[arm.kind].micro is not None and (arm.sweep is None or middle[arm.sweep] == name)
    ]


def schedule_settings(config: Config, batch_mode: str) -> dict:
    """What an (optimizer- and scenario-independent) job schedule depends on."""
    schema = _schema_properties()
    resolved = config.resolved
    mode = _canonical(
        copy.deepcopy(resolved["batch_modes"][batch_mode]),
        schema["batch_modes"]["additionalProperties"],
    )
    return {
        "num_pairs": int(config.num_pairs),
        "entropy": int(resolved["entropy"]),
        "batch_modes": {batch_mode: mode},
    }


def to_json(settings: dict) -> str:
    """Canonical JSON text (sorted keys, no spaces) for params and provenance."""
    return json.dumps(settings, sort_keys=True, separators=(",", ":"))


def with_seeds(settings: dict, first: int, last: int) -> dict:
    """A cell's raw configuration completed with the seed range ``first .. last``."""
    raw = copy.deepcopy(settings)
    raw["seeds"] = {"first": int(first), "count": int(last) - int(first) + 1}
    return raw


def kinds(config: Config) -> list[str]:
    """Optimizer kinds used by the configuration's arms, in registry order."""
    used = {arm.kind for arm in config.optimizers.values()}
    return [kind for kind in REGISTRY if kind in used]


def async_modes(config: Config) -> list[str]:
    return [name for name, mode in config.batch_modes.items() if not mode.is_sync]


def run_path(batch_mode: str, scenario: str, optimizer: str, chunk: Sequence[int]) -> str:
    a, b = chunk
    return f"results/runs/{batch_mode}/{scenario}/{optimizer}/seeds-{a}-{b}.nc"


def _from_string(value, schema: dict):
    """A string as the integer or number its schema asks for (else unchanged)."""
    if isinstance(value, str):
        kinds = _types(schema)
        if "null" in kinds and value in ("null", "~", ""):
            return None
        try:
            if "integer" in kinds:
                return int(value)
            if "number" in kinds:
                return float(value)
        except ValueError:
            return value  # left for the schema to report
    return value


def _coerce(value, schema: dict | None):
    return _map_leaves(value, schema, _from_string)


def coerce_strings(raw: dict) -> dict:
    """``raw`` with numeric strings turned into numbers where the schema expects numbers.

    Snakemake parses nested ``--config`` values (``--config 'seeds={count: 10}'``)
    with YAML's base loader, which keeps every scalar a string; this restores
    the types the schema asks for, so nested overrides work like top-level ones.
    Anything else is left for validation to report.
    """
    if not isinstance(raw, dict):
        return raw
    schema = build_schema()
    out = _coerce(
        raw,
        {k: v for k, v in schema.items() if k != "properties"}
        | {"properties": {k: v for k, v in schema["properties"].items() if k != "optimizers"}},
    )
    arms = raw.get("optimizers")
    if isinstance(arms, dict):
        out["optimizers"] = {}
        for name, arm in arms.items():
            kind = arm.get("kind", name) if isinstance(arm, dict) else name
            spec = REGISTRY.get(kind)
            props = arm_properties(spec.hyper) if spec is not None else {}
            out["optimizers"][name] = _coerce(arm, {"properties": props})
    return out


#: Snakemake options that choose the workflow and its configuration, with how many values
#: each takes (``None``: one or more): a report must be built with the run's.
RUN_OPTIONS = {
    "--configfile": None,
    "--configfiles": None,
    "--config": None,
    "-C": None,
    "--profile": 1,
    "--workflow-profile": 1,
    "--directory": 1,
    "-d": 1,
    "--snakefile": 1,
    "-s": 1,
    "--replace-workflow-config": 0,
}


def run_options(argv: Sequence[str]) -> list[str]:
    """The :data:`RUN_OPTIONS` of a Snakemake command line ``argv`` (without the program
    name), with their values, in their order; ``--option=value`` forms as given."""
    out: list[str] = []
    tokens = list(argv)
    i = 0
    while i < len(tokens):
        token = tokens[i]
        name = token.split("=", 1)[0]
        if name not in RUN_OPTIONS:
            i += 1
            continue
        out.append(token)
        i += 1
        if "=" in token:
            continue
        count = RUN_OPTIONS[name]
        taken = 0
        while i < len(tokens) and not tokens[i].startswith("-"):
            if count is not None and taken == count:
                break
            out.append(tokens[i])
            i += 1
            taken += 1
    return out


def done_message(results: str = "results", options: Sequence[str] = ()) -> str:
    """What a finished run prints last: where its results are, the findings page when
    the run wrote one, and the command that builds the report, given the run's
    ``options`` (:func:`run_options`: a report of a ``--configfile`` run needs it too)."""
    import shlex
    from pathlib import Path

    lines = [f"spsa-bench: done; the results are in {results}/"]
    findings = Path(results) / "findings.md"
    if findings.exists():
        lines.append(f"  what the run found: {findings}")
    command = f"snakemake --report {results}/report.html"
    if options:
        command += " " + shlex.join(options)
    lines.append(f"  the report: {command}")
    return "\n".join(lines)


def table_pages(config: Config, studies, validated: bool) -> dict[str, tuple[str, str, str]]:
    """The tables the report shows as pages (rule table_pages): ``{name: (source,
    caption, label)}``, each written to ``results/tables/<name>.html`` from its Markdown
    form (the verdicts included) or, without one, its CSV; caption and label are the
    CSV's, which the report keeps beside the page as a download. ``studies`` are the
    keys of the configuration's study rows."""
    from spsa_bench.studies import STUDIES

    pages = {
        "convergence": ("convergence.md", "convergence_table.rst", "convergence"),
        "async": ("async.md", "async_table.rst", "asynchronous KPIs"),
        "ranks": ("ranks.md", "rank_table.rst", "ranks"),
    }
    if config.resolved.get("tuning") is not None:
        pages["tuned"] = ("tuned.md", "tuned.rst", "tuned settings")
    if validated:
        pages["validation_gaps"] = ("validation_gaps.csv", "validation_gaps.rst", "validation gaps")
    pages = {
        name: (f"results/tables/{source}", caption, label)
        for name, (source, caption, label) in pages.items()
    }
    for key in studies:
        outputs = {output.name: output for output in STUDIES[key].outputs}
        csv, md = outputs["csv"], outputs["md"]
        pages[csv.path.rsplit("/", 1)[-1].removesuffix(".csv")] = (
            md.path,
            csv.caption,
            csv.labels["table"],
        )
    return pages


def noise_settings(config: Config) -> list:
    """The noise models the noise figure shows: vendored, the presets, then every other
    setting the configuration's scenarios use (each once, in order)."""
    settings = ["vendored", "STC", "LTC", "VLTC"]
    for scenario in config.scenarios.values():
        if scenario["noise"] not in settings:
            settings.append(scenario["noise"])
    return settings
