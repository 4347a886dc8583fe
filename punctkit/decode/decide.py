"""The decision: the label ids of consecutive words of a stream from their distributions, the one place a
label is chosen (the engine's labelling and streaming, training's validation, the look-ahead sweep).

Marks and case together, left to right (decode/joint.py); each mark the input forces kept; the stream's first
word begins a sentence and its last ends one, unless the decode option `stream_end` leaves streams open
(decode/stream_end.py)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from punctkit.data.labels import LabelSet
from punctkit.decode.joint import JointDecision
from punctkit.decode.stream_end import close_ids

Forced = list[str | None]  # per word: the mark the input forces on it (--keep-input-marks), or None (predicted)


@dataclass(frozen=True)
class Decision:
    """How one model (or ensemble) decides: its inventory, its joint decision of marks and case (`joint`;
    disabled: each word's arg-max, or the search's own ids) and whether a stream's ends close (`closes`)."""

    inventory: LabelSet
    joint: JointDecision
    closes: bool

    @classmethod
    def argmax(cls, inventory: LabelSet, closes: bool) -> "Decision":
        """The search's own ids (each word's arg-max), the stream's ends closed when `closes`: what training's
        validation and the look-ahead sweep decide with."""
        return cls(inventory, JointDecision(inventory, enabled=False), closes)

    def decide(self, rows: np.ndarray, words: list[str], *, forced: Forced | None = None,
               best: list[int] | None = None, prev: int | None = None, first: bool = True, last: bool = True,
               next_row: np.ndarray | None = None, next_word: str | None = None) -> list[int]:
        """The label ids of consecutive words of a stream, from their distributions (`rows`): marks and case
        together, left to right (decode/joint.py: `prev`, the label id before these; `next_row`/`next_word`,
        the word after them when the stream goes on; `best`, the search's own ids where the rules do not
        apply); each `forced` mark kept; the stream's first word (`first`: these begin the stream) begins a
        sentence and its last (`last`: these end it) ends one, unless `closes` is off (decode/stream_end.py)."""
        inv, closes = self.inventory, self.closes
        ids = self.joint.decide(rows, words, forced=forced, prev=prev, best=best, opens=first and closes,
                                next_row=next_row, next_word=next_word)
        if forced is not None:
            ids = [i if mk is None else inv.index(inv.relabel(inv.labels[i], mk)) for i, mk in zip(ids, forced)]
        return close_ids(ids, rows, inv, forced, closes=closes, opens=first, ends=last)
