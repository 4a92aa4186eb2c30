"""The sensitivity figure: final Elo loss against each swept hyperparameter.

DeepOBS's tuneability view: for every sweep of the configuration (one configured
arm expanded over a hyperparameter's values, :mod:`spsa_bench.config.loader`), the
mean final Elo loss on the benchmark's seeds of each expanded arm, against the
swept value, one line per scenario, one column per sweep and one row per batch
mode. A flat line is a setting the problem forgives; a sharp minimum, or one at
the edge of the grid, says the sweep must be widened or tuned per problem.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import xarray as xr

#: A sweep: its expanded arms, each with its swept values ``{hyperparameter: value}``.
Sweeps = Mapping[str, Sequence[tuple[str, Mapping[str, float | str]]]]


def sensitivity_table(ds: xr.Dataset, sweeps: Sweeps) -> pd.DataFrame:
    """Mean and median final Elo loss of every swept arm, tidy: one row per (sweep, arm,
    batch mode, scenario), with the arm's first swept hyperparameter and value."""
    final = ds["elo_loss"].isel(pairs=-1).load()  # one read of a lazily opened file
    present = {str(v) for v in ds["optimizer"].values}
    rows = []
    for sweep, arms in sweeps.items():
        for arm, swept in arms:
            if arm not in present or not swept:
                continue
            key, value = next(iter(swept.items()))
            for mode in ds["batch_mode"].values:
                for scenario in ds["scenario"].values:
                    values = final.sel(optimizer=arm, batch_mode=mode, scenario=scenario).values
                    if not np.isfinite(values).any():
                        continue
                    rows.append(
                        {
                            "sweep": sweep,
                            "arm": arm,
                            "hyperparameter": key,
                            "value": value,
                            "batch_mode": str(mode),
                            "scenario": str(scenario),
                            "loss_mean": float(np.nanmean(values)),
                            "loss_median": float(np.nanmedian(values)),
                        }
                    )
    return pd.DataFrame(rows)


def sensitivity_figure(table: pd.DataFrame):
    """Mean final loss against the swept value, one panel per (sweep, batch mode) in that
    order, wrapped into rows (:func:`spsa_bench.analysis.figures.wrapped_grid`: with three
    batch modes a row is a sweep), a line per scenario; log axes where the values span
    more than a factor of 10 (the x axis) or 30 (the loss)."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullLocator

    from spsa_bench.analysis.figures import wrapped_grid

    sweeps = list(dict.fromkeys(table["sweep"]))
    modes = list(dict.fromkeys(table["batch_mode"]))
    scenarios = list(dict.fromkeys(table["scenario"]))
    colours = dict(zip(scenarios, plt.get_cmap("tab10").colors, strict=False))
    panels = [(sweep, mode) for sweep in sweeps for mode in modes]
    fig, axes = wrapped_grid(len(panels), width=3.1, height=2.7, constrained_layout=True)
    for ax, (sweep, mode) in zip(axes, panels, strict=True):
        part = table[(table["sweep"] == sweep) & (table["batch_mode"] == mode)]
        numeric = pd.to_numeric(part["value"], errors="coerce")
        for scenario in scenarios:
            lines = part[part["scenario"] == scenario]
            if lines.empty:
                continue
            x = pd.to_numeric(lines["value"], errors="coerce")
            x = x if x.notna().all() else lines["value"].astype(str)
            order = np.argsort(x.to_numpy()) if x.dtype.kind in "fi" else np.arange(len(x))
            ax.plot(np.asarray(x)[order], lines["loss_mean"].to_numpy()[order], marker="o",
                    color=colours.get(scenario), label=scenario)  # fmt: skip
        positive = numeric.notna().all() and (numeric > 0).all()
        if positive and numeric.max() / numeric.min() > 10:
            ax.set_xscale("log")
        if numeric.notna().all() and len(part):
            ticks = sorted(set(numeric))  # the swept values, as plain numbers
            ax.set_xticks(ticks, [f"{v:g}" for v in ticks])
            ax.xaxis.set_minor_locator(NullLocator())
        losses = part["loss_mean"]
        if (losses > 0).all() and losses.max() / losses.min() > 30:
            ax.set_yscale("log")
        key = part["hyperparameter"].iloc[0] if len(part) else ""
        ax.set_title(f"{sweep} ({mode})", fontsize="medium")
        ax.set_xlabel(key)
        if ax.get_subplotspec().is_first_col():
            ax.set_ylabel("mean final Elo loss")
    handles, labels = axes[0].get_legend_handles_labels() if axes else ([], [])
    if handles:
        fig.legend(handles, labels, title="scenario", loc="outside right center")
    fig.suptitle("Sensitivity: final Elo loss against each swept hyperparameter", fontsize="medium")
    return fig
