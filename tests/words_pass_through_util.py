"""Helpers of tests/contracts/test_words_pass_through.py that other tests use too: FakeModel."""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field, replace
from types import SimpleNamespace

import numpy as np

from punctkit.data.labels import LabelSet, get_inventory
from punctkit.decode.options import DecodeOptions
from punctkit.decode.windows import Hypothesis, WindowPrediction
from punctkit.infer.engine import Engine


@dataclass
class FakeScorer:
    """A scorer whose label for each word is a fixed function of the word (every label of its inventory occurs),
    with one-hot probability rows: the one engine (`Engine`) decides and writes as it does for a model."""

    inventory: LabelSet
    frontend: SimpleNamespace = field(default_factory=lambda: SimpleNamespace(
        case_lexicon=None, case_prior=None, unk_id=0, split_contractions=False, word_ids=lambda w: [1]))
    options: DecodeOptions = field(default_factory=lambda: DecodeOptions(window=1, step=1))
    backend: str = "fake"
    card: dict = field(default_factory=dict)
    uses_boundaries: bool = False

    def model_width(self, word: str) -> int:
        return 1

    def with_options(self, **changes) -> "FakeScorer":
        return replace(self, options=replace(self.options, **changes))

    def streamable(self):
        raise NotImplementedError

    def distributions(self, streams, extra=None, boundaries=None) -> list[WindowPrediction]:
        n = len(self.inventory.labels)
        out = []
        for s in streams:
            ids = [zlib.crc32(w.encode("utf-8", "surrogatepass")) % n for w in s.words]
            out.append(WindowPrediction([Hypothesis(ids, 0.0)], np.eye(n, dtype=np.float32)[ids]))
        return out


def FakeModel(inventory: str) -> Engine:  # noqa: N802 (built like a class, as it was)
    """The engine over a `FakeScorer` of `inventory`'s labels."""
    return Engine(scorer=FakeScorer(get_inventory(inventory)), chunk_words=1000)
