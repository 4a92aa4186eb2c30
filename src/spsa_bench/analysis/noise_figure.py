"""The noise-model figure: pair-outcome probabilities and the per-game draw rate
against the hero's Elo advantage, one line per noise model.

Built on :class:`matplotlib.figure.Figure` directly (no pyplot), so importing or
calling it never changes the caller's matplotlib backend.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure

from spsa_bench.model.noise import OUTCOMES, NoiseModel

#: Line colours per model (colour-blind safe, Okabe-Ito).
_COLOURS = ("#000000", "#E69F00", "#0072B2", "#009E73", "#CC79A7", "#D55E00", "#56B4E9")
_PANELS = (*OUTCOMES, "draw rate per game")


def noise_figure(models: Sequence[NoiseModel], max_elo: float = 200.0) -> Figure:
    """Six panels (LL, DL, DD, WD, WW, draw rate) over hero advantages in ±``max_elo``."""
    hero = np.linspace(-max_elo, max_elo, 401)
    fig = Figure(figsize=(10.5, 6.0), layout="constrained")
    axes = fig.subplots(2, 3, sharex=True)
    for index, model in enumerate(models):
        probs = model.probabilities(-hero)
        curves = [probs[:, j] for j in range(5)] + [model.draw_rate_per_game(-hero)]
        label = _label(model)
        for ax, curve in zip(axes.flat, curves, strict=True):
            ax.plot(hero, curve, color=_COLOURS[index % len(_COLOURS)], lw=1.6, label=label)
    for ax, title in zip(axes.flat, _PANELS, strict=True):
        ax.set_title(title if title not in OUTCOMES else f"P({title})", fontsize=10)
        ax.grid(True, color="0.9")
        ax.set_ylim(bottom=0)
    for ax in axes[1]:
        ax.set_xlabel("Elo advantage of the hero")
    axes[0, 0].legend(fontsize=8, frameon=False)
    fig.suptitle(
        "Game-pair noise models: every model gives the per-game score 1/(1+10^(-x/400))",
        fontsize=11,
    )
    return fig


def _label(model: NoiseModel) -> str:
    if model.vendored:
        return "vendored (spec 000)"
    return f"{model.name}: draws {model.draw_rate:.3f}, σ² {model.sigma2:.4f}"
