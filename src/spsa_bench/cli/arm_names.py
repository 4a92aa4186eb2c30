"""What ``--optimizer NAME`` runs when NAME is not an arm of the configuration.

In order (:func:`arm_for`):

1. an arm of the configuration: that arm;
2. the name of a configured arm the configuration sweeps (``spsa-block`` when the
   config gives ``r_scale: [0.1, 0.3, 1, 3, 10]``): the sweep's arm at the
   hand-set value, i.e. the expanded arm whose every swept hyperparameter equals
   its kind's default (``spsa-block-r_scale-1``);
3. a registered optimizer kind (built in or from a plugin): an arm of that kind
   named after it, with the kind's default hyperparameters, added to the
   configuration for this run (its run file records the arm like any other);
4. anything else is refused in one line with at most five closest names
   (:func:`difflib.get_close_matches` over the arms, sweeps and kinds).

Cases 2 and 3 say on stderr, in one line, what runs instead.
"""

from __future__ import annotations

import dataclasses
import difflib
import sys

from spsa_bench.config.loader import ConfigError

#: Most names an unknown ``--optimizer`` is answered with.
MAX_SUGGESTIONS = 5


def sweep_arms(config, sweep: str) -> list:
    """The arms the configured arm ``sweep`` expanded into, in config order."""
    return [arm for arm in config.optimizers.values() if arm.sweep == sweep]


def hand_set_arm(config, sweep: str):
    """The arm of ``sweep`` whose every swept hyperparameter equals its kind's default
    (the hand-set value), or None when the sweep's values leave the default out."""
    from spsa_bench.optimizers import get_spec

    for arm in sweep_arms(config, sweep):
        defaults = get_spec(arm.kind).hyper()
        if all(getattr(defaults, key) == value for key, value in arm.swept):
            return arm
    return None


def suggestions(config, name: str) -> list[str]:
    """At most :data:`MAX_SUGGESTIONS` names close to ``name``: arms, sweeps, kinds."""
    from spsa_bench.optimizers import REGISTRY

    sweeps = {arm.sweep for arm in config.optimizers.values() if arm.sweep}
    return close_names(name, [*config.optimizers, *sorted(sweeps), *REGISTRY])


def close_names(name: str, candidates) -> list[str]:
    """At most :data:`MAX_SUGGESTIONS` of ``candidates`` close to ``name`` (difflib's
    ratio, ignoring case: ``SPSA`` finds ``spsa``), the closest first."""
    by_folded = {}
    for candidate in candidates:
        by_folded.setdefault(str(candidate).casefold(), str(candidate))
    folded = difflib.get_close_matches(
        str(name).casefold(), list(by_folded), n=MAX_SUGGESTIONS, cutoff=0.6
    )
    return [by_folded[f] for f in folded]


def with_kind_arm(config, kind: str):
    """``config`` with an arm named ``kind`` of that kind at its default hyperparameters
    (in ``optimizers`` and in the resolved record the run file keeps as provenance)."""
    from spsa_bench.config.records import OptimizerArm
    from spsa_bench.optimizers import get_spec

    hyper = get_spec(kind).hyper()
    arm = OptimizerArm(kind, kind, hyper)
    resolved = dict(config.resolved)
    resolved["optimizers"] = {
        **resolved.get("optimizers", {}),
        kind: {"kind": kind, **dataclasses.asdict(hyper)},
    }
    return dataclasses.replace(
        config, optimizers={**config.optimizers, kind: arm}, resolved=resolved
    )


def arm_for(config, name: str, flag: str = "--optimizer", quiet: bool = False):
    """``(config, arm name)`` to run for ``name`` (see the module docstring); the
    config is ``config`` itself unless a kind's arm was added. An unknown name, or a
    sweep without its hand-set value, raises :class:`ConfigError` (one line)."""
    from spsa_bench.optimizers import REGISTRY

    if name in config.optimizers:
        return config, name
    if sweep_arms(config, name):
        arm = hand_set_arm(config, name)
        if arm is None:
            arms = ", ".join(a.name for a in sweep_arms(config, name))
            raise ConfigError(
                f"{flag} = {name!r} is a sweep whose values leave out its kind's default "
                f"(the hand-set value); name one of its arms: {arms}"
            )
        if not quiet:
            values = ", ".join(f"{key}={value}" for key, value in arm.swept)
            print(
                f"{flag} {name}: the config sweeps {name}; running its hand-set value "
                f"{arm.name} ({values}; `spsa-bench list` shows every arm)",
                file=sys.stderr,
            )
        return config, arm.name
    if name in REGISTRY:
        try:
            extended = with_kind_arm(config, name)
        except (TypeError, ValueError) as error:  # a plugin kind without defaults
            raise ConfigError(
                f"{flag} = {name!r}: the kind has no default hyperparameters ({error}); "
                "add an arm of it to the config"
            ) from None
        if not quiet:
            print(
                f"{flag} {name}: not an arm of the config; running the registered kind "
                f"{name} with its default hyperparameters",
                file=sys.stderr,
            )
        return extended, name
    close = suggestions(config, name)
    hint = f"closest: {', '.join(close)}" if close else "no close name"
    raise ConfigError(
        f"{flag} = {name!r}: not an arm, sweep or optimizer kind of this config; {hint} "
        "(`spsa-bench list` shows them all)"
    )
