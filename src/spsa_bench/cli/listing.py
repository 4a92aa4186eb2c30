"""``spsa-bench list``: the arms, batch modes and scenarios of a configuration and
every optimizer kind available (built-in or from a plugin distribution)."""

from __future__ import annotations

import argparse
import dataclasses

from spsa_bench.cli.common import add_config, load
from spsa_bench.config.loader import scenario_kind, scenario_param_count


def add_parser(sub) -> None:
    p = sub.add_parser(
        "list",
        help="list the optimizers, batch modes and scenarios of a config, and the optimizer "
        "kinds available (plugins with their distribution)",
    )
    add_config(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    config = load(args)
    print("optimizers:")
    shown = set()
    for name, arm in config.optimizers.items():
        if arm.sweep is None:
            print(f"  {name:<18} kind={arm.kind}  {_values(arm)}")
        elif arm.sweep not in shown:  # the sweep once, then one indented line per arm
            shown.add(arm.sweep)
            group = [a for a in config.optimizers.values() if a.sweep == arm.sweep]
            keys = [key for key, _ in arm.swept]
            print(
                f"  {arm.sweep:<18} kind={arm.kind}  sweep of {', '.join(keys)} "
                f"({len(group)} arms)  {_values(arm, skip=keys)}"
            )
            for member in group:
                values = ", ".join(f"{key}={value}" for key, value in member.swept)
                print(f"    {member.name:<30} {values}")
    print("batch modes:")
    for name, mode in config.batch_modes.items():
        kind = "sync" if mode.is_sync else "async"
        size = f"batch {mode.batch_size}" if mode.batch == "fixed" else "variable batch"
        print(f"  {name:<18} {kind}, {mode.workers} worker(s), {size}")
    print("scenarios:")
    for name, scenario in config.scenarios.items():
        count = scenario_param_count(scenario)
        description = scenario.get("description", "")
        noise = scenario.get("noise", "vendored")
        if scenario_kind(scenario) == "groups":
            kind = f"groups, {count} params, start_elo {scenario['start_elo']}"
        else:
            kind = f"parameter block, {count} params"
        print(f"  {name:<18} {kind}, noise {noise}: {description}")
    last = config.seeds_first + config.seeds_count - 1
    print(f"seeds: {config.seeds_first}..{last} ({config.seeds_per_job} per job)")
    print_kinds()
    return 0


def _values(arm, skip=()) -> str:
    """``key=value`` of an arm's hyperparameters, those in ``skip`` left out."""
    fields = [f.name for f in dataclasses.fields(arm.hyper) if f.name not in skip]
    return ", ".join(f"{key}={getattr(arm.hyper, key)}" for key in fields)


def print_kinds() -> None:
    from spsa_bench.optimizers import REGISTRY

    print("optimizer kinds available:")
    for kind, spec in REGISTRY.items():
        origin = f" [plugin from {spec.distribution}]" if spec.distribution else ""
        micro = "" if spec.micro is not None else " (no micro reference: validation skips it)"
        print(f"  {kind:<18} {spec.description}{origin}{micro}")
