"""A stream is whole sentences: its end ends one and its start begins one.

- The stream's last word, when the model gave it no sentence-final mark (a window cut at the
  stream's end has no right context to show one), takes the sentence-final mark its distribution
  ranks highest, its case class kept. A mark the input fixed (--keep-input-marks) is kept as it is.
- The stream's first word, when a case-aware model gave it lower case (a window at the stream's
  start has no left context to show a sentence start: "the NASA team met ..."), is capitalised
  (C; U in Faber's case4), its mark kept. Case the model gave inside the stream is its own:
  valid chose the model's case over capitals ruled by the predicted marks (RESULTS.md, recipes/ted).

Whether it does is the decode option `stream_end` (DecodeOptions.closes_streams; `open` for
chunks cut anywhere, which neither end nor begin sentences): `close_ids`, the one function that
applies the rule (the engine's decision `Engine.decide`, training's validation, the look-ahead sweep),
takes it as `closes`, a required keyword, so that no path can close a stream the options leave open."""
from __future__ import annotations

import numpy as np

from punctkit.data.labels import SENTENCE_END, LabelSet, case_of, mark_of


def closing_label(label: str, row: np.ndarray, inventory: LabelSet) -> str:
    """The label of a stream's last word: `label` when its mark ends a sentence, else `label` with
    the sentence-final mark of most probability mass in `row` (inventory order; the first on a tie)."""
    finals = [m for m in inventory.marks if m in SENTENCE_END]
    if mark_of(label) in SENTENCE_END or not finals:
        return label
    marks = [mark_of(lab) for lab in inventory.labels]
    mass = {m: float(sum(p for p, x in zip(row, marks) if x == m)) for m in finals}
    return inventory.relabel(label, max(finals, key=lambda m: mass[m]))


def opening_label(label: str, inventory: LabelSet) -> str:
    """The label of a stream's first word: capitalised (`LabelSet.make`) where a case-aware
    inventory's label gives it lower case, else `label`."""
    if not inventory.case_aware or case_of(label) != "L":
        return label
    return inventory.make(mark_of(label), capitalised=True)


def close_ids(ids: list[int], rows: np.ndarray | list[np.ndarray], inventory: LabelSet,
              forced: list[str | None] | None = None, *, closes: bool, opens: bool = True,
              ends: bool = True) -> list[int]:
    """The stream-end rule, the one function every path applies it with: label ids of a stream
    (`rows`: their distributions; only the last row is read) with its first word's label opened
    (`opening_label`) and its last word's closed (`closing_label`, unless `forced` fixed that word's
    mark) when `closes` (the decode option), else as they are. For a part of a stream read in
    segments, `opens`: the part begins the stream; `ends`: it ends the stream."""
    if not ids or not closes:
        return ids
    out = list(ids)  # only its two ends change
    if opens:
        out[0] = inventory.index(opening_label(inventory.labels[out[0]], inventory))
    if ends and (forced is None or forced[-1] is None):
        out[-1] = inventory.index(closing_label(inventory.labels[out[-1]], rows[-1], inventory))
    return out
