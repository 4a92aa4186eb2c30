"""spsa-bench: a reproducible, vectorized benchmark of SPSA-family optimizers.

The package is split the way data flows (docs/architecture in the README):

- ``model``       the simulated world: true Elo bowl, developer view, game noise, streams
- ``dispatch``    optimizer-independent job schedules (sync and async), KPIs, schedule I/O
- ``optimizers``  pure init/update optimizers that only see the developer view; the
                  registry of kinds (built-ins and entry-point plugins)
- ``engine``      replays one optimizer over a schedule for all seeds at once
- ``reference``   literal loop-based references; ``validation`` the macro-vs-micro gates
- ``config``      loader and schema; ``results`` run files and combination;
                  ``analysis`` statistics, tables and figures; ``cli`` the command line

The public API is importable from here and loaded on first use, so importing
``spsa_bench`` (or a core module) stays light: :func:`load_config`,
:func:`simulate`, :func:`combine_runs`, :data:`REGISTRY`, :func:`build`.
"""

from __future__ import annotations

from importlib import import_module

#: public name -> the module it lives in (imported when the name is first used)
_PUBLIC = {
    "load_config": "spsa_bench.config.loader",
    "simulate": "spsa_bench.engine.simulate",
    "combine_runs": "spsa_bench.results.combine",
    "REGISTRY": "spsa_bench.optimizers",
    "build": "spsa_bench.optimizers",
}

__all__ = ["__version__", *_PUBLIC]


def _version() -> str:
    """The installed distribution's version (read on first use, without importing
    importlib.metadata where possible: :mod:`spsa_bench.distributions`)."""
    from spsa_bench.distributions import version

    return version("spsa-bench") or "0+unknown"  # unknown: a source tree not installed


def __getattr__(name: str):
    if name == "__version__":
        globals()[name] = value = _version()
        return value
    if name in _PUBLIC:
        value = getattr(import_module(_PUBLIC[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'spsa_bench' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_PUBLIC])
