"""The benchmark figures (seaborn on matplotlib).

Importing this module leaves the caller's matplotlib backend alone: the workflow's
figure script selects Agg before importing it, a notebook keeps its own backend.

Every function returns a :class:`matplotlib.figure.Figure`; :func:`save`
writes it as PNG and SVG. One colour per optimizer arm across every figure
comes from :func:`optimizer_palette`, the only place colours are chosen.
"""

from __future__ import annotations

import colorsys
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker as mticker  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402
import xarray as xr  # noqa: E402
from matplotlib.colors import SymLogNorm  # noqa: E402

from spsa_bench.analysis.tables import hits_to_targets  # noqa: E402
from spsa_bench.optimizers import REGISTRY  # noqa: E402
from spsa_bench.results.atomic import atomic_write

#: Colours of the built-in optimizer kinds, in registry order (tab10, then black for
#: the eleventh and magenta for the twelfth, adam-coord: far from every tab10, dark and
#: pastel colour); every other arm name (plugin kinds, arms with their own names) gets
#: the next unused colour of :func:`extra_colour`, in order of appearance.
_BUILT_IN_COLOURS = [*sns.color_palette("tab10", 10), (0.0, 0.0, 0.0), (0.85, 0.0, 0.85)]
_KIND_COLOURS = dict(zip(REGISTRY.built_ins(), _BUILT_IN_COLOURS, strict=False))
_EXTRA_COLOURS = sns.color_palette("dark", 10) + sns.color_palette("pastel", 10)
_GOLDEN = (5**0.5 - 1) / 2

BATCH_MODE_COLOURS = sns.color_palette("Set2", 8)


def extra_colour(index: int) -> tuple:
    """The colour of the ``index``-th arm without a kind colour: the dark, then the
    pastel palette, then hues stepped by the golden ratio (never repeating) at a
    lightness that alternates between three levels."""
    if index < len(_EXTRA_COLOURS):
        return _EXTRA_COLOURS[index]
    step = index - len(_EXTRA_COLOURS)
    hue = (0.05 + step * _GOLDEN) % 1.0
    return colorsys.hls_to_rgb(hue, (0.35, 0.5, 0.65)[step % 3], 0.75)


def optimizer_palette(names: Sequence[str]) -> dict[str, tuple]:
    """The colour of every optimizer arm, distinct for any number of arms: fixed per
    built-in kind name, others in order of appearance (:func:`extra_colour`)."""
    palette = {}
    extra = 0
    for name in names:
        if name in _KIND_COLOURS:
            palette[name] = _KIND_COLOURS[name]
        else:
            palette[name] = extra_colour(extra)
            extra += 1
    return palette


_DASHES = ("-", "--", ":", "-.")


def _kind_dashes() -> dict[str, str]:
    """Solid for the first kind of each family, then dashed, dotted, dash-dotted."""
    seen: dict[str, int] = {}
    out = {}
    for kind, spec in REGISTRY.items():
        index = seen.get(spec.family, 0)
        seen[spec.family] = index + 1
        out[kind] = _DASHES[index % len(_DASHES)]
    return out


_KIND_DASHES = _kind_dashes()


def optimizer_dashes(names: Sequence[str]) -> dict[str, str]:
    """Line style of every optimizer arm, so arms of one family that overlap stay distinguishable."""
    return {name: _KIND_DASHES.get(name, "-") for name in names}


def _say_no_async(axes) -> None:
    """A note in place of the panels when the grid has no asynchronous batch mode."""
    for ax in axes:
        ax.text(
            0.5, 0.5, "no asynchronous batch mode", ha="center", va="center", transform=ax.transAxes
        )


def set_style() -> None:
    """The benchmark figures' seaborn theme (whitegrid, notebook context, fonts at 0.85)."""
    sns.set_theme(context="notebook", style="whitegrid", font_scale=0.85)


def save(fig: plt.Figure, png: str | Path, svg: str | Path, dpi: int = 110) -> None:
    """Write the figure as PNG and SVG, each atomically."""
    atomic_write(png, lambda tmp: fig.savefig(tmp, format="png", dpi=dpi, bbox_inches="tight"))
    atomic_write(svg, lambda tmp: fig.savefig(tmp, format="svg", bbox_inches="tight"))
    plt.close(fig)


def optimizer_legend(
    fig: plt.Figure, palette: Mapping[str, tuple], title: str = "optimizer"
) -> None:
    """One legend right of the figure: a line per arm of ``palette`` in its colour and
    line style (:func:`optimizer_dashes`)."""
    dashes = optimizer_dashes(list(palette))
    handles = [
        plt.Line2D([], [], color=c, ls=dashes[n], lw=2.0, label=n) for n, c in palette.items()
    ]
    fig.legend(
        handles=handles, title=title, loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False
    )


def _labels(ds: xr.Dataset, dim: str) -> list[str]:
    return [str(v) for v in ds[dim].values]


def plain_log_ticks(ax, axis: str = "y", minor: bool = True) -> None:
    """Log-scale tick labels as plain numbers (0.5, 1, 2, 5) instead of powers of ten."""
    target = ax.yaxis if axis == "y" else ax.xaxis
    target.set_major_formatter(mticker.FuncFormatter(lambda v, _: f"{v:g}"))
    if not minor:
        target.set_minor_formatter(mticker.NullFormatter())
        return
    target.set_minor_formatter(
        mticker.FuncFormatter(lambda v, _: f"{v:g}" if _leading_digit(v) in (2, 5) else "")
    )


def _leading_digit(value: float) -> int:
    if not np.isfinite(value) or value <= 0:
        return 0
    return int(round(value / 10 ** np.floor(np.log10(value))))


def panel_grid(rows: int, cols: int, width: float = 3.3, height: float = 2.6, **kwargs):
    """``rows`` x ``cols`` panels of ``width`` x ``height`` inches each; ``axes`` is always
    2-D (``squeeze=False``); ``kwargs`` go to :func:`matplotlib.pyplot.subplots`."""
    fig, axes = plt.subplots(
        rows, cols, figsize=(width * cols, height * rows), squeeze=False, **kwargs
    )
    return fig, axes


#: Widest grid of panels [inches] before :func:`wrapped_grid` starts another row: at the
#: PNG's 110 dpi about 1,050 px, plus the legend, so that the report shows the figure
#: near its full size.
MAX_GRID_WIDTH = 9.6

#: Width of one arm's box in :func:`final_loss` [inches].
FINAL_LOSS_WIDTH_PER_ARM = 0.28

#: Smallest final loss :func:`final_loss` draws [Elo]: a zero loss sits on the log axis there.
FINAL_LOSS_FLOOR = 1e-4


def wrapped_grid(
    count: int, width: float, height: float, max_width: float = MAX_GRID_WIDTH, **kwargs
) -> tuple[plt.Figure, list]:
    """``count`` panels of ``width`` x ``height`` inches, as many per row as fit in
    ``max_width`` (at least one), row after row; the figure holds exactly ``count`` axes.

    Columns ``k = max(1, min(count, floor(max_width / width)))``, rows ``ceil(count / k)``;
    panel ``i`` sits in row ``i // k``, column ``i % k``.
    """
    columns = max(1, min(count, int(max_width // width)))
    rows = -(-count // columns)
    fig, axes = plt.subplots(
        rows, columns, figsize=(width * columns, height * rows), squeeze=False, **kwargs
    )
    flat = list(axes.ravel())
    for spare in flat[count:]:
        fig.delaxes(spare)
    return fig, flat[:count]


# ------------------------------------------------------------------ convergence


def convergence(ds: xr.Dataset) -> plt.Figure:
    """Median Elo loss and its 25-75% band over seeds against pairs; one panel per batch mode x scenario."""
    set_style()
    optimizers, modes, scenarios = (
        _labels(ds, "optimizer"),
        _labels(ds, "batch_mode"),
        _labels(ds, "scenario"),
    )
    palette, dashes = optimizer_palette(optimizers), optimizer_dashes(optimizers)
    loss = ds["elo_loss"]
    pairs = ds["pairs"].values
    fig, axes = panel_grid(len(modes), len(scenarios), sharex=True, sharey=True)
    for i, mode in enumerate(modes):
        for j, scenario in enumerate(scenarios):
            ax = axes[i, j]
            for optimizer in optimizers:
                # one cell at a time: a lazily opened benchmark reads one chunk
                cell = loss.sel(optimizer=optimizer, batch_mode=mode, scenario=scenario).load()
                if not cell.notnull().any():  # the arm did not run in this cell
                    continue
                q = cell.quantile([0.25, 0.5, 0.75], dim="seed").transpose("quantile", ...).values
                colour = palette[optimizer]
                ax.fill_between(pairs, q[0], q[2], color=colour, alpha=0.18, lw=0)
                ax.plot(pairs, q[1], color=colour, ls=dashes[optimizer], lw=1.4)
            ax.set_yscale("log")
            plain_log_ticks(ax)
            ax.set_title(f"{mode} · {scenario}")
            if i == len(modes) - 1:
                ax.set_xlabel("game pairs")
            if j == 0:
                ax.set_ylabel("Elo loss [Elo]")
    fig.suptitle("Convergence: median Elo loss over seeds (band: 25–75% of seeds)", y=1.0)
    fig.tight_layout()
    optimizer_legend(fig, palette)
    return fig


def ecdf_pairs_to_target(ds: xr.Dataset, targets: Sequence[float]) -> plt.Figure:
    """COCO-style ECDF of the pairs to reach each target, pooled over scenarios, seeds and targets.

    Runs that never reach a target count in the denominator, so a curve ends at
    the share of (scenario, seed, target) runs that reached their target.
    """
    set_style()
    optimizers, modes = _labels(ds, "optimizer"), _labels(ds, "batch_mode")
    palette, dashes = optimizer_palette(optimizers), optimizer_dashes(optimizers)
    hits = hits_to_targets(ds, targets)
    budget = float(ds["pairs"].values[-1])
    fig, axes = panel_grid(1, len(modes), width=4.0, height=3.2, sharey=True)
    for j, mode in enumerate(modes):
        ax = axes[0, j]
        for optimizer in optimizers:
            h = hits.sel(optimizer=optimizer, batch_mode=mode).values.ravel()
            h = h[~np.isnan(h)]
            if h.size == 0:
                continue
            reached = np.sort(h[np.isfinite(h)])
            x = np.concatenate([[max(float(ds["pairs"].values[1]), 1.0)], reached, [budget]])
            y = np.concatenate(
                [[0.0], np.arange(1, reached.size + 1) / h.size, [reached.size / h.size]]
            )
            ax.step(x, y, where="post", color=palette[optimizer], ls=dashes[optimizer], lw=1.6)
        ax.set_xscale("log")
        plain_log_ticks(ax, "x")
        ax.set_ylim(0, 1.02)
        ax.set_title(mode)
        ax.set_xlabel("game pairs (log scale)")
        if j == 0:
            ax.set_ylabel("fraction of runs × targets reached")
    label = ", ".join(f"{f:g}" for f in targets)
    fig.suptitle(
        f"Runtime ECDF: pairs to recover {label} of the start gap (unreached runs stay in the denominator)",
        y=1.02,
    )
    fig.tight_layout()
    optimizer_legend(fig, palette)
    return fig


def _box(ax, values: np.ndarray, position: float, width: float, colour: tuple) -> None:
    """One box of ``values`` at ``position``: 25-75% quantiles, median line, whiskers to
    the furthest value within 1.5 interquartile ranges, no fliers; matplotlib's own
    boxplot (seaborn 0.13's passes the ``vert`` argument matplotlib 3.11 deprecates)."""
    boxes = ax.boxplot(
        [values],
        positions=[position],
        widths=width,
        orientation="vertical",
        showfliers=False,
        patch_artist=True,
        manage_ticks=False,
        medianprops={"color": "0.15", "lw": 1.0},
        whiskerprops={"lw": 0.8},
        capprops={"lw": 0.8},
        boxprops={"lw": 0.8},
    )
    for patch in boxes["boxes"]:
        patch.set_facecolor((*colour[:3], 0.55))


def final_loss(ds: xr.Dataset) -> plt.Figure:
    """Distribution of the final Elo loss over seeds: box plus points, one panel per batch
    mode x scenario, wrapped into rows (:func:`wrapped_grid`).

    A box spans the 25-75% quantiles of an arm's final losses ``L_s`` (the loss at the
    last checkpoint of seed ``s``) with the median marked, whiskers to the furthest
    loss within 1.5 interquartile ranges; every finite ``max(L_s, 1e-4)`` is a point
    (clipped so that the log axis can show a zero loss). A missing loss (an arm not run
    in a cell) is left out, and nothing else is: an arm's hyperparameter coordinates
    are NaN where its kind has no such hyperparameter, which says nothing about its
    losses.
    """
    set_style()
    optimizers, modes, scenarios = (
        _labels(ds, "optimizer"),
        _labels(ds, "batch_mode"),
        _labels(ds, "scenario"),
    )
    palette = optimizer_palette(optimizers)
    final = ds["elo_loss"].isel(pairs=-1, drop=True).load()  # one read of a lazy file
    cells = [(mode, scenario) for mode in modes for scenario in scenarios]
    fig, axes = wrapped_grid(
        len(cells), width=FINAL_LOSS_WIDTH_PER_ARM * len(optimizers) + 1.2, height=3.6, sharey=True
    )
    rng = np.random.default_rng(0)  # the points' horizontal jitter, the same on every draw
    size = 5.0 if ds.sizes["seed"] > 30 else 14.0
    for ax, (mode, scenario) in zip(axes, cells, strict=True):
        for position, optimizer in enumerate(optimizers):
            loss = final.sel(optimizer=optimizer, batch_mode=mode, scenario=scenario).values
            loss = np.clip(loss[np.isfinite(loss)], FINAL_LOSS_FLOOR, None)
            if loss.size == 0:
                continue
            colour = palette[optimizer]
            _box(ax, loss, position, 0.65, colour)
            jitter = rng.uniform(-0.25, 0.25, size=loss.size)
            ax.scatter(position + jitter, loss, s=size, color=colour, alpha=0.55, lw=0, zorder=3)
        ax.set_yscale("log")
        plain_log_ticks(ax)
        ax.set_xlim(-0.6, len(optimizers) - 0.4)
        ax.set_xticks(range(len(optimizers)), optimizers, rotation=70, ha="right")
        ax.set_title(f"{mode} · {scenario}")
        first_column = ax.get_subplotspec().is_first_col()
        ax.set_ylabel("final Elo loss [Elo]" if first_column else "")
    fig.suptitle(
        "Final Elo loss after the whole budget (box: quartiles; points: seeds; log scale)", y=1.0
    )
    fig.tight_layout()
    optimizer_legend(fig, palette)
    return fig


def _signed(value: float) -> str:
    """Compact signed annotation: two decimals, or two significant digits below 0.01."""
    if not np.isfinite(value):
        return ""
    if value == 0 or abs(value) >= 0.01:
        return f"{value:+.2f}" if abs(value) < 100 else f"{value:+.0f}"
    return f"{value:+.1e}"


def paired_difference(
    table: pd.DataFrame, baseline: str, order: Sequence[str] | None = None
) -> plt.Figure:
    """Heatmap of the mean paired difference of final Elo against the baseline, optimizer x cell.

    ``table`` is the convergence table; cells marked ``*`` stay significant
    after Holm's correction.
    """
    set_style()
    t = table[table["optimizer"] != baseline].copy()
    t["cell"] = t["batch_mode"] + " · " + t["scenario"]
    cells = list(dict.fromkeys(t["cell"]))
    optimizers = [o for o in (order or dict.fromkeys(t["optimizer"])) if o in set(t["optimizer"])]
    values = t.pivot(index="optimizer", columns="cell", values="diff_elo_mean").reindex(
        index=optimizers, columns=cells
    )
    marks = t.pivot(index="optimizer", columns="cell", values="significant").reindex(
        index=optimizers, columns=cells
    )
    text = values.map(_signed)
    text = text + marks.map(lambda s: "*" if s is True or s == 1 else "")
    fig, ax = plt.subplots(figsize=(1.0 * len(cells) + 3.0, 0.45 * len(optimizers) + 2.2))
    finite = np.abs(values.to_numpy(dtype=float))
    limit = float(np.nanmax(finite)) if np.isfinite(finite).any() else 1.0
    limit = max(limit, 0.2)
    norm = SymLogNorm(linthresh=0.1, linscale=1.0, vmin=-limit, vmax=limit, base=10)
    sns.heatmap(
        values,
        annot=text.to_numpy(),
        fmt="",
        cmap="RdBu",
        norm=norm,
        ax=ax,
        linewidths=0.5,
        linecolor="white",
        annot_kws={"fontsize": 7},
        cbar_kws={"label": f"mean Δ final Elo vs {baseline} [Elo] (> 0: better; symlog)"},
    )
    for k, name in enumerate(optimizers):
        ax.get_yticklabels()[k].set_color(optimizer_palette(optimizers)[name])
    ax.set_xlabel("batch mode · scenario")
    ax.set_ylabel("optimizer")
    ax.tick_params(axis="x", rotation=60)
    ax.set_title(
        f"Paired difference of final Elo against {baseline} (mean over seeds; * = Holm-significant at 5%)"
    )
    fig.tight_layout()
    return fig


# ------------------------------------------------------------------ async


def async_staleness(schedules: Mapping[str, xr.Dataset]) -> plt.Figure:
    """Job staleness per asynchronous batch mode: histogram over jobs and per-seed quantiles."""
    set_style()
    fig, axes = panel_grid(1, 2, width=5.0, height=3.4)
    colours = dict(zip(schedules, BATCH_MODE_COLOURS, strict=False))
    if not schedules:
        _say_no_async(axes[0])
    rows = []
    top = max(
        (float(np.nanmax(sched["staleness"].values)) for sched in schedules.values()), default=1.0
    )
    bins = np.geomspace(1.0, max(top, 2.0) * 1.05, 50)
    for mode, sched in schedules.items():
        mask = sched["job_pairs"].values > 0
        values = sched["staleness"].values[mask].astype(float)
        zero = 100.0 * np.mean(values < 1)
        weights = np.full(values.size, 1.0 / max(values.size, 1))
        axes[0, 0].hist(
            values,
            bins=bins,
            weights=weights,
            histtype="step",
            lw=1.6,
            color=colours[mode],
            label=f"{mode} ({zero:.0f}% of jobs at 0)",
        )
        for name in ("staleness_p50", "staleness_p90", "staleness_p99", "staleness_max"):
            for v in np.asarray(sched[name].values, dtype=float):
                rows.append(
                    {"batch mode": mode, "statistic": name.removeprefix("staleness_"), "pairs": v}
                )
    axes[0, 0].set_xscale("log")
    plain_log_ticks(axes[0, 0], "x", minor=False)
    axes[0, 0].set_xlabel("staleness of a job [pairs arrived while it ran] (log scale)")
    axes[0, 0].set_ylabel("fraction of jobs per bin")
    axes[0, 0].set_title("All jobs of all seeds")
    if rows:
        axes[0, 0].legend(title="batch mode", frameon=False, fontsize="small")
        frame = pd.DataFrame(rows)
        statistics = list(dict.fromkeys(frame["statistic"]))
        width = 0.8 / len(schedules)
        for k, mode in enumerate(schedules):
            offset = (k - (len(schedules) - 1) / 2) * width
            for position, statistic in enumerate(statistics):
                chosen = (frame["batch mode"] == mode) & (frame["statistic"] == statistic)
                values = frame.loc[chosen, "pairs"].to_numpy()
                values = values[np.isfinite(values)]
                if values.size:
                    _box(axes[0, 1], values, position + offset, 0.9 * width, colours[mode])
        axes[0, 1].set_xticks(range(len(statistics)), statistics)
        axes[0, 1].legend(
            handles=[plt.Rectangle((0, 0), 1, 1, color=colours[m], alpha=0.55) for m in schedules],
            labels=list(schedules),
            title="batch mode",
            loc="upper left",
            bbox_to_anchor=(1.0, 1.0),
            frameon=False,
        )
    axes[0, 1].set_xlabel("per-seed statistic over jobs")
    axes[0, 1].set_ylabel("staleness [pairs]")
    axes[0, 1].set_title("Per-seed staleness quantiles (box over seeds)")
    fig.suptitle("Staleness in the asynchronous batch modes (synchronous: always 0)", y=1.02)
    fig.tight_layout()
    return fig


def async_workers(schedules: Mapping[str, xr.Dataset]) -> plt.Figure:
    """Pairs processed per worker against its concurrency and its speed factor, per asynchronous batch mode.

    ``schedules`` maps a batch mode to its schedule dataset (``concurrency``,
    ``speed_factor`` and ``pairs_processed`` with dims seed, worker).
    """
    set_style()
    modes = list(schedules)
    fig, axes = panel_grid(max(len(modes), 1), 2, width=4.6, height=3.2)
    if not modes:
        _say_no_async(axes[0])
        return fig
    rng = np.random.default_rng(0)
    for i, mode in enumerate(modes):
        one = schedules[mode]
        conc = one["concurrency"].values.ravel().astype(float)
        speed = one["speed_factor"].values.ravel().astype(float)
        pairs = one["pairs_processed"].values.ravel().astype(float)
        ok = np.isfinite(conc) & np.isfinite(pairs)
        conc, speed, pairs = conc[ok], speed[ok], pairs[ok]
        jitter = 2.0 ** rng.uniform(-0.18, 0.18, size=conc.size)
        ax = axes[i, 0]
        art = ax.scatter(conc * jitter, pairs, c=speed, cmap="viridis", s=9, alpha=0.7, lw=0)
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(mticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_xlabel("worker concurrency [games in parallel] (log2, jittered)")
        ax.set_ylabel("pairs processed by the worker")
        ax.set_title(f"{mode}: pairs against concurrency")
        fig.colorbar(art, ax=ax, label="speed factor")
        ax = axes[i, 1]
        art = ax.scatter(speed, pairs, c=np.log2(conc), cmap="viridis", s=9, alpha=0.7, lw=0)
        ax.set_xlabel("worker speed factor")
        ax.set_ylabel("pairs processed by the worker")
        ax.set_title(f"{mode}: pairs against speed")
        fig.colorbar(art, ax=ax, label="log2 concurrency")
    fig.suptitle("Worker pool: who processes the pairs (one point per worker and seed)", y=1.01)
    fig.tight_layout()
    return fig
