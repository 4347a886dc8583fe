"""A training window's `boundaries` (issue #79): the boundary id after each of its words (decode/boundary.py) for a
model that reads them (`model: {boundary_input: true}`), from its data directory's speaker turns and word times.

So that "no turn known" and "no time known" stay values the network reads (a model used on plain text, or on
turns without times, loses nothing), each training stream's speakers and its times are each dropped at random
for a pass (`train.boundary_dropout: {turns: P, times: P}`), the draw a function of the seed, the pass and the
stream. Validation reads everything its data directory says.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np

from punctkit.data.boundaries import stream_boundaries
from punctkit.data.streams import Stream
from punctkit.files import PunctkitError

DROP_KEYS = ("turns", "times")


def reads_boundaries(model_conf: dict[str, Any]) -> bool:
    """Whether a config's model reads the boundary after each word (`boundary_input: true`)."""
    return bool(model_conf.get("boundary_input"))


@dataclass(frozen=True)
class BoundaryDropout:
    """`train.boundary_dropout`: the probability that a training stream's speakers (`turns`), and that its word
    times (`times`), are dropped for a pass."""

    turns: float
    times: float

    @classmethod
    def from_option(cls, value: Any, where: str = "train.boundary_dropout") -> "BoundaryDropout":
        """The option's value checked (a one-line error naming what to write)."""
        ok = isinstance(value, dict) and set(value) <= set(DROP_KEYS)
        probs = [value.get(k, 0.0) if ok else None for k in DROP_KEYS]
        if not ok or not all(isinstance(p, (int, float)) and not isinstance(p, bool) and 0 <= p <= 1 for p in probs):
            raise PunctkitError(f"{where}: expected {{turns: PROBABILITY 0..1, times: PROBABILITY 0..1}}, "
                                f"got {value!r}")
        return cls(float(probs[0]), float(probs[1]))

    def drops(self, seed: int, epoch: int, stream: int) -> tuple[bool, bool]:
        """Whether stream number `stream` loses its turns, and its times, in pass `epoch` of a run seeded `seed`."""
        rng = random.Random(f"boundary-dropout {seed} {epoch} {stream}")
        return rng.random() < self.turns, rng.random() < self.times


class BoundaryInput:
    """Per stream of a dataset (by index), the boundary ids of its words (`stream_boundaries`); with `dropout`,
    those of the stream with its turns and/or times dropped for the dataset's pass (`epoch()`), seeded by `seed`.
    Each stream's ids are computed once per variant. `window_boundaries(BoundaryInput(...))` (data/boundaries.py) is
    the `Extra` that gives each window its words' ids, as decoding's ids give them."""

    def __init__(self, streams: list[Stream], dropout: BoundaryDropout | None = None, seed: int = 0,
                 epoch: Callable[[], int] = lambda: 0) -> None:
        self.streams, self.dropout, self.seed, self.epoch = streams, dropout, seed, epoch
        self.cache: dict[tuple[int, bool, bool], np.ndarray] = {}

    def ids(self, k: int) -> np.ndarray:
        """The boundary ids of stream number `k` as this pass reads them."""
        turns, times = self.dropout.drops(self.seed, self.epoch(), k) if self.dropout is not None else (False, False)
        key = (k, turns, times)
        if key not in self.cache:
            s = self.streams[k]
            kept = replace(s, speakers=None if turns else s.speakers, times=None if times else s.times)
            self.cache[key] = np.asarray(stream_boundaries(kept), dtype=np.int64)
        return self.cache[key]

    def __getitem__(self, k: int) -> np.ndarray:
        return self.ids(k)

    def __len__(self) -> int:
        return len(self.streams)
