"""CF-1.11 attributes: the benchmark's own units as dimensionless quantities.

UDUNITS knows none of the benchmark's units (game pairs, games, jobs, Elo points,
the engine's parameter units). CF wants them as dimensionless, ``units: "1"``, with
the ``long_name`` saying what is counted or measured; the human unit is kept in the
project attribute ``spsa_bench_unit``. Values never change, only attributes.
"""

from __future__ import annotations

from collections.abc import Mapping

import xarray as xr

CONVENTIONS = "CF-1.11"
#: Project attribute holding the human unit of a variable whose CF ``units`` is ``"1"``.
UNIT_ATTR = "spsa_bench_unit"
#: Project unit -> what its dimensionless values are, appended to the long_name in brackets.
PROJECT_UNITS = {
    "pairs": "count of game pairs",
    "games": "count of games",
    "jobs": "count of jobs",
    "batches": "multiples of the job's own size in pairs",
    "Elo": "Elo rating points",
    "theta units": "the engine's parameter units",
}


def cf_attrs(attrs: Mapping[str, object]) -> dict[str, object]:
    """``attrs`` with a project unit rewritten as ``units: "1"`` (idempotent).

    ``{"long_name": L, "units": U}`` becomes ``{"long_name": f"{L} [{what U is}]",
    "units": "1", "spsa_bench_unit": U}``; other attributes pass through.
    """
    unit = attrs.get("units")
    if unit not in PROJECT_UNITS:
        return dict(attrs)
    what = PROJECT_UNITS[unit]
    long_name = str(attrs.get("long_name", ""))
    return {
        **attrs,
        "long_name": f"{long_name} [{what}]" if long_name else what,
        "units": "1",
        UNIT_ATTR: unit,
    }


def conform(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` with every variable's attributes through :func:`cf_attrs` and ``Conventions`` set.

    Changes ``ds`` in place (attributes only) and returns it.
    """
    for variable in ds.variables.values():
        variable.attrs = cf_attrs(variable.attrs)
    ds.attrs["Conventions"] = CONVENTIONS
    return ds
