"""The figure of a validation (:mod:`spsa_bench.validation`): theta (and x, z) of a
few parameters against pairs played for the macro and both micro paths, plus each
path's deviation from the macro theta. Seaborn styling on a plain matplotlib
Figure (no pyplot, so drawing it switches no backend; seaborn's relplot took
several seconds per figure)."""

from __future__ import annotations

import seaborn as sns
from matplotlib.figure import Figure

LABELS = {
    "macro": "macro (fast)",
    "micro_const_mean": "micro const-mean",
    "micro_real": "micro real",
}
STYLES = dict(zip(LABELS, ("-", "--", ":"), strict=True))


def _quantities(dataset, shown) -> list[tuple[str, object]]:
    theta = dataset["theta"].sel(param=shown)
    quantities = [("theta", theta)]
    quantities += [(n, dataset[n].sel(param=shown)) for n in ("x", "z") if n in dataset]
    quantities.append(("theta - macro theta", theta - theta.sel(path="macro")))
    return quantities


def draw_paths(dataset, plot_params: int = 3) -> Figure:
    """One row per quantity, one column per shown parameter (the first ``plot_params``)."""
    colours = dict(zip(LABELS, sns.color_palette("colorblind", len(LABELS)), strict=True))
    shown = list(dataset["param"].values[: max(1, plot_params)])
    quantities = _quantities(dataset, shown)
    pairs = dataset["pairs"].values
    sns.set_theme(style="whitegrid", context="paper")
    fig = Figure(figsize=(3.4 * len(shown), 2.4 * len(quantities)))
    axes = fig.subplots(len(quantities), len(shown), sharex=True, squeeze=False)
    for row, (name, values) in enumerate(quantities):
        for col, param in enumerate(shown):
            ax = axes[row, col]
            for path, label in LABELS.items():
                series = values.sel(path=path, param=param).values
                ax.plot(
                    pairs[: series.shape[0]],
                    series,
                    STYLES[path],
                    color=colours[path],
                    label=label,
                    linewidth=1.1,
                )
            ax.set_title(f"{name} of {param}")
            if col == 0:
                ax.set_ylabel("value (parameter units)")
            if row == len(quantities) - 1:
                ax.set_xlabel("pairs played")
    handles, names = axes[0, 0].get_legend_handles_labels()
    fig.legend(
        handles, names, loc="upper left", bbox_to_anchor=(1.0, 0.95), title="path", frameon=False
    )
    attrs = dataset.attrs
    fig.suptitle(
        f"{attrs['arm']} ({attrs['kind']}): macro vs micro paths (seed {attrs['seed']}, "
        f"{attrs['n_reports']} reports, N {attrs['sizes']} up to {attrs['max_pairs']})",
        y=1.02,
    )
    fig.tight_layout()
    return fig
