"""A model's use of the boundary ids (data/boundaries.py: per word, a speaker turn change and the pause after it):
`BoundaryFusion`, learned on training text with turns and times (recipes/ted local/fit_boundary.py) and packed
beside the network (`boundary.json`): per boundary id, a scale of the network's log-probabilities and a bias per
mark,

    log p'(label) = max(1 + weight * (scale[b] - 1), MIN_SCALE) * log p(label) + weight * bias[b, mark(label)]

with `weight` chosen on valid: a cue, not a rule. Boundary id 0 is the network alone (scale 1, bias 0), so an
input without speakers or times is labelled exactly as without the fusion.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from punctkit.data.boundaries import N_BOUNDARIES, NOTHING, PAUSE_EDGES
from punctkit.data.labels import LabelSet, mark_of
from punctkit.files import PunctkitError

# ---------------------------------------------------------------- the fusion

MAX_ABS = 50.0  # bound on a packed scale or bias (a package is data: checked on reading)
MIN_SCALE = 0.05  # the least a weighted scale of the network's log-probabilities may be


@dataclass(frozen=True)
class BoundaryFusion:
    """A model's use of the boundary ids (see the module's docstring): `scale` (N_BOUNDARIES,), `bias`
    (N_BOUNDARIES x marks, the columns named by `marks`), `weight` (valid's choice)."""

    marks: tuple[str, ...]
    scale: np.ndarray
    bias: np.ndarray
    weight: float = 1.0

    def __post_init__(self) -> None:
        if self.scale.shape != (N_BOUNDARIES,) or self.bias.shape != (N_BOUNDARIES, len(self.marks)):
            raise PunctkitError(f"boundary fusion: scale {self.scale.shape} and bias {self.bias.shape} do not fit "
                                f"{N_BOUNDARIES} boundaries x {len(self.marks)} marks")
        if not (np.all(np.isfinite(self.scale)) and np.all(np.isfinite(self.bias)) and math.isfinite(self.weight)):
            raise PunctkitError("boundary fusion: a value is not finite")
        if np.abs(self.scale).max() > MAX_ABS or np.abs(self.bias).max(initial=0) > MAX_ABS \
                or not 0 <= self.weight <= MAX_ABS:
            raise PunctkitError(f"boundary fusion: a value beyond +-{MAX_ABS}")

    @classmethod
    def identity(cls, marks: Sequence[str]) -> "BoundaryFusion":
        return cls(tuple(marks), np.ones(N_BOUNDARIES), np.zeros((N_BOUNDARIES, len(marks))), 1.0)

    def with_weight(self, weight: float) -> "BoundaryFusion":
        return BoundaryFusion(self.marks, self.scale, self.bias, float(weight))

    def columns(self, inventory: LabelSet) -> np.ndarray:
        """Per label of `inventory`: the column of its mark in `bias` (a mark it lacks: an error)."""
        try:
            return np.array([self.marks.index(mark_of(lab)) for lab in inventory.labels])
        except ValueError:
            raise PunctkitError(f"boundary fusion: its marks ({', '.join(self.marks)}) do not cover the inventory "
                                f"{inventory.name}") from None

    def apply(self, rows: np.ndarray, ids: Sequence[int], inventory: LabelSet) -> np.ndarray:
        """`rows` (words x labels, probabilities) fused with the words' boundary ids; rows whose id is NOTHING are
        returned as they are (the same numbers, not recomputed)."""
        ids_a = np.asarray(ids, dtype=np.int64)
        known = ids_a != NOTHING
        if rows.shape[0] == 0 or not known.any():
            return rows
        out = np.array(rows, dtype=np.float64, copy=True)
        sub = ids_a[known]
        scale = np.maximum(1 + self.weight * (self.scale[sub] - 1), MIN_SCALE)  # a weight past 1 never inverts
        logp = np.log(np.maximum(out[known], 1e-12)) * scale[:, None]
        logp += self.weight * self.bias[sub][:, self.columns(inventory)]
        logp -= logp.max(axis=1, keepdims=True)
        p = np.exp(logp)
        out[known] = p / p.sum(axis=1, keepdims=True)
        return out.astype(rows.dtype, copy=False)

    # ---- as data in a package
    def to_dict(self) -> dict[str, Any]:
        return {"format": 1, "pause_edges": list(PAUSE_EDGES), "marks": list(self.marks),
                "scale": [round(float(x), 6) for x in self.scale],
                "bias": [[round(float(x), 6) for x in r] for r in self.bias], "weight": float(self.weight)}

    @classmethod
    def from_dict(cls, d: Any, where: str = "boundary.json") -> "BoundaryFusion":
        """A fusion read from a package's data, every field checked (a package is data, never trusted)."""
        try:
            if not isinstance(d, dict) or d.get("format") != 1:
                raise ValueError("not a format-1 boundary fusion")
            if [float(x) for x in d["pause_edges"]] != list(PAUSE_EDGES):
                raise ValueError(f"pause edges {d['pause_edges']} are not this punctkit's {list(PAUSE_EDGES)}")
            marks = d["marks"]
            if not (isinstance(marks, list) and marks and all(isinstance(m, str) and len(m) < 32 for m in marks)):
                raise ValueError("marks must be a list of names")
            scale = np.array(d["scale"], dtype=np.float64)
            bias = np.array(d["bias"], dtype=np.float64)
            weight = float(d["weight"])
        except (KeyError, TypeError, ValueError) as e:
            raise PunctkitError(f"{where}: {e}") from None
        try:
            return cls(tuple(marks), scale, bias, weight)
        except PunctkitError as e:
            raise PunctkitError(f"{where}: {e}") from None
