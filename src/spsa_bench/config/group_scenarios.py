"""The checks of a *groups* scenario: parameter groups with their Elo geometry
(``start_elo < peak_elo``, each group's true weight ``w_true``, the developer's ``w_dev``,
``theta_start``, ``theta_peak`` and optional bounds), refused by key when the bowl
``w_true (theta - theta_peak)^2`` would overflow a float, be flat at the start, or not
be derivable (:func:`spsa_bench.model.bowl.build_problem`)."""

from __future__ import annotations

import math

from spsa_bench.config.records import ConfigError


def check_groups(name: str, scenario: dict) -> None:
    where = f"scenarios.{name}"
    if scenario["start_elo"] >= scenario["peak_elo"]:
        raise ConfigError(
            f"{where}.start_elo = {scenario['start_elo']}: must be below peak_elo = {scenario['peak_elo']}"
        )
    if not math.isfinite(float(scenario["peak_elo"]) - float(scenario["start_elo"])):
        raise ConfigError(
            f"{where}.start_elo = {scenario['start_elo']}: peak_elo - start_elo overflows a float"
        )
    seen = set()
    any_displaced = False
    for index, group in enumerate(scenario["groups"]):
        gwhere = f"{where}.groups[{index}]"
        if group["name"] in seen:
            raise ConfigError(f"{gwhere}.name = {group['name']!r}: duplicate group name")
        seen.add(group["name"])
        distance = float(group["theta_start"]) - float(group["theta_peak"])
        if not math.isfinite(distance * distance * group["w_true"] * group["count"]):
            raise ConfigError(
                f"{gwhere}.theta_start = {group['theta_start']}: w_true (theta_start - theta_peak)^2 "
                f"overflows a float (theta_peak = {group['theta_peak']})"
            )
        if group["w_true"] > 0 and group["w_dev"] <= 0:
            raise ConfigError(
                f"{gwhere}.w_dev = {group['w_dev']}: must be > 0 on an active parameter (w_true > 0)"
            )
        has_min, has_max = "theta_min" in group, "theta_max" in group
        if has_min != has_max:
            raise ConfigError(f"{gwhere}: give both theta_min and theta_max or neither")
        if has_min:
            if group["theta_min"] >= group["theta_max"]:
                raise ConfigError(
                    f"{gwhere}.theta_min = {group['theta_min']}: must be below theta_max = {group['theta_max']}"
                )
            if not math.isfinite(float(group["theta_max"]) - float(group["theta_min"])):
                raise ConfigError(
                    f"{gwhere}.theta_max = {group['theta_max']}: theta_max - theta_min overflows a float"
                )
            if not group["theta_min"] <= group["theta_start"] <= group["theta_max"]:
                raise ConfigError(
                    f"{gwhere}.theta_start = {group['theta_start']}: outside [theta_min, theta_max]"
                )
        elif group["w_dev"] <= 0:
            raise ConfigError(
                f"{gwhere}.w_dev = {group['w_dev']}: w_dev = 0 needs explicit theta_min/theta_max"
            )
        if group["w_true"] > 0 and group["theta_start"] != group["theta_peak"]:
            any_displaced = True
    if not any_displaced:
        raise ConfigError(
            f"{where}.groups: no active parameter starts away from its peak, so the bowl is flat"
        )


def check_problem(name: str, scenario: dict, num_pairs: int) -> None:
    """Build the scenario's problem once, so what cannot be derived is refused here."""
    import numpy as np

    from spsa_bench.model.bowl import build_problem

    with np.errstate(all="ignore"):
        try:
            build_problem(
                scenario["groups"],
                start_elo=scenario["start_elo"],
                peak_elo=scenario["peak_elo"],
                c_elo_gap=scenario["c_elo_gap"],
                c_fraction=scenario["c_fraction"],
                num_pairs=num_pairs,
            )
        except ValueError as error:
            raise ConfigError(f"scenarios.{name}: {error}") from None
