"""Rankings of the optimizer arms across problems (issue 16).

A *problem* is a (scenario, batch mode) cell of the combined dataset
(``results/benchmark.nc``) that was run for every arm; an *arm* is an optimizer.

- :func:`performance_profile` - Dolan and Moré's performance profile of the mean
  final Elo loss, drawn by :func:`profile_figure`;
- :func:`aggregated_ecdf` - COCO's runtime ECDF pooled over all problems, seeds
  and targets, drawn by :func:`aggregated_ecdf_figure`;
- :func:`rank_table` - per batch mode, each arm's rank averaged over scenarios
  with a paired bootstrap interval, rendered by :func:`rank_markdown`; given the
  comparisons' verdicts (:func:`spsa_bench.analysis.relaxation.problem_verdicts`) only
  over the scenarios whose budget supports a ranking, the others named NOT RANKED;
- :func:`seeds_needed` - seeds a paired t-test needs to resolve a difference
  (defined in :mod:`spsa_bench.analysis.stats`).

Tables are tidy :class:`pandas.DataFrame` objects; figures are
:class:`matplotlib.figure.Figure` objects (write them with
:func:`spsa_bench.analysis.figures.save`). Matplotlib is imported only by the
figure functions.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import xarray as xr

from spsa_bench.analysis.stats import seeds_needed
from spsa_bench.analysis.tables import (
    BOOTSTRAP_SEED,
    hits_to_targets,
    interval,
    markdown_table,
)

__all__ = [
    "LOSS_FLOOR",
    "RANK_PROBS",
    "aggregated_ecdf",
    "aggregated_ecdf_figure",
    "performance_profile",
    "problem_ratios",
    "profile_figure",
    "rank_markdown",
    "rank_table",
    "seeds_needed",
]

#: Smallest mean final Elo loss a profile ratio divides by. The Elo loss is >= 0 in
#: expectation but a mean over seeds can be ~0 (or slightly negative: measured
#: Elo of a run can beat the model's peak by noise); every mean is raised to this
#: floor, so an arm within 0.01 Elo of the peak counts as reaching it.
LOSS_FLOOR = 0.01

#: Quantiles of the bootstrap distribution of the mean rank (a 95% interval).
RANK_PROBS = (0.025, 0.975)


def _arms(ds: xr.Dataset) -> list[str]:
    return [str(v) for v in ds["optimizer"].values]


def _final_loss(ds: xr.Dataset) -> xr.DataArray:
    return ds["elo_loss"].isel(pairs=-1).transpose("optimizer", "batch_mode", "scenario", "seed")


def _problems(ds: xr.Dataset, batch_mode: str | None = None) -> list[tuple[str, str]]:
    """(scenario, batch mode) cells with a finite final loss for every arm, in dataset order."""
    present = np.isfinite(_final_loss(ds).values).any(axis=-1).all(axis=0)  # (mode, scenario)
    out = []
    for i, mode in enumerate(ds["batch_mode"].values):
        if batch_mode is not None and str(mode) != batch_mode:
            continue
        for j, scenario in enumerate(ds["scenario"].values):
            if present[i, j]:
                out.append((str(scenario), str(mode)))
    return out


def _paired_losses(ds: xr.Dataset, scenario: str, batch_mode: str) -> np.ndarray:
    """Final losses (arm, seed) of one problem at the seeds every arm has."""
    loss = _final_loss(ds).sel(batch_mode=batch_mode, scenario=scenario).values
    return loss[:, np.isfinite(loss).all(axis=0)]


# ------------------------------------------------------------------ performance profile


def problem_ratios(ds: xr.Dataset, floor: float = LOSS_FLOOR) -> pd.DataFrame:
    """Performance ratios, one row per (problem, arm): ``scenario, batch_mode, arm, mean_loss, ratio``.

    ``mean_loss`` is the mean final Elo loss over the seeds every arm has in that
    problem; ``ratio = max(mean_loss, floor) / min over arms of max(mean_loss, floor)``
    (>= 1; 1 for the best arm). Problems without a common seed are left out.
    """
    arms = _arms(ds)
    rows = []
    for scenario, mode in _problems(ds):
        loss = _paired_losses(ds, scenario, mode)
        if loss.shape[1] == 0:
            continue
        means = loss.mean(axis=1)
        floored = np.maximum(means, floor)
        for arm, mean, value in zip(arms, means, floored / floored.min(), strict=True):
            rows.append(
                {
                    "scenario": scenario,
                    "batch_mode": mode,
                    "arm": arm,
                    "mean_loss": float(mean),
                    "ratio": float(value),
                }
            )
    return pd.DataFrame(rows, columns=["scenario", "batch_mode", "arm", "mean_loss", "ratio"])


def performance_profile(ds: xr.Dataset, taus, floor: float = LOSS_FLOOR) -> pd.DataFrame:
    """Dolan-Moré performance profile: ``rho_a(tau)`` = share of problems with ratio <= tau.

    Problems are the (scenario, batch mode) cells present for every arm, ratios
    those of :func:`problem_ratios` (mean final loss over the best arm's, each
    mean raised to ``floor`` first, default :data:`LOSS_FLOOR` Elo). Tidy output
    with columns ``arm, tau, rho`` (one row per arm and tau, in the order given)
    and ``n_problems``.
    """
    ratios = problem_ratios(ds, floor)
    taus = np.asarray(taus, dtype=np.float64).ravel()
    n = ratios[["scenario", "batch_mode"]].drop_duplicates().shape[0]
    rows = []
    for arm in _arms(ds):
        r = ratios.loc[ratios["arm"] == arm, "ratio"].to_numpy()
        for tau in taus:
            # relative tolerance: a ratio equal to tau up to rounding counts
            rho = float(np.mean(r <= tau * (1.0 + 1e-12))) if n else np.nan
            rows.append({"arm": arm, "tau": float(tau), "rho": rho, "n_problems": n})
    return pd.DataFrame(rows, columns=["arm", "tau", "rho", "n_problems"])


def profile_figure(profile: pd.DataFrame):
    """rho against tau (log x axis), a step line per arm; higher and further left is better."""
    import matplotlib.pyplot as plt

    from spsa_bench.analysis import figures

    figures.set_style()
    arms = list(dict.fromkeys(profile["arm"]))
    palette, dashes = figures.optimizer_palette(arms), figures.optimizer_dashes(arms)
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    for arm in arms:
        one = profile[profile["arm"] == arm].sort_values("tau")
        ax.step(one["tau"], one["rho"], where="post", color=palette[arm], ls=dashes[arm], lw=1.6)
    ax.set_xscale("log")
    figures.plain_log_ticks(ax, "x")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("τ: mean final loss / best arm's mean final loss (log scale)")
    ax.set_ylabel("share of problems with ratio ≤ τ")
    n = int(profile["n_problems"].iloc[0]) if "n_problems" in profile and len(profile) else None
    count = f" over {n} problems (scenario × batch mode)" if n is not None else ""
    ax.set_title(f"Performance profile of the mean final Elo loss{count}", fontsize="medium")
    fig.tight_layout()
    figures.optimizer_legend(fig, palette)
    return fig


# ------------------------------------------------------------------ aggregated ECDF


def aggregated_ecdf(ds: xr.Dataset, targets: Sequence[float]) -> pd.DataFrame:
    """COCO's runtime ECDF over all problems: for each arm and checkpoint, the share of
    (problem, seed, target) triples whose target was reached within that many pairs.

    Hits come from :func:`~spsa_bench.analysis.tables.hits_to_targets` (targets are
    fractions of the start gap, read on the checkpoint grid); problems are the
    cells present for every arm. Unreached triples never count as solved but stay
    in the denominator, which is every triple of the arm with a run (missing
    seeds are left out). Tidy output: ``arm, pairs, fraction, n_triples``.
    """
    hits = hits_to_targets(ds, targets).transpose(
        "optimizer", "batch_mode", "scenario", "seed", "target"
    )
    pairs = ds["pairs"].values.astype(np.float64)
    problems = _problems(ds)
    rows = []
    for k, arm in enumerate(_arms(ds)):
        pooled = [
            hits.sel(batch_mode=mode, scenario=scenario).values[k].ravel()
            for scenario, mode in problems
        ]
        h = np.concatenate(pooled) if pooled else np.empty(0)
        h = h[~np.isnan(h)]
        solved = np.sort(h[np.isfinite(h)])
        counts = np.searchsorted(solved, pairs, side="right")
        for p, c in zip(pairs, counts, strict=True):
            rows.append(
                {
                    "arm": arm,
                    "pairs": float(p),
                    "fraction": float(c / h.size) if h.size else np.nan,
                    "n_triples": int(h.size),
                }
            )
    frame = pd.DataFrame(rows, columns=["arm", "pairs", "fraction", "n_triples"])
    frame.attrs["targets"] = [float(f) for f in targets]
    frame.attrs["n_problems"] = len(problems)
    return frame


def aggregated_ecdf_figure(ecdf: pd.DataFrame, targets: Sequence[float] | None = None):
    """The aggregated ECDF (:func:`aggregated_ecdf`) against pairs on a log axis, a step line per arm.

    ``targets`` only words the title (default: the frame's ``attrs``). The
    checkpoint at 0 pairs cannot sit on a log axis; hits there show at the first
    positive checkpoint.
    """
    import matplotlib.pyplot as plt

    from spsa_bench.analysis import figures

    figures.set_style()
    targets = targets if targets is not None else ecdf.attrs.get("targets")
    arms = list(dict.fromkeys(ecdf["arm"]))
    palette, dashes = figures.optimizer_palette(arms), figures.optimizer_dashes(arms)
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    for arm in arms:
        one = ecdf[(ecdf["arm"] == arm) & (ecdf["pairs"] > 0)].sort_values("pairs")
        ax.step(
            one["pairs"], one["fraction"], where="post", color=palette[arm], ls=dashes[arm], lw=1.6
        )
    ax.set_xscale("log")
    figures.plain_log_ticks(ax, "x")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("game pairs (log scale)")
    ax.set_ylabel("fraction of (problem, seed, target) solved")
    label = (
        f" to recover {', '.join(f'{f:g}' for f in targets)} of the start gap" if targets else ""
    )
    ax.set_title(f"Runtime ECDF over all problems{label}", fontsize="medium")
    fig.tight_layout()
    figures.optimizer_legend(fig, palette)
    return fig


# ------------------------------------------------------------------ rank table


def _average_ranks(means: np.ndarray) -> np.ndarray:
    """Ranks along axis 0 (1 = lowest), ties sharing the average of their ranks."""
    below = (means[None, :] < means[:, None]).sum(axis=1)
    equal = (means[None, :] == means[:, None]).sum(axis=1)
    return 1.0 + below + 0.5 * (equal - 1)


def _one_mode(
    ds: xr.Dataset, mode: str, n_boot: int, seed: int, left_out: dict[str, str]
) -> list[dict]:
    """The rows of one batch mode, ranked over its scenarios but those in ``left_out``
    (scenario: why not ranked); when none is left, the arms in name order, unranked."""
    arms = _arms(ds)
    every = [s for s, _ in _problems(ds, mode)]
    scenarios = [s for s in every if s not in left_out]
    not_ranked = "; ".join(f"{s}: {left_out[s]}" for s in every if s in left_out)
    used = scenarios if scenarios else every
    if not used:
        return []
    # (arm, scenario, seed), restricted to the seeds every arm has in every scenario
    loss = np.stack([_final_loss(ds).sel(batch_mode=mode, scenario=s).values for s in used], axis=1)
    loss = loss[..., np.isfinite(loss).all(axis=(0, 1))]
    n = loss.shape[-1]
    if n == 0:
        return []
    if scenarios:
        point, low, high = _ranks_with_interval(loss, n_boot, seed)
    else:
        point = low = high = np.full(len(arms), np.nan)
    rows = [
        {
            "batch_mode": mode,
            "arm": arm,
            "rank": float(point[a]),
            "rank_low": float(low[a]),
            "rank_high": float(high[a]),
            "mean_final_loss": float(loss[a].mean()),
            "n_scenarios": len(scenarios),
            "n_seeds": n,
            "not_ranked": not_ranked,
        }
        for a, arm in enumerate(arms)
    ]
    return rows if scenarios else sorted(rows, key=lambda row: row["arm"])


def _ranks_with_interval(loss: np.ndarray, n_boot: int, seed: int):
    """Mean rank over scenarios of each arm of ``loss`` (arm, scenario, seed) and its
    paired-bootstrap interval (:data:`RANK_PROBS`)."""
    n = loss.shape[-1]
    point = _average_ranks(loss.mean(axis=-1)).mean(axis=1)
    # Paired bootstrap: one draw of seed indices per replicate, shared by every arm and
    # scenario, held as counts so the means are one matrix product.
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n, size=(n_boot, n))
    counts = np.zeros((n_boot, n))
    np.add.at(counts, (np.repeat(np.arange(n_boot), n), draws.ravel()), 1.0)
    boot = loss @ counts.T / n  # (arm, scenario, replicate)
    boot_rank = _average_ranks(boot).mean(axis=1)  # (arm, replicate)
    low, high = np.quantile(boot_rank, RANK_PROBS, axis=1, method="inverted_cdf")
    return point, low, high


def _left_out(verdicts: pd.DataFrame | None, mode: str) -> dict[str, str]:
    """Scenario: shortfall of the comparisons of ``mode`` that are not ranked."""
    if verdicts is None:
        return {}
    one = verdicts[(verdicts["batch_mode"] == mode) & ~verdicts["ranked"].astype(bool)]
    return dict(zip(one["scenario"], one["shortfall"], strict=True))


def rank_table(
    ds: xr.Dataset,
    batch_mode: str | None = None,
    n_boot: int = 1000,
    seed: int = BOOTSTRAP_SEED,
    verdicts: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Per batch mode, each arm's rank by mean final loss, averaged over scenarios, with a
    95% bootstrap interval (2.5% and 97.5% quantiles, :data:`RANK_PROBS`).

    In each scenario the arms are ranked by their mean final Elo loss over seeds
    (1 = lowest; ties share the average rank); ``rank`` is the mean of those ranks over
    the scenarios present for every arm. The interval resamples seeds with
    replacement, one set of seed indices per replicate shared by every arm and
    scenario (the design is paired by common random numbers), and recomputes the
    mean rank; ``seed`` seeds the generator. Only seeds that every arm has in every
    scenario of the batch mode are used. ``batch_mode=None``: every batch mode.

    ``verdicts`` (:func:`spsa_bench.analysis.relaxation.problem_verdicts`): the
    scenarios whose comparison is not ranked are left out of the ranks and named in
    ``not_ranked`` with their shortfall; when no scenario of a batch mode is left, its
    arms come in name order with NaN ranks and the mean loss over every scenario.
    Columns ``batch_mode, arm, rank, rank_low, rank_high, mean_final_loss,
    n_scenarios`` (the ranked ones), ``n_seeds, not_ranked``; rows by batch mode, then rank.
    """
    modes = [str(m) for m in ds["batch_mode"].values]
    if batch_mode is not None:
        if batch_mode not in modes:
            raise ValueError(f"batch mode {batch_mode!r} is not in the dataset")
        modes = [batch_mode]
    rows = [
        row
        for mode in modes
        for row in _one_mode(ds, mode, n_boot, seed, _left_out(verdicts, mode))
    ]
    columns = [
        "batch_mode",
        "arm",
        "rank",
        "rank_low",
        "rank_high",
        "mean_final_loss",
        "n_scenarios",
        "n_seeds",
        "not_ranked",
    ]
    table = pd.DataFrame(rows, columns=columns)
    order = {m: i for i, m in enumerate(modes)}
    table = table.sort_values(
        ["batch_mode", "rank"],
        key=lambda c: c.map(order) if c.name == "batch_mode" else c,
        kind="stable",
    )
    return table.reset_index(drop=True)


def rank_markdown(table: pd.DataFrame) -> str:
    """The rank table as markdown: one section per batch mode, with the reading notes
    and, where the budget does not support a ranking, the NOT RANKED scenarios."""
    lo, hi = (f"{100 * p:g}%" for p in RANK_PROBS)
    parts = [
        "# Ranks of the optimizers",
        "",
        "In each scenario the optimizers are ranked by their mean final Elo loss over seeds "
        "(1 = lowest loss; ties share the average rank); *rank* is the mean of these ranks over "
        "the scenarios run for every optimizer in the batch mode. *Interval*: the "
        f"{lo} and {hi} quantiles of the mean rank over bootstrap resamples of the seeds; each "
        "resample draws one set of seeds shared by every optimizer and scenario, keeping the "
        "pairing by common random numbers. *Mean loss*: the final Elo loss averaged over "
        "scenarios and seeds. A scenario whose budget is below the predicted need of its "
        "reference SPSA arm, or whose reference arm has not relaxed, is NOT RANKED: left out "
        'of the ranks and named with its shortfall (docs/benchmark.md, "Is the budget big '
        'enough? (NOT RANKED)").',
        "",
    ]
    t = table.copy()
    t["interval"] = interval(t, "rank_low", "rank_high", 2)
    for mode in dict.fromkeys(t["batch_mode"]):
        one = t[t["batch_mode"] == mode]
        parts += [_mode_heading(one), ""]
        not_ranked = str(one["not_ranked"].iloc[0]) if "not_ranked" in one else ""
        if int(one["n_scenarios"].iloc[0]) == 0:
            parts += [
                f"**NOT RANKED**: no scenario's budget supports a ranking ({not_ranked}). Rows "
                "in name order; the mean loss over every scenario is shown for the record.",
                "",
            ]
        elif not_ranked:
            parts += [f"**NOT RANKED** (left out of the ranks): {not_ranked}.", ""]
        parts += [
            markdown_table(
                one,
                {
                    "arm": "optimizer",
                    "rank": "rank",
                    "interval": f"{lo}–{hi}",
                    "mean_final_loss": "mean loss",
                },
                digits=2,
            ),
            "",
        ]
    return "\n".join(parts)


def _mode_heading(one: pd.DataFrame) -> str:
    ranked = int(one["n_scenarios"].iloc[0])
    return f"## {one['batch_mode'].iloc[0]} ({ranked} scenarios ranked, {int(one['n_seeds'].iloc[0])} seeds)"
