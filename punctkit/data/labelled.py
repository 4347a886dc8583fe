"""One unit labelled (`Labelled`): what the inference engine yields (punctkit/infer/engine.py: `Engine.label`)
and every writer takes (punctkit/data/formats/), with the words' times as the readers record them (`word_times`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:  # data/datadir.py and data/streams.py read `Times` here, below the formats that import them
    import numpy as np

    from punctkit.data.formats.base import AsrUtterance

Times = tuple[float | None, float | None]  # a word's (start, end) seconds, None unknown


def word_times(records: Sequence[Any], n: int) -> list[Times]:
    """(start, end) seconds of each of `n` words from their reader's records (`start_s`, `end_s`; None where
    a record has none)."""
    out: list[Times] = []
    for k in range(n):
        rec = records[k] if k < len(records) and isinstance(records[k], dict) else {}
        start, end = rec.get("start_s"), rec.get("end_s")
        out.append((start, end if end is not None else start))
    return out


@dataclass
class Labelled:
    """One utterance (or line) labelled: its labels, its words as shown (marks and case set) and,
    when asked for (`probs`), the model's distributions over the inventory's labels (words x labels);
    whether its words begin (`starts`) or end (`ends`) the stream they are of."""

    utt: AsrUtterance
    labels: list[str]
    shown: list[str]
    rows: np.ndarray | None = None
    hyps: list[Any] | None = None  # with `nbest` > 1: the search's n-best (decode/windows.py's Hypothesis), ends closed
    columns: tuple[str, ...] = ()  # the labels of the columns of `rows` (the inventory's, in order)
    starts: bool = False  # its words begin the stream they are of (its first word is the stream's first)
    ends: bool = False    # its words end the stream they are of (its last word is the stream's last)

    @property
    def words(self) -> list[str]:
        """The input's words, without the marks the input had (`utt.written`: each as written)."""
        return self.utt.words

    @property
    def text(self) -> str:
        """The words as shown, one space apart, the input's tokens that are not words (`<unk>`) in place:
        what `punctuate` writes for them."""
        from punctkit.data.formats.base import placed

        return " ".join(placed(self.utt, self.shown))

    @property
    def probabilities(self) -> list[dict[str, float]] | None:
        """Per word, each label's probability ({label: p}, the inventory's order); None unless asked for
        (`probs`)."""
        if self.rows is None:
            return None
        return [{lab: float(p) for lab, p in zip(self.columns, row)} for row in self.rows]

    @property
    def times(self) -> list[Times]:
        """Per word, its (start, end) seconds where the input gave them (a CTM, Whisper's words, ...), else
        (None, None)."""
        return word_times(self.utt.records, len(self.utt.words))
