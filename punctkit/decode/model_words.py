"""The words a model reads for users' words: a model trained on IWSLT's tokens (`do n't`, `i 'm`:
its frontend's `split_contractions`) reads `don't` as `do n't`; its labels come back one per input
word (the mark of the last piece, the case of the first), so the words pass through whole."""
from __future__ import annotations

import itertools

import numpy as np

from punctkit.data.labels import LabelSet, case_of, mark_of
from punctkit.data.tokenize import split_contraction
from punctkit.decode.windows import Hypothesis, WindowPrediction


class ModelWords:
    """The words a model reads for some input words: each as it is, or, for a model trained on
    IWSLT's tokens (`split`), with its contraction split off (`don't` -> `do n't`,
    punctkit.data.tokenize.split_contraction), and the way back to one label per input word."""

    def __init__(self, words: list[str], split: bool) -> None:
        self.words = words
        self.starts: list[int] | None = None  # per input word, its first model word (and the end)
        if split:
            pieces = [split_contraction(w) for w in words]
            if any(len(p) > 1 for p in pieces):
                self.words = [x for p in pieces for x in p]
                self.starts = list(itertools.accumulate((len(p) for p in pieces), initial=0))

    @staticmethod
    def width(word: str, split: bool) -> int:
        """How many model words one input word is (2 for `don't` when `split`, else 1)."""
        return len(split_contraction(word)) if split else 1

    @classmethod
    def of_spans(cls, starts: list[int]) -> "ModelWords":
        """Input words already read as model words: input word k is model words starts[k]..starts[k+1]-1
        (a stream's pieces, infer/stream.py)."""
        out = cls([], False)
        if any(b - a > 1 for a, b in itertools.pairwise(starts)):
            out.starts = list(starts)
        return out

    def collapse(self, ids: list[int], rows: np.ndarray, inventory: LabelSet) -> tuple[list[int], np.ndarray]:
        """One label id and distribution per input word: the mark of its last piece, the case of its
        first (the distribution: the first piece's case classes times the last piece's marks)."""
        if self.starts is None:
            return ids, rows
        out_ids, out_rows = [], []
        for a, b in itertools.pairwise(self.starts):
            first, last = a, b - 1
            out_ids.append(word_label(ids[first], ids[last], inventory))
            split = first != last and inventory.case_aware
            out_rows.append(case_times_mark(rows[first], rows[last], inventory) if split else rows[last])
        return out_ids, np.stack(out_rows) if out_rows else rows[:0]

    def collapse_hyps(self, got: WindowPrediction, inventory: LabelSet) -> WindowPrediction:
        """`collapse` for a search's n-best hypotheses and its 1-best's distributions."""
        if self.starts is None:
            return got
        best, out_rows = self.collapse(got.best, got.rows, inventory)
        return WindowPrediction([Hypothesis(best, got.hyps[0].score)]
                                + [Hypothesis(self.collapse(h.ids, got.rows, inventory)[0], h.score)
                                   for h in got.hyps[1:]], out_rows)


def word_label(first: int, last: int, inventory: LabelSet) -> int:
    """The label id of an input word the model read as several words, from the label ids of its
    first and last: the mark of the last, the case of the first (without case: the last's)."""
    if first == last or not inventory.case_aware:
        return last
    return inventory.index(inventory.relabel(inventory.labels[first], mark_of(inventory.labels[last])))


def case_times_mark(case_row: np.ndarray, mark_row: np.ndarray, inventory: LabelSet) -> np.ndarray:
    """The distribution over a case-aware inventory's labels with the case classes of `case_row` and
    the marks of `mark_row` (each marginalised), independent."""
    cases = [case_of(lab) for lab in inventory.labels]
    marks = [mark_of(lab) for lab in inventory.labels]
    p_case = {c: float(sum(p for p, x in zip(case_row, cases) if x == c)) for c in inventory.cases}
    p_mark = {m: float(sum(p for p, x in zip(mark_row, marks) if x == m)) for m in set(marks)}
    return np.array([p_case[c] * p_mark[m] for c, m in zip(cases, marks)], dtype=case_row.dtype)
