"""The end of a stream ends a sentence: the stream's last word, when the model gave it no
sentence-final mark (a window cut at the stream's end has no right context to show one), takes
the sentence-final mark its distribution ranks highest, its case class kept. A mark the input
fixed (--keep-input-marks) is kept as it is.

Whether it does is the decode option `stream_end` (DecodeOptions.closes_streams; `open` for
chunks cut anywhere): `close_ids` and `close_stream` take it as `closes`, a required keyword, so
that no path of decode, validation or punctuate can close a stream the options leave open."""
from __future__ import annotations

import numpy as np

from punctkit.data.labels import SENTENCE_END, LabelSet, mark_of


def closing_label(label: str, row: np.ndarray, inventory: LabelSet) -> str:
    """The label of a stream's last word: `label` when its mark ends a sentence, else `label` with
    the sentence-final mark of most probability mass in `row` (inventory order; the first on a tie)."""
    finals = [m for m in inventory.marks if m in SENTENCE_END]
    if mark_of(label) in SENTENCE_END or not finals:
        return label
    marks = [mark_of(lab) for lab in inventory.labels]
    mass = {m: float(sum(p for p, x in zip(row, marks) if x == m)) for m in finals}
    return inventory.relabel(label, max(finals, key=lambda m: mass[m]))


def close_ids(ids: list[int], rows: np.ndarray, inventory: LabelSet, *, closes: bool) -> list[int]:
    """Label ids of a whole stream (rows: its distributions) with its last word's label closed
    when `closes` (the decode option), else as they are."""
    if not ids or not closes:
        return ids
    return ids[:-1] + [inventory.index(closing_label(inventory.labels[ids[-1]], rows[-1], inventory))]


def close_stream(labels: list[str], rows: np.ndarray, inventory: LabelSet, fixed: list[str | None] | None = None,
                 *, closes: bool) -> list[str]:
    """`labels` of a whole stream with its last word's label closed (`closing_label`) when `closes`
    (the decode option), unless the input fixed that word's mark."""
    if not labels or not closes or (fixed is not None and fixed[-1] is not None):
        return labels
    return labels[:-1] + [closing_label(labels[-1], rows[-1], inventory)]
