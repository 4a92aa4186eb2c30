"""``spsa-bench noise``: what a noise model does at given Elo advantages.

For each Elo advantage of the hero: the five pair-outcome probabilities, the
expected per-game score, the per-game draw rate, sigma2 = var(pair net wins) / 2
and the within-pair correlation of the two games' results.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

from spsa_bench.model.noise import OUTCOMES, PRESETS
from spsa_bench.model.pentanomial import MAX_OPPONENT_ELO as CLIP_ELO


def add_parser(sub) -> None:
    p = sub.add_parser(
        "noise",
        help="print a game-noise model's outcome probabilities, score, draw rate, sigma2 "
        "and within-pair correlation at given Elo advantages",
        description="Print what a game-pair noise model does at the hero's Elo advantages.",
    )
    p.add_argument(
        "--time-control",
        choices=["vendored", *PRESETS],
        default=None,
        help="a preset calibrated to real Fishtest tunes (STC, LTC, VLTC) or the spec's "
        "vendored model (default: LTC unless --draw-rate/--sigma2 are given)",
    )
    p.add_argument("--draw-rate", type=float, help="custom per-game draw rate at equal strength")
    p.add_argument("--sigma2", type=float, help="custom var(pair net wins) / 2 at equal strength")
    p.add_argument(
        "--elo",
        type=float,
        nargs="+",
        default=[0.0, 5.0, 20.0],
        help="the hero's Elo advantages (default: 0 5 20); clipped to +-599",
    )
    p.add_argument("--json", action="store_true", help="print a JSON list of objects instead")
    p.set_defaults(func=run)


def _model(args: argparse.Namespace):
    from spsa_bench.model.noise import noise_model

    custom = (args.draw_rate, args.sigma2)
    if any(value is not None for value in custom):
        if args.time_control is not None:
            raise ValueError("--time-control and --draw-rate/--sigma2 exclude each other")
        if None in custom:
            raise ValueError("--draw-rate and --sigma2 go together")
        return noise_model({"draw_rate": args.draw_rate, "sigma2": args.sigma2})
    return noise_model(args.time_control or "LTC")


def run(args: argparse.Namespace) -> int:
    from spsa_bench.model.noise import NoiseError

    bad = [value for value in args.elo if not math.isfinite(value)]
    try:
        if bad:
            raise ValueError(f"--elo {bad[0]}: must be a finite number")
        model = _model(args)
    except (ValueError, NoiseError) as error:  # bad input: one line, exit 2
        print(f"spsa-bench noise: {error}", file=sys.stderr)
        return 2
    rows = model.summary(args.elo)
    for row in rows:  # the Elo the model was evaluated at (its grid ends at +-599)
        row["modelled_elo"] = max(-CLIP_ELO, min(CLIP_ELO, float(row["elo"])))
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    head = "  ".join(f"{name:>7}" for name in OUTCOMES)
    print(f"noise model: {model.name}" + _described(model))
    print(f"{'elo':>8}  {head}  {'score':>8}  {'draws':>7}  {'sigma2':>7}  {'rho':>7}")
    clipped = False
    for row in rows:
        probs = "  ".join(f"{row['probabilities'][name]:7.4f}" for name in OUTCOMES)
        mark = "*" if row["modelled_elo"] != row["elo"] else " "
        clipped |= mark == "*"
        print(
            f"{row['elo']:8.2f}{mark} {probs}  {row['score']:8.5f}  {row['draw_rate']:7.4f}  "
            f"{row['sigma2']:7.4f}  {row['correlation']:+7.4f}"
        )
    if clipped:
        print(f"* beyond +-{CLIP_ELO:g} Elo: the model at +-{CLIP_ELO:g}, where its grid ends")
    return 0


def _described(model) -> str:
    if model.vendored:
        return " (spec 000 pentanomial: ±100 cp book exit, logistic a = 100, b = 22)"
    delta, tau = model.parameters
    return (
        f" (draw rate {model.draw_rate}, sigma2 {model.sigma2} at equal strength; "
        f"draw margin {delta:.4f}, pair scale {tau:.4f} logistic units)"
    )
