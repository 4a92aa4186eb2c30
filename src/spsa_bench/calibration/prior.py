"""The prior family the calibration fits: a few free numbers of a tune scenario's truth.

A member of the family is a ``truth`` mapping (:class:`~spsa_bench.model.instances.TruthPrior`,
docs/fishtest.md "Landscape options") made of the section's fixed part and a value for
each free number, a dotted key of the mapping (:data:`FREE_KEYS`), e.g.::

    fixed: {inactive_fraction: 0.25, plateau: {width: 1}}
    free:  {elo_at_stake.median: [0.5, 20, log], offset.scale: [0.5, 4, log]}

The hyper-prior (what the fit starts from) draws each free number independently,
uniform on ``[low, high]`` or, for a ``log`` range, log-uniform
(``exp(U(log low, log high))``). The draws come from one stream,
``SeedSequence(entropy, spawn_key=(DRAWS_KEY,))``, so they depend only on the entropy
and the number of draws.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from spsa_bench.config.sections.calibration import FREE_KEYS, with_value
from spsa_bench.model.instances import TruthPrior

#: The spawn key of the hyper-prior draws (apart from every seed's streams).
DRAWS_KEY = 0xCA1B


@dataclasses.dataclass(frozen=True)
class FreeNumber:
    key: str
    low: float
    high: float
    log: bool = False

    def draw(self, u: np.ndarray) -> np.ndarray:
        """The values at uniforms ``u`` in [0, 1)."""
        if self.log:
            return np.exp(math.log(self.low) + u * (math.log(self.high) - math.log(self.low)))
        return self.low + u * (self.high - self.low)


@dataclasses.dataclass(frozen=True)
class PriorFamily:
    """The fixed part of the truth and the free numbers (module docstring)."""

    fixed: dict
    free: tuple[FreeNumber, ...]

    @classmethod
    def of_section(cls, section) -> PriorFamily:
        """The family of a parsed ``calibration`` section."""
        return cls(dict(section.fixed), tuple(FreeNumber(*f) for f in section.free))

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(f.key for f in self.free)

    def truth(self, values) -> dict:
        """The ``truth`` mapping with the free numbers at ``values`` (in :attr:`keys` order)."""
        out = self.fixed
        for number, value in zip(self.free, values, strict=True):
            out = with_value(out, number.key, value)
        return out

    def prior(self, values) -> TruthPrior:
        return TruthPrior.from_mapping(self.truth(values))

    def draws(self, entropy: int, count: int) -> np.ndarray:
        """``count`` draws of the hyper-prior, ``(draw, free number)``."""
        rng = np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=(DRAWS_KEY,)))
        u = rng.random((count, len(self.free)))
        return np.stack([f.draw(u[:, i]) for i, f in enumerate(self.free)], axis=1)


__all__ = ["DRAWS_KEY", "FREE_KEYS", "FreeNumber", "PriorFamily"]
