"""Reference punctuation projected onto recognized words, and the word error counts.

As the IWSLT ASR test sets were made: the reference words are aligned with the
recognized words by minimum edit distance (`text.edit_align.align_words`, case-insensitive),
then, walking the alignment in order,

- a recognized word aligned with a reference word (match or substitution) takes
  that reference word's label;
- a recognized word with no reference word (an insertion) gets O;
- the mark of a reference word with no recognized word (a deletion) goes to the
  previous recognized word (inserted or not), replacing the mark that word had;
  the replaced mark, and a deleted word's mark with no recognized word before it
  (a deletion at the start), are counted as not projected.

Case-aware labels (`U_COMMA`) keep the case of the reference word on aligned
words; a moved mark keeps the case of the word it moves to; an insertion is `L_O`.
Pure Python (no torch): the recognizer and tests call `project_marks`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from punctkit.data.labels import LabelSet, O, case_of, mark_of
from punctkit.text.edit_align import align_words


@dataclass
class Projection:
    """Labels for the recognized words and what the alignment found."""

    labels: list[str] = field(default_factory=list)  # one per recognized word (empty without reference labels)
    ref_words: int = 0       # N
    substitutions: int = 0   # S
    deletions: int = 0       # D
    insertions: int = 0      # I
    marks: int = 0           # reference words with a mark
    not_projected: int = 0   # of those, marks no recognized word carries

    def add(self, other: "Projection") -> None:
        """Add another utterance's counts (labels are not kept)."""
        for name in ("ref_words", "substitutions", "deletions", "insertions", "marks", "not_projected"):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    @property
    def errors(self) -> int:
        return self.substitutions + self.deletions + self.insertions

    @property
    def wer(self) -> float:
        """Word error rate in percent ((S + D + I) / N; 0 for no reference words)."""
        return 100.0 * self.errors / self.ref_words if self.ref_words else 0.0


def _no_mark(inventory: LabelSet | None) -> str:
    return inventory.make(O) if inventory is not None else O


def project_marks(ref_words: Sequence[str], ref_labels: Sequence[str] | None, hyp_words: Sequence[str],
                  inventory: LabelSet | None = None) -> Projection:
    """Project `ref_labels` (one per reference word; None: count errors only) onto `hyp_words`."""
    with_labels = ref_labels is not None
    out = Projection(ref_words=len(ref_words))
    labels: list[str | None] = [None] * len(hyp_words)
    last_hyp: int | None = None
    for i, j in align_words(ref_words, hyp_words):
        if i is None:
            out.insertions += 1
            labels[j] = _no_mark(inventory)
            last_hyp = j
            continue
        mark = mark_of(ref_labels[i]) if with_labels else O
        out.marks += mark != O
        if j is not None:
            out.substitutions += ref_words[i].casefold() != hyp_words[j].casefold()
            labels[j] = ref_labels[i] if with_labels else O
            last_hyp = j
            continue
        out.deletions += 1
        if mark == O:
            continue
        if last_hyp is None:
            out.not_projected += 1
            continue
        before = labels[last_hyp]
        if mark_of(before) != O:
            out.not_projected += 1  # the earlier mark is replaced by the later one
        labels[last_hyp] = inventory.relabel(before, mark) if inventory is not None else \
            (f"{case_of(before)}_{mark}" if case_of(before) else mark)
    out.labels = [lab for lab in labels if lab is not None] if with_labels else []
    return out
