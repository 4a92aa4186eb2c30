"""The tuning protocol's choice and report (:mod:`spsa_bench.studies.tuning`).

:func:`choose` reads the tuning dataset only (the tuning seeds) and picks, per
sweep and batch mode,

- the **oracle** setting of each scenario: the arm with the smallest median final
  Elo loss on the tuning seeds in that scenario (ties: the first arm of the sweep);
- the **robust** setting of the family: the arm minimising the mean, over the
  family's scenarios, of its median final loss divided by that scenario's best
  median (ties: the first arm). It is reported on every scenario.

:func:`tuned_table` reports each choice on the benchmark's seeds (the test seeds,
never seen by the choice): its final loss with a 95% t-interval and the paired
difference to the baseline sweep's choice made the same way.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import xarray as xr

from spsa_bench.analysis import stats
from spsa_bench.analysis.tables import interval, markdown_table
from spsa_bench.studies.tuning import pick_settings

LEVEL = 0.95
TUNINGS = ("oracle", "robust")


def _medians(ds: xr.Dataset) -> xr.DataArray:
    """Median final loss over the tuning seeds; a run with no finite loss counts as +inf."""
    median = ds["final_elo_loss"].median("seed", skipna=True)
    return median.fillna(np.inf)


def at_edge(ds: xr.Dataset, arm: str) -> bool:
    """Whether ``arm`` takes the smallest or the largest value its sweep tries of some
    swept number (a ``swept_<key>`` coordinate of the tuning dataset ``ds``): a best
    setting there may lie outside the grid, which should then be widened."""
    sweep = ds["sweep"].values == ds["sweep"].sel(arm=arm).item()
    for name in ds.coords:
        coord = ds.coords[name]
        if not str(name).startswith("swept_") or coord.dtype.kind != "f":
            continue
        values = coord.values[sweep]
        value = float(coord.sel(arm=arm).item())
        if (
            np.isfinite(value)
            and np.unique(values).size > 1
            and value in (np.nanmin(values), np.nanmax(values))
        ):
            return True
    return False


def choose(ds: xr.Dataset) -> pd.DataFrame:
    """The oracle and robust choice per (sweep, batch mode), one row per scenario.

    Columns: sweep, batch_mode, tuning (oracle / robust), scenario, arm, setting,
    at_edge (:func:`at_edge`), in_family, tuning_median (the arm's median final loss
    on the tuning seeds in the scenario) and robust_score (the robust criterion of the
    arm; NaN for oracle rows). Reads ``ds`` (the tuning dataset) only.
    """
    family = [s for s in str(ds.attrs["family"]).split(", ") if s]
    scenarios = [str(s) for s in ds["scenario"].values]
    median = _medians(ds)
    rows = []
    sweeps = list(dict.fromkeys(str(s) for s in ds["sweep"].values))
    for sweep in sweeps:
        arms = ds["arm"].values[ds["sweep"].values == sweep]
        for mode in ds["batch_mode"].values:
            table = median.sel(arm=arms, batch_mode=mode)  # (arm, scenario)
            values = table.transpose("arm", "scenario").values
            oracles, robust, score = pick_settings(values, [scenarios.index(s) for s in family])
            for s, scenario in enumerate(scenarios):
                for tuning, pick in (("oracle", int(oracles[s])), ("robust", robust)):
                    arm = str(arms[pick])
                    rows.append(
                        {
                            "sweep": sweep,
                            "batch_mode": str(mode),
                            "tuning": tuning,
                            "scenario": scenario,
                            "arm": arm,
                            "setting": str(ds["setting"].sel(arm=arm).item()),
                            "at_edge": at_edge(ds, arm),
                            "in_family": scenario in family,
                            "tuning_median": float(values[pick, s]),
                            "robust_score": float(score[pick]) if tuning == "robust" else math.nan,
                        }
                    )
    choice = pd.DataFrame(rows)
    choice.attrs = {key: ds.attrs[key] for key in _CARRIED if key in ds.attrs}
    return choice


def representatives(ds: xr.Dataset) -> dict[str, str]:
    """One arm per sweep for the figures and the ranking: the robust choice over the
    family's scenarios and every batch mode at once (the arm minimising the mean of
    its median final loss divided by the best median of each (scenario, batch mode)
    of the family; ties: the first arm). Reads ``ds`` (the tuning dataset) only."""
    family = [s for s in str(ds.attrs["family"]).split(", ") if s]
    median = _medians(ds).sel(scenario=family)
    chosen = {}
    for sweep in dict.fromkeys(str(s) for s in ds["sweep"].values):
        arms = ds["arm"].values[ds["sweep"].values == sweep]
        values = median.sel(arm=arms).transpose("arm", ...).values.reshape(len(arms), -1)
        _, robust, _ = pick_settings(values, range(values.shape[1]))  # every (scenario, mode)
        chosen[sweep] = str(arms[robust])
    return chosen


def comparison_arms(arms, tuning: xr.Dataset) -> list[str]:
    """``arms`` (the benchmark's, in order) with each tuned sweep cut down to its
    :func:`representatives` arm: the unswept arms and one tuned arm per sweep."""
    swept = {str(arm) for arm in tuning["arm"].values}
    kept = set(representatives(tuning).values())
    return [str(arm) for arm in arms if str(arm) not in swept or str(arm) in kept]


def select_comparison(ds: xr.Dataset, tuning_path) -> xr.Dataset:
    """The benchmark ``ds`` cut down to :func:`comparison_arms` by the tuning runs at
    ``tuning_path`` (the workflow's ``results/fishtest/tuning.nc``); ``ds`` itself
    when there is no tuning file."""
    if not tuning_path:
        return ds
    from spsa_bench.results.combine import open_tuning

    shown = comparison_arms(ds["optimizer"].values, open_tuning(tuning_path))
    return ds.sel(optimizer=shown)


#: Tuning-dataset attributes :func:`choose` carries into its frame (for the report).
_CARRIED = (
    "criterion_text",
    "robust_text",
    "held_out",
    "family",
    "tuning_seeds_first",
    "tuning_seeds_count",
    "baseline_sweep",
)


def _test_losses(benchmark: xr.Dataset) -> xr.DataArray:
    return benchmark["elo_loss"].isel(pairs=-1)


def _check_held_out(choice: pd.DataFrame, seeds: np.ndarray) -> None:
    if "tuning_seeds_first" not in choice.attrs:
        return
    first = int(choice.attrs["tuning_seeds_first"])
    tuning = range(first, first + int(choice.attrs["tuning_seeds_count"]))
    shared = sorted(int(s) for s in seeds if int(s) in tuning)
    if shared:
        raise ValueError(
            f"the benchmark's seeds include tuning seeds ({shared[0]}..{shared[-1]}): "
            "the report would not be held out"
        )


def _check_finite(values: np.ndarray, seeds: np.ndarray, arm: str, cell: dict) -> None:
    """A chosen setting's final losses on the test seeds must all be numbers: a seed
    without one is refused by name, never dropped from the mean (n would shrink)."""
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        raise ValueError(
            f"the benchmark's final elo_loss of {arm} on {cell['scenario']} / "
            f"{cell['batch_mode']} is {values[bad[0]]} at seed {int(seeds[bad[0]])} "
            f"({bad.size} seed(s) without a finite loss); rerun that cell"
        )


def tuned_table(
    choice: pd.DataFrame, benchmark_ds: xr.Dataset, baseline_sweep: str
) -> pd.DataFrame:
    """Each choice of :func:`choose` on the test seeds of ``benchmark_ds`` (its final
    ``elo_loss``): mean with a 95% t-interval, and the paired difference (per seed)
    to the choice of ``baseline_sweep`` for the same batch mode, scenario and tuning
    mode; ``baseline_sweep`` that is no sweep of ``choice`` is the baseline arm itself."""
    final = _test_losses(benchmark_ds)
    _check_held_out(choice, final["seed"].values)
    baseline_rows = choice[choice["sweep"] == baseline_sweep].set_index(
        ["batch_mode", "scenario", "tuning"]
    )
    rows = []
    for row in choice.itertuples(index=False):
        cell = {"batch_mode": row.batch_mode, "scenario": row.scenario}
        values = final.sel(optimizer=row.arm, **cell).values
        _check_finite(values, final["seed"].values, row.arm, cell)
        if baseline_rows.empty:
            baseline_arm = baseline_sweep
        else:
            baseline_arm = baseline_rows.loc[(row.batch_mode, row.scenario, row.tuning), "arm"]
        mean, low, high = stats.t_interval(values, LEVEL)
        is_baseline = row.sweep == baseline_sweep
        if is_baseline:
            d_mean = d_low = d_high = math.nan
        else:
            difference = values - final.sel(optimizer=baseline_arm, **cell).values
            d_mean, d_low, d_high = stats.t_interval(difference, LEVEL)
        rows.append(
            {
                **row._asdict(),
                "n_seeds": int(np.isfinite(values).sum()),
                "loss_mean": mean,
                "loss_low": low,
                "loss_high": high,
                "baseline": str(baseline_arm),
                "diff_mean": d_mean,
                "diff_low": d_low,
                "diff_high": d_high,
            }
        )
    return pd.DataFrame(rows)


def tuned_markdown(table: pd.DataFrame, choice: pd.DataFrame) -> str:
    """The tuned table as Markdown, stating the criterion and the held-out rule."""
    attrs = choice.attrs
    t = table.copy()
    t["in_family"] = t["in_family"].map({True: "yes", False: "no"})
    t["at_edge"] = t["at_edge"].map({True: "edge", False: ""})
    t["loss_ci"] = interval(t, "loss_low", "loss_high")
    t["diff_ci"] = interval(t, "diff_low", "diff_high")
    pct = f"{LEVEL:.0%}"
    first = int(attrs.get("tuning_seeds_first", -1))
    count = int(attrs.get("tuning_seeds_count", 0))
    baseline = attrs.get("baseline_sweep", "the baseline")
    lines = [
        "# Tuned settings, reported on held-out seeds",
        "",
        f"Held out: {attrs.get('held_out', '')} (tuning seeds {first}..{first + count - 1}). "
        f"Criterion: {attrs.get('criterion_text', '')}. *oracle*: the setting with the "
        f"smallest median in that scenario; *{attrs.get('robust_text', '')}*; family: "
        f"{attrs.get('family', '')} (*in family* says whether the scenario is one of them). "
        "*edge*: the setting is the smallest or largest value its sweep tries, so the "
        "best may lie outside the grid (widen the sweep). "
        f"*loss*: mean final Elo loss on the test seeds with its {pct} t-interval. "
        f"*Δ vs {baseline}*: mean per-seed difference to the setting of {baseline} chosen "
        f"the same way (negative: the row loses less), {pct} t-interval.",
        "",
        markdown_table(
            t,
            {
                "sweep": "sweep",
                "batch_mode": "batch mode",
                "scenario": "scenario",
                "tuning": "tuning",
                "setting": "setting",
                "at_edge": "edge",
                "in_family": "in family",
                "tuning_median": "tuning median",
                "n_seeds": "test seeds",
                "loss_mean": "loss",
                "loss_ci": f"{pct} CI",
                "diff_mean": f"Δ vs {baseline}",
                "diff_ci": f"Δ {pct} CI",
            },
        ),
    ]
    return "\n".join(lines) + "\n"
