"""What ``plan.md`` says, read from the plan's dataset (:mod:`spsa_bench.plan.run`;
the constants and the recommendation rule are :mod:`spsa_bench.plan.spec`'s).

Every number is a statistic over the plan's instances (seeds): a mean with its
Student-t 95% interval (:func:`spsa_bench.analysis.stats.t_interval`), a share with its
Wilson 95% interval (:func:`spsa_bench.analysis.stats.wilson_interval`), or a paired
difference between two settings, whose interval is narrow because the settings share
their instances and random numbers. docs/plan.md explains each line.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import xarray as xr

from spsa_bench.analysis import stats
from spsa_bench.analysis.tables import markdown_table
from spsa_bench.config.block_guards import printable_text
from spsa_bench.config.param_block import ParamBlock
from spsa_bench.model.instances import TruthPrior
from spsa_bench.plan.spec import (
    AUTOSELECT,
    DEFAULT_A_RATIO,
    DEFAULT_ALPHA,
    DEFAULT_GAMMA,
    FISHTEST_FRAMEWORK,
    LEVEL,
    OPENBENCH_FRAMEWORK,
    PRIOR,
    ZERO_OFFSET,
    parse_framework_block,
    scaled_block,
)

#: A parameter barely moves when its median final move is below this many c_end.
BARELY_MOVES = 0.5
#: A parameter is flagged pinned when at least this share of instances ends at a bound.
PINNED_SHARE = 0.1
#: An integer parameter with c_end below this many integer steps has a rounding hazard
#: (fishtest #1912 proposed never probing below 2).
HAZARD_C_END = 2.0
#: OpenBench: an int parameter whose c_end is below OpenBench's c_k floor ends the run
#: probed at the floor, with its step r_k computed from it (docs/frameworks.md).
OPENBENCH_C_FLOOR = 0.5
#: Elo thresholds of the outcome's probabilities.
ONE_ELO = 1.0


#: Characters with a meaning in an inline Markdown span or a table cell (GitHub's):
#: backslash-escaped where a name or a file name is shown as text.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&$])")


def _count(n: int, noun: str) -> str:
    """``n noun`` with the noun in the plural unless ``n`` is 1."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def markdown_text(text: str) -> str:
    """``text`` shown literally in Markdown: :func:`printable_text`, and every
    character of :data:`_MARKDOWN_SPECIAL` backslash-escaped, so a name like
    ``<script>`` or ``a|b`` neither runs as HTML nor splits a table."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", printable_text(text))


def code_block(text: str) -> list[str]:
    """``text`` as a fenced code block whose fence is longer than any run of backticks
    in it, so no line of ``text`` can close it (the text is kept exactly)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence, text, fence]


def final_gain(ds: xr.Dataset, run: str) -> np.ndarray:
    """Per seed, true Elo at the end of ``run`` minus at the start."""
    return ds["gain"].sel(run=run).isel(checkpoint=-1).values


def outcome(gains: np.ndarray) -> dict:
    """The outcome's statistics over instances (docs/plan.md, "The outcome")."""
    mean, low, high = stats.t_interval(gains, LEVEL)
    return {
        "mean": mean,
        "mean_ci": (low, high),
        "median": float(np.median(gains)),
        "q10": float(np.quantile(gains, 0.1)),
        "q90": float(np.quantile(gains, 0.9)),
        "p_gain": stats.wilson_interval(gains > 0, LEVEL),
        "p_gain_1": stats.wilson_interval(gains > ONE_ELO, LEVEL),
        "p_weaker_1": stats.wilson_interval(gains < -ONE_ELO, LEVEL),
    }


def _elo(value: float) -> str:
    return f"{value:+.2f}" if value else "0.00"


def _ci(low: float, high: float, fmt=_elo) -> str:
    return f"[{fmt(low)}, {fmt(high)}]"


def _share(triple) -> str:
    share, low, high = triple
    return f"{share:.1%} [{low:.1%}, {high:.1%}]"


def _prior(ds: xr.Dataset) -> TruthPrior:
    return TruthPrior.from_mapping(json.loads(ds.attrs["truth_prior"]))


def framework(ds: xr.Dataset) -> str:
    """``fishtest`` or ``openbench`` (a Fishtest plan's plan.nc has no such attribute)."""
    return str(ds.attrs.get("framework", FISHTEST_FRAMEWORK))


def _openbench(ds: xr.Dataset) -> bool:
    return framework(ds) == OPENBENCH_FRAMEWORK


def _block(ds: xr.Dataset) -> ParamBlock:
    return parse_framework_block(framework(ds), str(ds.attrs["block"]))


def _iterations(ds: xr.Dataset, games: int) -> int:
    """OpenBench's iterations of ``games``: ``games / (2 pairs_per)``."""
    return games // (2 * int(ds.attrs["openbench_pairs_per"]))


def runs_of(ds: xr.Dataset, instances: str = PRIOR) -> list[str]:
    """The labels of the runs on ``instances``, in the dataset's order."""
    return [str(r) for r in ds["run"].values[ds["instances"].values == instances]]


def gain_schedule(ds: xr.Dataset) -> str:
    """The spsa arm's ``A``, alpha and gamma as plan.md states them (a plan.nc written
    before they were options has Fishtest's defaults)."""
    a_ratio = float(ds.attrs.get("spsa_A_ratio", DEFAULT_A_RATIO))
    alpha = float(ds.attrs.get("spsa_alpha", DEFAULT_ALPHA))
    gamma = float(ds.attrs.get("spsa_gamma", DEFAULT_GAMMA))
    games = int(ds.attrs["games_given"])
    if _openbench(ds):
        iterations = _iterations(ds, games)
        return (
            f"A-Ratio {a_ratio:g} (A = {a_ratio * iterations:g} of {iterations:,} iterations), "
            f"α {alpha:g}, γ {gamma:g}, Pairs-Per {int(ds.attrs['openbench_pairs_per'])}"
        )
    default = (a_ratio, alpha, gamma) == (DEFAULT_A_RATIO, DEFAULT_ALPHA, DEFAULT_GAMMA)
    text = f"A = {a_ratio:g} N, α {alpha:g}, γ {gamma:g}"
    if default:
        return text
    return f"A = {a_ratio:g} N = {int(a_ratio * (games // 2)):,} at the given games, α {alpha:g}, γ {gamma:g}"


# ---------------------------------------------------------------------------- sections


def header(ds: xr.Dataset) -> list[str]:
    if _openbench(ds):
        return _openbench_header(ds)
    block = _block(ds)
    mode = json.loads(ds.attrs["batch_mode_settings"])
    games = int(ds.attrs["games_given"])
    mode_text = (
        f"1 worker, {mode['batch_size']} pairs per report"
        if mode.get("workers") == 1
        else f"{mode['workers']} workers, {mode['batch']} batches"
    )
    return [
        f"# spsa-bench plan: {markdown_text(str(ds.attrs['source_block']))}",
        "",
        f"{_count(len(block), 'parameter')}, **{games:,} games** ({games // 2:,} game pairs), "
        f"**{ds.attrs['time_control']}** game noise (draw rate {ds.attrs['noise_draw_rate']:.3f}, "
        f"σ² {ds.attrs['noise_sigma2']:.4f} per pair at equal strength), batch mode "
        f"**{ds.attrs['batch_mode']}** ({mode_text}), Fishtest's SPSA ({gain_schedule(ds)}, "
        "the block's c_end and r_end) with the worker's stochastic rounding, "
        f"simulated on **{ds.sizes['seed']} instances** of the prior below. A simulation "
        "under stated assumptions, not a measurement of your engine.",
    ]


def _openbench_header(ds: xr.Dataset) -> list[str]:
    block = _block(ds)
    games = int(ds.attrs["games_given"])
    pairs_per = int(ds.attrs["openbench_pairs_per"])
    distribution = str(ds.attrs["openbench_distribution"]).upper()
    machines, concurrency = (int(ds.attrs[f"openbench_{k}"]) for k in ("machines", "concurrency"))
    per_workload = (
        f"one perturbation per workload of {pairs_per} × {concurrency} pairs"
        if distribution == "SINGLE"
        else f"one perturbation per runner: {concurrency // 2} runners of {pairs_per} pairs"
    )
    ints = int(np.sum(block.integer))
    reporting = str(ds.attrs.get("openbench_reporting", "bulk")).upper()
    reported = (
        "what has finished every 30 s, each piece applied with the workload's perturbation"
        if reporting == "BATCHED"
        else "one update at the end of each workload"
    )
    return [
        f"# spsa-bench plan (OpenBench): {markdown_text(str(ds.attrs['source_block']))}",
        "",
        f"{_count(len(block), 'parameter')} ({ints} int, {len(block) - ints} float), **{games:,} games** "
        f"({games // 2:,} game pairs, {_iterations(ds, games):,} iterations of {pairs_per} "
        f"pairs), **{ds.attrs['time_control']}** game noise (draw rate "
        f"{ds.attrs['noise_draw_rate']:.3f}, σ² {ds.attrs['noise_sigma2']:.4f} per pair at "
        f"equal strength), **OpenBench's SPSA** ({gain_schedule(ds)}, the block's c_end and "
        "r_end, an int parameter's c_k never below 0.5) with coupled rounding (both engines "
        f"floor(x + U) with one U), distribution **{distribution}** ({per_workload}) on "
        f"{machines} machines of {concurrency} concurrent games, reporting **{reporting}** "
        f"({reported}), simulated on **{ds.sizes['seed']} instances** of the prior below. A "
        "simulation under stated assumptions, not a measurement of your engine.",
    ]


_PRIOR_ROWS = (
    (
        "optimum's offset from the start",
        lambda p: f"{p.offset_distribution}, scale {p.offset_scale:g} c_end",
        "assumption: about two c_end steps keeps the optimum within reach of the probes",
        lambda p, d: (
            (p.offset_distribution, p.offset_scale) == (d.offset_distribution, d.offset_scale)
        ),
    ),
    (
        "Elo lost one c_end from the optimum",
        lambda p: (
            f"{p.elo_min:g}"
            if p.elo_min == p.elo_max
            else f"log-uniform {p.elo_min:g} to {p.elo_max:g}"
        ),
        "Autoselect's 2 Elo lost half a range from the optimum: 0.22 Elo per c_end at "
        "c_end = range/6, 0.02 at TUNE()'s range/20 (fishtest spsa_new.js, Stockfish tune.cpp)",
        lambda p, d: (p.elo_min, p.elo_max) == (d.elo_min, d.elo_max),
    ),
    (
        "share of parameters with no effect",
        lambda p: f"{p.inactive_fraction:g}",
        "assumption: a quarter of a real tune's parameters do nothing measurable",
        lambda p, d: p.inactive_fraction == d.inactive_fraction,
    ),
    (
        "interaction (pairwise rotations)",
        lambda p: f"{p.interaction:g}",
        "assumption: 0, an axis-aligned bowl (1: rotations up to ±45°)",
        lambda p, d: p.interaction == d.interaction,
    ),
    (
        "optimum's shift per time-control step",
        lambda p: (
            "none (one truth at every time control)"
            if p.tc_spread == 0
            else f"{p.tc_spread:g} x N(0, 1) c_end from the {p.tc_tuned_at} optimum"
        ),
        "assumption: the corpus does not identify it (--time-control-shift)",
        lambda p, d: p.tc_spread == d.tc_spread,
    ),
)


def _stake_line(ds: xr.Dataset) -> str:
    gap = ds["start_elo_gap"].values
    return (
        f"Elo at stake (the instance's loss at the start): mean {gap.mean():.2f}, median "
        f"{np.median(gap):.2f}, 10–90% {np.quantile(gap, 0.1):.2f} to "
        f"{np.quantile(gap, 0.9):.2f}."
    )


def _instances_text(ds: xr.Dataset) -> str:
    draws = int(ds.attrs.get("truth_prior_draws", 0))
    if draws:
        return (
            f"The table holds the median of the fit's {draws} accepted draws; each instance "
            "is a bowl drawn from one of those draws"
        )
    return "Each instance is a bowl drawn from it"


def _calibrated_prior_section(ds: xr.Dataset, source: str) -> list[str]:
    truth = json.loads(ds.attrs["truth_prior"])
    rows = []
    for key, value in truth.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}"
                              for k, v in value.items())  # fmt: skip
        if key == "time_control_shift":
            value += " (given with --time-control-shift: an assumption, not fitted)"
        rows.append(f"| {key} | {value} |")
    return [
        "## The prior over the unknown truth (calibrated: a fit, not a fact)",
        "",
        source.removeprefix("calibrated: ").rstrip(".")
        + ". "
        + _instances_text(ds)
        + ' (docs/fishtest.md, "Landscape options"; docs/calibration.md says what the '
        "fit could and could not identify). Give --prior assumed (or any of --offset-scale, "
        "--offset-distribution, --elo-per-c-end, --inactive-fraction, --interaction) for the "
        "hand-set prior.",
        "",
        "| truth key | value |",
        "|---|---|",
        *rows,
        "",
        _stake_line(ds),
    ]


def prior_section(ds: xr.Dataset) -> list[str]:
    source = str(ds.attrs.get("truth_prior_source", "assumed"))
    if source.startswith("calibrated"):
        return _calibrated_prior_section(ds, source)
    prior, default = _prior(ds), TruthPrior()
    rows = [
        f"| {what} | {value(prior)} | {'default' if same(prior, default) else 'given'}: {why} |"
        for what, value, why, same in _PRIOR_ROWS
    ]
    return [
        "## The prior over the unknown truth (assumptions, not facts)",
        "",
        "Each instance is a quadratic bowl drawn from this prior, in units of each "
        "parameter's c_end (docs/plan.md says where each default comes from; change them "
        "with --offset-scale, --offset-distribution, --elo-per-c-end, --inactive-fraction, "
        "--interaction).",
        "",
        "| what | value | source |",
        "|---|---|---|",
        *rows,
        "",
        _stake_line(ds),
    ]


def outcome_section(ds: xr.Dataset) -> list[str]:
    given = str(ds.attrs["given_run"])
    gains = final_gain(ds, given)
    o = outcome(gains)
    gap = float(ds["start_elo_gap"].values.mean())
    recovered = f" ({o['mean'] / gap:.0%} of the mean Elo at stake)" if gap > 0 else ""
    return [
        "## 1. The outcome of the tune as given",
        "",
        "Gain = true Elo at the final parameters minus true Elo at the start.",
        "",
        "| | |",
        "|---|---|",
        f"| expected gain (mean) | **{_elo(o['mean'])} Elo**{recovered} |",
        f"| 95% CI of the mean | {_ci(*o['mean_ci'])} |",
        f"| median | {_elo(o['median'])} |",
        f"| 10–90% range | {_elo(o['q10'])} to {_elo(o['q90'])} |",
        f"| P(gain > 0) | {_share(o['p_gain'])} |",
        f"| P(gain > 1 Elo) | {_share(o['p_gain_1'])} |",
        f"| P(weaker by more than 1 Elo) | {_share(o['p_weaker_1'])} |",
        *_other_time_controls(ds, given),
    ]


def _other_time_controls(ds: xr.Dataset, run: str) -> list[str]:
    """P(gain > 0) of ``run`` at the time controls the tune did not play, with the
    prior's time-control shift (docs/plan.md, "Another time control"), or the sentence
    saying the prior has one truth at every time control."""
    tuned = str(ds.attrs["time_control"])
    if "final_gain_at_time_control" not in ds:
        return [
            "",
            f"The tune plays at {tuned}. The prior has no `time_control_shift`: one truth at "
            "every time control, so the gain is the same at STC, LTC and VLTC (an assumption; "
            'docs/plan.md, "Another time control").',
        ]
    gains = ds["final_gain_at_time_control"].sel(run=run)
    rows = [
        f"| P(gain > 0) at {tc} (the optimum moved, `time_control_shift`) | "
        f"{_share(stats.wilson_interval(gains.sel(time_control=tc).values > 0, LEVEL))} |"
        for tc in (str(t) for t in ds["time_control"].values)
        if tc != tuned
    ]
    return rows


def parameter_table(ds: xr.Dataset, run: str | None = None) -> pd.DataFrame:
    """One row per parameter of ``run`` (default: the given setting)."""
    run = run or str(ds.attrs["given_run"])
    theta = ds["theta"].sel(run=run).isel(checkpoint=-1).values  # (seed, param)
    start, low, high = (ds[k].values for k in ("theta_start", "theta_min", "theta_max"))
    c_end = ds["c_end"].values * float(ds["c_scale"].sel(run=run))
    integer = ds["integer"].values.astype(bool)
    move = np.abs(theta - start)
    tolerance = np.where(integer, 0.5, 0.0)  # the engine plays the bound
    pinned = ((theta <= low + tolerance) | (theta >= high - tolerance)).mean(axis=0)
    median = np.median(move, axis=0)
    threshold = OPENBENCH_C_FLOOR if _openbench(ds) else HAZARD_C_END
    hazard = integer & (c_end < threshold)
    table = pd.DataFrame(
        {
            "param": [str(p) for p in ds["param"].values],
            "start": start,
            "c_end": c_end,
            "move_c_end": median / c_end,
            "move_steps": median,
            "pinned": pinned,
            "barely_moves": median / c_end < BARELY_MOVES,
            "hazard": hazard,
            "equal": ds["predicted_equal_share"].sel(run=run).values,
            "swapped": ds["predicted_swapped_share"].sel(run=run).values,
        }
    )
    hazard_flag = "at the c floor" if _openbench(ds) else "rounding hazard"
    table["flags"] = [_flags(row, hazard_flag) for row in table.itertuples()]
    return table


def _flags(row, hazard_flag: str = "rounding hazard") -> str:
    flags = []
    if row.barely_moves:
        flags.append("barely moves")
    if row.pinned >= PINNED_SHARE:
        flags.append(f"pinned ({row.pinned:.0%})")
    if row.hazard:
        flags.append(hazard_flag)
    return ", ".join(flags)


def parameter_section(ds: xr.Dataset) -> list[str]:
    table = parameter_table(ds).copy()
    hazard = table["hazard"]
    for column in ("equal", "swapped"):
        table[column] = [
            f"{v:.1%}" if h else "" for v, h in zip(table[column], hazard, strict=True)
        ]
    table["param"] = [markdown_text(name) for name in table["param"]]
    table["pinned"] = [f"{v:.0%}" for v in table["pinned"]]
    table["start"] = [f"{v:g}" for v in table["start"]]
    table["c_end"] = [f"{v:g}" for v in table["c_end"]]
    given = str(ds.attrs["given_run"])
    measured = float(np.nanmean(ds["probe_equal_fraction"].sel(run=given)))
    swapped = float(np.nanmean(ds["probe_swapped_fraction"].sel(run=given)))
    hazard_flag = "at the c floor" if _openbench(ds) else "rounding hazard"
    counts = {
        flag: int(table["flags"].str.contains(flag).sum())
        for flag in ("barely moves", "pinned", hazard_flag)
    }
    if _openbench(ds):
        hazard_text = (
            f"*at the c floor*: an int parameter with c_end below OpenBench's floor "
            f"{OPENBENCH_C_FLOOR:g}: its probe ends the run at ±{OPENBENCH_C_FLOOR:g} and its "
            "step r_k = a_k / c_k² is computed from the raised c_k. With coupled rounding and "
            "the floor the two engines never play the same integer away from the bounds; "
            "*equal* / *swapped*: predicted share of workloads whose two engines played the "
            "same integer / integers in the opposite order to the flip (closed form of "
            "coupled rounding at the simulated θ, each workload's floored c_k and the clip)"
        )
    else:
        hazard_text = (
            f"*rounding hazard*: an integer parameter with c_end below {HAZARD_C_END:g}; "
            "*equal* / *swapped*: predicted share of batches whose two engines played the "
            "same integer / integers in the opposite order to the flip (closed form at the "
            "simulated θ and each batch's c_k)"
        )
    return [
        "## 2. Per parameter (the tune as given)",
        "",
        f"*move*: median over instances of |final − start|, in c_end and in integer steps. "
        f"*barely moves*: median move below {BARELY_MOVES:g} c_end. *pinned*: share of "
        f"instances ending within half a step of min or max (flagged from "
        f"{PINNED_SHARE:.0%}). {hazard_text}.",
        "",
        markdown_table(
            table,
            {
                "param": "parameter",
                "start": "start",
                "c_end": "c_end",
                "move_c_end": "move (c_end)",
                "move_steps": "move (steps)",
                "pinned": "pinned",
                "equal": "equal",
                "swapped": "swapped",
                "flags": "flags",
            },
            digits=2,
        ),
        "",
        f"{counts['barely moves']} of {len(table)} parameters barely move, "
        f"{counts['pinned']} are pinned, {counts[hazard_flag]} "
        + ("are at the c floor. " if _openbench(ds) else "have a rounding hazard. ")
        + f"Measured over every parameter and batch of the tune: {measured:.1%} equal, "
        f"{swapped:.1%} swapped integers.",
    ]


def roles(ds: xr.Dataset) -> dict[str, str]:
    """``given`` and, when it differs, ``recommended``: their run labels."""
    given, chosen = str(ds.attrs["given_run"]), str(ds.attrs["recommended_run"])
    return {"given": given} if chosen == given else {"given": given, "recommended": chosen}


def noise_floor_section(ds: xr.Dataset) -> list[str]:
    rows = []
    for role, run in roles(ds).items():
        loss = -final_gain(ds, f"{run} {ZERO_OFFSET}")
        mean, low, high = stats.t_interval(loss, LEVEL)
        rows.append(
            f"| {role} ({setting_text(ds, run)}) | "
            f"{mean:.2f} {_ci(low, high, lambda v: f'{v:.2f}')} | {np.median(loss):.2f} | "
            f"{np.quantile(loss, 0.9):.2f} | "
            f"{_share(stats.wilson_interval(loss > ONE_ELO, LEVEL))} |"
        )
    return [
        "## 3. The noise floor",
        "",
        "The same tune on the same instances with every optimum moved to the start (zero "
        "offset): the Elo it loses to noise alone, what an engine that is already tuned "
        "risks.",
        "",
        "| setting | mean loss (Elo) [95% CI] | median | 90% quantile | P(loss > 1 Elo) |",
        "|---|---|---|---|---|",
        *rows,
    ]


def setting_text(ds: xr.Dataset, run: str) -> str:
    row = ds.sel(run=run)
    games = f"{int(row['games']):,} games"
    if _openbench(ds):
        games += f" ({_iterations(ds, int(row['games'])):,} iterations)"
    if str(row["arm"].values) == AUTOSELECT:
        return f"Autoselect, {games}"
    return f"c_end ×{float(row['c_scale']):g}, r_end ×{float(row['r_scale']):g}, {games}"


def settings_table(ds: xr.Dataset) -> pd.DataFrame:
    """One row per run on the prior's instances: expected gain, P(gain > 0), and the
    paired difference to the given setting."""
    given = final_gain(ds, str(ds.attrs["given_run"]))
    rows = []
    for run in runs_of(ds):
        gains = final_gain(ds, run)
        mean, low, high = stats.t_interval(gains, LEVEL)
        diff = stats.t_interval(gains - given, LEVEL)
        rows.append(
            {
                "run": run,
                "setting": setting_text(ds, run),
                "arm": str(ds["arm"].sel(run=run).values),
                "games": int(ds["games"].sel(run=run)),
                "mean": mean,
                "low": low,
                "high": high,
                "p_gain": stats.wilson_interval(gains > 0, LEVEL),
                "diff": diff,
            }
        )
    return pd.DataFrame(rows)


def _notes(table: pd.DataFrame, ds: xr.Dataset) -> list[str]:
    """given / best / recommended / within the margin, per row of :func:`settings_table`."""
    search = table[table["arm"] != AUTOSELECT]
    best = search["mean"].max()
    margin = float(ds.attrs["margin_elo"])
    notes = []
    for row in table.itertuples():
        note = []
        if row.run == ds.attrs["given_run"]:
            note.append("given")
        if row.arm != AUTOSELECT and row.mean == best:
            note.append("best")
        if row.run == ds.attrs["recommended_run"]:
            note.append("**recommended**")
        elif row.arm != AUTOSELECT and row.mean >= best - margin:
            note.append("within margin")
        notes.append(", ".join(note))
    return notes


def settings_section(ds: xr.Dataset) -> list[str]:
    table = settings_table(ds)
    table["note"] = _notes(table, ds)
    order = table.assign(auto=table["arm"] == AUTOSELECT).sort_values(
        ["auto", "games"], kind="stable"
    )
    lines = [
        f"| {row.setting} | {_elo(row.mean)} {_ci(row.low, row.high)} | {_share(row.p_gain)} | "
        + ("" if row.run == ds.attrs["given_run"] else f"{_elo(row.diff[0])} {_ci(*row.diff[1:])}")
        + f" | {row.note} |"
        for row in order.itertuples()
    ]
    margin = float(ds.attrs["margin_elo"])
    if _openbench(ds):
        searched = (
            "OpenBench's SPSA with every c_end and r_end of the block multiplied, and the "
            "games budget multiplied (whole iterations); the A-Ratio, α, γ, Pairs-Per, "
            "distribution and machines stay as given (OpenBench has no Autoselect)."
        )
        cheapest = "(fewest games)"
    else:
        searched = (
            "Fishtest's SPSA with every c_end and r_end of the block multiplied, and the "
            "games budget multiplied; Autoselect at the given games for comparison."
        )
        cheapest = "(fewest games; Autoselect included)"
    return [
        "## 4. Better settings",
        "",
        f"{searched} Every setting "
        "plays the same instances with the same random numbers, so *Δ vs given* is a paired "
        "difference (mean and 95% CI over instances). The recommendation is the cheapest "
        f"setting {cheapest} whose expected gain is within "
        f"**{margin:g} Elo** of the best one (--margin) and whose P(gain > 0) is at least "
        "the lower end of the 95% interval of the given setting's (no riskier than the "
        "tune as given, beyond that estimate's own uncertainty).",
        "",
        "| setting | expected gain [95% CI] | P(gain > 0) | Δ vs given [95% CI] | |",
        "|---|---|---|---|---|",
        *lines,
        "",
        *_recommendation(ds, table),
        *(["", *autoselect] if (autoselect := _autoselect(ds, table)) else []),
    ]


def _recommendation(ds: xr.Dataset, table: pd.DataFrame) -> list[str]:
    given, chosen = str(ds.attrs["given_run"]), str(ds.attrs["recommended_run"])
    row = table.set_index("run").loc[chosen]
    search = table[table["arm"] != AUTOSELECT]
    best = str(search.loc[search["mean"].idxmax(), "run"])
    lines = [
        f"**Recommended: {setting_text(ds, chosen)}**: expected gain {_elo(row['mean'])} Elo "
        f"{_ci(row['low'], row['high'])}, P(gain > 0) {_share(row['p_gain'])}."
    ]
    if chosen == given:
        lines[0] += " That is the tune as given: no setting of the search does better by more "
        lines[0] += "than the margin at fewer or equal games."
    else:
        lines[0] += (
            f" Against the given setting: {_elo(row['diff'][0])} Elo {_ci(*row['diff'][1:])} "
            "(paired)."
        )
    if best != chosen:
        diff = stats.t_interval(final_gain(ds, chosen) - final_gain(ds, best), LEVEL)
        lines[0] += (
            f" The best setting, {setting_text(ds, best)}, gains "
            f"{_elo(-diff[0])} Elo more {_ci(-diff[2], -diff[1])} (paired)."
        )
    block = _block(ds)
    if str(ds["arm"].sel(run=chosen).values) == AUTOSELECT:
        return [
            *lines,
            "",
            f"Tick Autoselect on Fishtest's SPSA form with {int(row['games']):,} games and "
            "paste the block as given (Autoselect sets c_end and r_end itself):",
            "",
            *code_block(block.to_text().rstrip("\n")),
        ]
    scaled = scaled_block(
        block, float(ds["c_scale"].sel(run=chosen)), float(ds["r_scale"].sel(run=chosen))
    )
    games = int(row["games"])
    where = f"with {games:,} games"
    if _openbench(ds):
        where = (
            f"in OpenBench's tune form with Iterations {_iterations(ds, games):,} and "
            f"Pairs-Per {int(ds.attrs['openbench_pairs_per'])} ({games:,} games), the other "
            "settings as given"
        )
    return [
        *lines,
        "",
        f"The block to paste for it, {where}:",
        "",
        *code_block(scaled.to_text().rstrip("\n")),
    ]


def _autoselect(ds: xr.Dataset, table: pd.DataFrame) -> list[str]:
    run = str(ds.attrs["autoselect_run"])
    if run == "none":  # an OpenBench plan: OpenBench has no Autoselect
        return []
    row = table.set_index("run").loc[run]
    return [
        f"*Autoselect* (Fishtest's checkbox: constant gains A = α = γ = 0, c_end = range/6, "
        f"r = {float(ds.attrs['autoselect_r']):.5f} from its 0.5 Elo precision and the "
        f"{ds.attrs['time_control']} draw ratio {float(ds.attrs['autoselect_draw_ratio']):.3f}) "
        f"would ask for **{int(ds.attrs['autoselect_games']):,} games**; at the given "
        f"{int(row['games']):,} it gains {_elo(row['mean'])} Elo {_ci(row['low'], row['high'])}."
    ]


def similar_section(ds: xr.Dataset, records=None) -> list[str]:
    """The :data:`~spsa_bench.plan.similar.SHOWN` corpus tunes most like this plan and
    what happened to them (:mod:`spsa_bench.plan.similar`); ``records``: the packaged
    corpus by default."""
    from spsa_bench.corpus.load import load_corpus
    from spsa_bench.corpus.records import CorpusError
    from spsa_bench.plan import similar

    title = "## 5. Similar real tunes (the corpus: facts about other tunes, not predictions)"
    try:
        records = load_corpus() if records is None else records
    except CorpusError as error:
        return [title, "", f"The corpus could not be read: {markdown_text(str(error))}"]
    games, tc = int(ds.attrs["games_given"]), str(ds.attrs["time_control"])
    matches = similar.most_similar(records, len(_block(ds)), games, tc)
    table = similar.rows(matches)
    if not table:
        return [title, "", "The corpus holds no tunes."]
    columns = list(table[0])
    return [
        title,
        "",
        f"The {len(matches)} of the corpus's {len(records)} Stockfish tunes closest to this "
        f"one ({_count(len(_block(ds)), 'parameter')}, {games:,} games, {tc}) by d = |ln(P/P_t)| + "
        "|ln(G/G_t)| + |ln(B/B_t)| over parameters P, games G and base time B of the time "
        "control, an unknown term counted as ln 4 (docs/plan.md). Their records, with "
        "every number's source and whether it is quoted or inferred: `spsa-bench tunes "
        "show NAME`. *median |move|*: of |final − start| / c_end over the block's "
        "parameters (unknown without the block); *verification*: as quoted (± its error), "
        "~ the logistic Elo of the quoted W/L/D."
        + (
            " They are Fishtest tunes of Stockfish (the corpus holds no OpenBench tune), "
            "matched on size, games and time control only."
            if _openbench(ds)
            else ""
        ),
        "",
        "| " + " | ".join(markdown_text(c) for c in columns) + " |",
        "|" + "---|" * len(columns),
        *("| " + " | ".join(markdown_text(row[c]) for c in columns) + " |" for row in table),
    ]


def files_section(ds: xr.Dataset) -> list[str]:
    skipped = str(ds.attrs["skipped_budgets"])
    lines = [
        "## Files",
        "",
        "`plan.nc`: every run's trajectory (θ and gain at each checkpoint), the measured "
        "rounding shares and every instance; `plan.png`: the gain distribution of the given "
        "and the recommended settings and the expected gain against games played.",
    ]
    if skipped != "none":
        lines += ["", f"Budgets left out of the search: {skipped}."]
    return lines


def plan_markdown(ds: xr.Dataset) -> str:
    """The whole of ``plan.md``."""
    sections = (
        header,
        prior_section,
        outcome_section,
        parameter_section,
        noise_floor_section,
        settings_section,
        similar_section,
        files_section,
    )
    lines = []
    for section in sections:
        lines += [*section(ds), ""]
    return "\n".join(lines)
