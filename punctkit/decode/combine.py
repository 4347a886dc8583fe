"""Combining models' per-word label distributions: the weights, the inventory check and the
weighted average, shared by `punctkit decode EXP1 EXP2 ...` (decoder.py) and the packed
ensembles of punctkit/infer/scorers.py."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from punctkit.data.labels import LabelSet
from punctkit.files import PunctkitError


def parse_weights(spec: str | Sequence[float] | None, n: int, source: str = "--weights") -> list[float]:
    """`n` non-negative weights summing to 1, from `0.6,0.4` or a list (None: equal weights)."""
    if spec is None:
        return [1.0 / n] * n
    try:
        w = [float(x) for x in spec.split(",")] if isinstance(spec, str) else [float(x) for x in spec]
    except ValueError:
        raise PunctkitError(f"{source} '{spec}': give one number per model, e.g. 0.6,0.4") from None
    if len(w) != n:
        raise PunctkitError(f"{source}: {len(w)} weights for {n} models; give one per model")
    if any(not np.isfinite(x) or x < 0 for x in w) or sum(w) <= 0:
        raise PunctkitError(f"{source}: weights must be non-negative numbers, not all 0 (got {spec})")
    total = sum(w)
    return [x / total for x in w]


def check_inventories(names: Sequence[str], inventories: Sequence[LabelSet]) -> None:
    """A one-line error naming two models whose label inventories differ."""
    for name, inv in zip(names[1:], inventories[1:]):
        if inv.name != inventories[0].name:
            raise PunctkitError(f"{names[0]} (inventory {inventories[0].name}) and {name} (inventory {inv.name}) "
                                f"label different marks: the models of an ensemble must share one inventory")


def combine(rows: Sequence[np.ndarray], weights: Sequence[float]) -> np.ndarray:
    """The weighted average of the members' words x labels distributions."""
    out = np.zeros_like(np.asarray(rows[0], dtype=np.float64))
    for r, w in zip(rows, weights):
        out += w * np.asarray(r, dtype=np.float64)
    return out
