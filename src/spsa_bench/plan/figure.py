"""``plan.png``: the gain distribution of the given and the recommended settings (left)
and the expected gain against games played (right), in the style of the c_end study's
figure (:func:`spsa_bench.analysis.cend.cend_figure`). matplotlib is imported inside,
and its backend is the caller's choice."""

from __future__ import annotations

import numpy as np
import xarray as xr

from spsa_bench.analysis import stats
from spsa_bench.config.block_guards import printable_text
from spsa_bench.plan.spec import LEVEL, ZERO_OFFSET
from spsa_bench.plan.summary import final_gain, roles, runs_of, setting_text


def _title_text(text: str) -> str:
    """``text`` shown literally by matplotlib: ``$`` escaped (it would start math
    text), control and invisible characters replaced by U+FFFD."""
    return printable_text(text).replace("$", r"\$")


def _roles(ds: xr.Dataset) -> dict[str, str]:
    """Legend label -> run label: the given setting, then the recommended one if it differs."""
    return {f"{role}: {setting_text(ds, run)}": run for role, run in roles(ds).items()}


def _distribution(ax, ds: xr.Dataset, roles: dict[str, str], palette: dict) -> None:
    """Histograms of the final gain (dotted: their means), and the given setting's noise
    floor as a band from its 10% to its 90% quantile (dashed: its mean)."""
    given = str(ds.attrs["given_run"])
    floor = final_gain(ds, f"{given} {ZERO_OFFSET}")
    gains = {label: final_gain(ds, run) for label, run in roles.items()}
    values = np.concatenate(list(gains.values()))
    bins = np.histogram_bin_edges(values, bins=min(40, max(10, values.size // 10)))
    for label, gain in gains.items():
        counts, _ = np.histogram(gain, bins=bins)
        ax.stairs(counts / gain.size, bins, color=palette[label], linewidth=1.6, label=label)
        ax.axvline(gain.mean(), color=palette[label], linewidth=0.9, linestyle=":")
    low, high = np.quantile(floor, [0.1, 0.9])
    ax.axvspan(
        low,
        high,
        color="0.6",
        alpha=0.35,
        linewidth=0,
        label="given with the optimum at the start (noise floor, 10–90%)",
    )
    ax.axvline(floor.mean(), color="0.3", linewidth=0.9, linestyle="--")
    ax.axvline(0.0, color="0.3", linewidth=0.8)
    ax.set_xlabel("gain: true Elo at the end − at the start")
    ax.set_ylabel("share of instances")
    ax.legend(fontsize="x-small", loc="upper right")


def _against_games(ax, ds: xr.Dataset, roles: dict[str, str], palette: dict) -> None:
    """Mean gain trajectory with its 95% band, and each budget's final mean for the same
    multipliers (markers with their intervals)."""
    search = runs_of(ds)
    for label, run in roles.items():
        colour = palette[label]
        gain = ds["gain"].sel(run=run).values  # (seed, checkpoint)
        games = ds["games_played"].sel(run=run).values
        bands = np.array([stats.t_interval(gain[:, i], LEVEL) for i in range(gain.shape[1])])
        ax.plot(games, bands[:, 0], color=colour, label=label)
        ax.fill_between(games, bands[:, 1], bands[:, 2], color=colour, alpha=0.2)
        c, r = float(ds["c_scale"].sel(run=run)), float(ds["r_scale"].sel(run=run))
        same = [
            s
            for s in search
            if float(ds["c_scale"].sel(run=s)) == c
            and float(ds["r_scale"].sel(run=s)) == r
            and str(ds["arm"].sel(run=s).values) == str(ds["arm"].sel(run=run).values)
        ]
        ends = np.array([stats.t_interval(final_gain(ds, s), LEVEL) for s in same])
        budgets = np.array([int(ds["games"].sel(run=s)) for s in same])
        ax.errorbar(
            budgets,
            ends[:, 0],
            yerr=[ends[:, 0] - ends[:, 1], ends[:, 2] - ends[:, 0]],
            fmt="o",
            color=colour,
            markersize=4,
            capsize=2,
        )
    ax.axhline(0.0, color="0.3", linewidth=0.8)
    ax.xaxis.set_major_formatter(lambda value, _: f"{value / 1000:g}k")
    ax.set_xlabel("games played (markers: the end of each budget of the search)")
    ax.set_ylabel("expected gain, Elo (mean, 95% CI)")


def _prior_words(ds: xr.Dataset) -> str:
    """What the prior is, as plan.md says it: a fit to real tunes (the calibrated prior)
    or the user's or the hand-set assumption."""
    if str(ds.attrs.get("truth_prior_source", "")).startswith("calibrated"):
        return "calibrated to real tunes: a fit, not a fact"
    return "an assumption"


def plan_figure(ds: xr.Dataset):
    """The figure of ``plan.png`` (a matplotlib Figure), drawn with the caller's
    backend (the command line chooses Agg; this function never switches it)."""
    import matplotlib.pyplot as plt

    from spsa_bench.analysis.figures import optimizer_palette

    roles = _roles(ds)
    palette = optimizer_palette(list(roles))
    fig, (left, right) = plt.subplots(1, 2, figsize=(10.0, 3.9), constrained_layout=True)
    _distribution(left, ds, roles, palette)
    _against_games(right, ds, roles, palette)
    fig.suptitle(
        f"{_title_text(str(ds.attrs['source_block']))}: {ds.sizes['param']} parameter{'' if ds.sizes['param'] == 1 else 's'}, "
        f"{ds.attrs['time_control']}, {ds.attrs['batch_mode']}, {ds.sizes['seed']} instances "
        f"of the prior ({_prior_words(ds)})",
        fontsize="medium",
    )
    return fig
