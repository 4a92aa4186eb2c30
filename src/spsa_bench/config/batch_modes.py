"""Batch modes: how jobs are dispatched. A mode with ``workers: 1`` and ``batch: fixed``
is the synchronous runner; any other is an asynchronous pool
(:class:`~spsa_bench.dispatch.asynchronous.AsyncSettings`). ``batch: fishtest`` is a
variable batch with ``tc_ratio`` from Fishtest's worker rule at the mode's time control,
``batch: openbench`` OpenBench's workloads (``pairs_per``, ``distribution``), and a
``workers`` list expands into one mode per value."""

from __future__ import annotations

import copy
import dataclasses

from spsa_bench.config.records import BatchMode, ConfigError


def _expand_worker_lists(modes: dict) -> tuple[dict, dict[str, str]]:
    """Batch modes with ``workers`` given as a list become one mode per value, named
    ``<mode>-w<workers>``; returns the modes and ``{expanded name: configured name}``."""
    out, sweep = {}, {}
    for name, mode in modes.items():
        counts = mode["workers"]
        if not isinstance(counts, list):
            out[name] = mode
            continue
        for workers in counts:
            expanded = f"{name}-w{workers}"
            if expanded in modes or expanded in out:
                raise ConfigError(
                    f"batch_modes.{name}.workers: the expanded mode {expanded!r} is also "
                    "configured; rename one of them"
                )
            out[expanded] = {**copy.deepcopy(mode), "workers": workers}
            sweep[expanded] = name
    return out, sweep


def _fishtest_mode(where: str, raw: dict, default_tc: str) -> tuple[dict, dict]:
    """A ``batch: fishtest`` mode as the variable batch it is: ``tc_ratio`` from the
    worker's rule at the mode's ``tc`` (default: the top-level noise preset, else STC),
    game durations assumed for that time control unless given
    (:mod:`spsa_bench.model.time_control`)."""
    from spsa_bench.model.time_control import batch_multiplier, game_duration

    for key in ("tc_ratio", "batch_size"):
        if key in raw:
            raise ConfigError(
                f"{where}.{key}: not used by batch: fishtest (the batch follows Fishtest's "
                "rule from tc and each worker's concurrency)"
            )
    resolved = copy.deepcopy(raw)
    resolved.setdefault("tc", default_tc)
    resolved.setdefault("game_duration", game_duration(resolved["tc"]))
    return resolved, {
        **resolved,
        "batch": "variable",
        "tc_ratio": float(batch_multiplier(resolved["tc"])),
    }


def _check_openbench_keys(where: str, raw: dict) -> None:
    """``pairs_per``, ``distribution`` and ``reporting`` belong to ``batch: openbench``
    only, which sizes its workloads from them and takes neither ``batch_size`` nor
    ``tc_ratio``."""
    if raw["batch"] == "openbench":
        for key in ("batch_size", "tc_ratio"):
            if key in raw:
                raise ConfigError(
                    f"{where}.{key}: not used by batch: openbench (a workload is pairs_per "
                    "pairs per runner, docs/frameworks.md)"
                )
        return
    for key in ("pairs_per", "distribution", "reporting"):
        if key in raw:
            raise ConfigError(f"{where}.{key}: only batch: openbench takes {key}")


def resolve_batch_mode(
    name: str, raw: dict, num_pairs: int, default_tc: str = "STC"
) -> tuple[BatchMode, dict]:
    """The mode ``name`` configured as ``raw`` and its resolved settings (defaults filled
    in); errors name ``batch_modes.<name>``."""
    where = f"batch_modes.{name}"
    if raw["batch"] == "fishtest":
        resolved, raw = _fishtest_mode(where, raw, default_tc)
    else:
        if "tc" in raw:
            raise ConfigError(f"{where}.tc: only batch: fishtest takes a time control")
        resolved = copy.deepcopy(raw)
    _check_openbench_keys(where, raw)
    if raw["batch"] == "fixed":
        if "batch_size" not in raw:
            raise ConfigError(f"{where}.batch_size: required when batch is 'fixed'")
        if raw["batch_size"] > num_pairs:
            raise ConfigError(
                f"{where}.batch_size = {raw['batch_size']}: larger than num_pairs = {num_pairs}"
            )
    if raw["workers"] == 1 and raw["batch"] == "fixed":
        extra = sorted(set(raw) - {"workers", "batch", "batch_size"})
        if extra:
            raise ConfigError(
                f"{where}.{extra[0]}: not used by a synchronous (1 worker, fixed batch) mode"
            )
        return BatchMode(name, 1, "fixed", int(raw["batch_size"]), None), resolved
    # AsyncSettings holds the defaults and the checks; its messages name the
    # configuration keys, so only the batch mode's path is added here.
    from spsa_bench.dispatch.asynchronous import AsyncSettings

    fishtest = resolved["batch"] == "fishtest"
    unused = resolved["batch"] in ("fishtest", "openbench")  # tc_ratio: from tc, or none
    for key, value in AsyncSettings.config_defaults().items():
        if not (unused and key == "tc_ratio"):  # (a resolved mode must resolve again)
            resolved.setdefault(key, value)
    try:
        settings = AsyncSettings.from_config({**resolved, **raw} if fishtest else resolved)
    except ValueError as error:
        raise ConfigError(f"{where}.{error}") from None
    mode = BatchMode(
        name, settings.num_workers, resolved["batch"], resolved.get("batch_size"), settings
    )
    return mode, resolved


def default_time_control(noise) -> str:
    """The time control a ``batch: fishtest`` pool takes by default: the top-level noise
    preset when it is one of STC, LTC, VLTC, else STC."""
    return noise if isinstance(noise, str) and noise in ("STC", "LTC", "VLTC") else "STC"


def resolve_batch_modes(data: dict, num_pairs: int) -> dict[str, BatchMode]:
    """Workers lists expanded, every mode checked, defaults filled into ``data``."""
    batch_modes = {}
    data["batch_modes"], sweeps = _expand_worker_lists(data["batch_modes"])
    default_tc = default_time_control(data["noise"])
    for name, mode_raw in data["batch_modes"].items():
        mode, data["batch_modes"][name] = resolve_batch_mode(name, mode_raw, num_pairs, default_tc)
        batch_modes[name] = dataclasses.replace(mode, sweep=sweeps.get(name))
    return batch_modes
