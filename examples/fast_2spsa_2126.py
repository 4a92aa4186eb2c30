"""Fast 2SPSA at Fishtest's noise (fishtest #2126): spsa against spsa-2, paired by seed.

Every arm replays the same prepared problem (engine.simulate.prepare: the scenario's
instances, the batch mode's schedule, the worker's rounding, the flips and the match
draws of each seed), so the differences are paired (common random numbers). spsa-2
plays its Hessian match inside each job's pairs (hessian_share of them), so every arm
spends the same pairs. Only the game noise changes between the noise levels: every
model gives the same expected score at every Elo difference (docs/noise.md), so a
level is the per-pair variance at equal strength, 2 sigma2.

    python examples/fast_2spsa_2126.py --seeds 0-39 > fast_2spsa.md

prints a Markdown table: the mean final true Elo loss per arm and noise level, and
each spsa-2 arm's paired difference to spsa with its 95% interval
(mean +- 1.96 sd / sqrt(n) over seeds; negative: spsa-2 ends closer to the optimum).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time

import numpy as np

from spsa_bench.config.loader import load_config
from spsa_bench.config.records import OptimizerArm
from spsa_bench.engine.simulate import prepare
from spsa_bench.model.noise import noise_model
from spsa_bench.optimizers.second_order import Spsa2Hyper

#: Noise levels: Fishtest's STC, then members of the calibrated family with less
#: per-pair variance (sigma2 = var(pair net)/2 at equal strength; sigma2 >= 1 - draw).
NOISE = {"STC": "STC"}
for _scale in (2, 4, 16, 100):  # sigma2 / scale, nearly uncorrelated pairs (rho = 0.005)
    _sigma2 = round(0.2654 / _scale, 6)
    NOISE[f"STC/{_scale}"] = {"draw_rate": round(1.0 - _sigma2 / 1.005, 6), "sigma2": _sigma2}
#: spsa-2 arms: (name, hyperparameters changed from Spsa2Hyper's defaults)
SPSA2 = {
    "spsa-2 d=1e-4": {"curvature_floor": 1e-4},
    "spsa-2 d=3e-4": {"curvature_floor": 3e-4},
    "spsa-2 d=1e-3": {"curvature_floor": 1e-3},
    "spsa-2 d=3e-4 share=0.25": {"curvature_floor": 3e-4, "hessian_share": 0.25},
}


def seeds_of(text: str) -> list[int]:
    first, _, last = text.partition("-")
    return list(range(int(first), int(last or first) + 1))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="config/config.yaml")
    parser.add_argument("--scenario", default="tune-16-stc")
    parser.add_argument("--batch-mode", default="sync")
    parser.add_argument("--seeds", default="0-39")
    parser.add_argument("--noise", nargs="*", default=list(NOISE), choices=list(NOISE))
    args = parser.parse_args(argv)
    config = load_config(args.config)
    seeds = seeds_of(args.seeds)
    base = prepare(config, args.scenario, config.batch_mode(args.batch_mode), seeds)
    spsa = config.optimizer("spsa")
    arms = [spsa]  # the configured arm (Fishtest's gains as the benchmark sets them)
    for scale in (3.0, 10.0):  # its gain three and ten times larger
        hyper = dataclasses.replace(spsa.hyper, r_scale=scale)
        arms.append(OptimizerArm(f"spsa r_scale={scale:g}", "spsa", hyper))
    arms += [
        OptimizerArm(name, "spsa-2", dataclasses.replace(Spsa2Hyper(), **changes))
        for name, changes in SPSA2.items()
    ]
    print(
        f"# spsa vs spsa-2: {args.scenario}, {args.batch_mode}, {config.num_pairs} pairs, "
        f"seeds {args.seeds} ({len(seeds)}), start gap "
        f"{np.mean(base.problem.bowl.elo_loss(np.tile(base.problem.view.theta_start, (len(seeds), 1)))):.3f} Elo\n"
    )
    print("| noise | 2 sigma2 | arm | final Elo loss | vs spsa [95% CI] |")
    print("|---|---|---|---|---|")
    for level in args.noise:
        setup = dataclasses.replace(base, noise=noise_model(NOISE[level]))
        losses = {}
        for arm in arms:
            started = time.monotonic()
            run = setup.replay(arm)
            losses[arm.name] = base.problem.bowl.elo_loss(run.theta[:, -1])
            print(f"{level} {arm.name}: {time.monotonic() - started:.1f} s", file=sys.stderr)
        reference = losses[arms[0].name]
        variance = (
            2.0 * setup.noise.probabilities(np.zeros(1))[0] @ np.array([4.0, 1.0, 0.0, 1.0, 4.0])
        )
        for name, loss in losses.items():
            cell = ""
            if name != arms[0].name:
                d = loss - reference
                half = 1.96 * d.std(ddof=1) / np.sqrt(d.size)
                cell = f"{d.mean():+.3f} [{d.mean() - half:+.3f}, {d.mean() + half:+.3f}]"
            print(
                f"| {level} | {variance:.4f} | {name} | {loss.mean():.3f} "
                f"± {1.96 * loss.std(ddof=1) / np.sqrt(loss.size):.3f} | {cell} |"
            )
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
