"""Output rendering: each input word as written, with the mark a label gives it and the case
`Casing` gives it (`Renderer`, `show_tokens`), and each utterance's words as `punctuate`, `serve`
and `--stream` show them (`UnitRenderer`). The words never change: only the marks after them and
the case of words (letters, letters and digits, false starts: `Written.recasable`; punctkit.data.tokenize reads
them)."""
from __future__ import annotations

from dataclasses import dataclass

from punctkit.data.formats.base import AsrUtterance
from punctkit.data.labels import (
    CASE_STYLES,
    CASES,
    SENTENCE_END,
    CaseLexicon,
    LabelSet,
    O,
    apply_case,
    capitalise,
    case_class,
    case_of,
    mark_of,
    sentence_start_case,
)
from punctkit.data.tokenize import Written, shown_mark


@dataclass(frozen=True)
class Casing:
    """How punctuate cases the words it shows.

    - `inventory`: the model's label inventory, whose case classes say what a label does to its
      word (`LabelSet.case_style`: lower, capital, upper, or the `lexicon`'s Mixed form); None or an
      inventory without case: sentence starts and the pronoun `I` are capitalised by rule.
    - the input's own case: where a unit's letters carry case (`carries_case`: some upper, some
      lower), each word keeps its case inside sentences; a sentence start (by the predicted marks)
      is capitalised; a word capitalised (C) only because it began the input's sentence takes the
      model's case when the new marks put it inside a sentence. With the input marks kept
      (--keep-input-marks) the input's case stays too.
    - `recase`: the model's case everywhere, also where the input carries case.
    - `capitalize=False`: every word as it came (marks only).
    """

    inventory: LabelSet | None = None
    lexicon: CaseLexicon | None = None
    capitalize: bool = True
    recase: bool = False

    def model_case(self, core: str, case: str | None, start: bool) -> str:
        """`core` (lower-cased) in the case the model's label (or the rule) gives it."""
        style = self.inventory.case_style(case) if self.inventory is not None else None
        if style is None and case is not None and self.inventory is None:
            style = CASE_STYLES[CASES].get(case)  # a label of Faber's case4/case6 without its inventory
        if style is not None:
            return apply_case(core, style, self.lexicon, start)
        low = core.replace("’", "'")
        if start:
            return sentence_start_case(core)  # `so-` -> `So-`; `1st` stays
        if low == "i" or low[:2] == "i'":
            return capitalise(core)
        return core


def carries_case(written_words: list[Written]) -> bool:
    """Whether the letters of these words carry case: some upper-case and some lower-case letters
    in their recasable words (all lower or all upper says nothing about names and acronyms; URLs,
    numbers and symbols say nothing at all)."""
    upper = lower = False
    for w in written_words:
        if w.recasable:
            upper = upper or any(c.isupper() for c in w.core)
            lower = lower or any(c.islower() for c in w.core)
            if upper and lower:
                return True
    return False


class Renderer:
    """Shows words one after another (`show`), keeping the sentence state across calls: whether
    the next word starts a sentence by the predicted marks (`start`) and by the input's own marks
    (`input_start`), and, for streams, whether the input seen so far carries case."""

    def __init__(self, casing: Casing | bool = True, sentence_start: bool = True,
                 input_cased: bool | None = None) -> None:
        self.casing = casing if isinstance(casing, Casing) else Casing(capitalize=casing)
        self.start = sentence_start
        self.input_start = sentence_start
        self.input_cased = input_cased  # None: judged on the words seen so far
        self._upper = self._lower = False

    def _cased(self, w: Written) -> bool:
        if self.input_cased is not None:
            return self.input_cased
        if w.recasable:
            self._upper = self._upper or any(c.isupper() for c in w.core)
            self._lower = self._lower or any(c.islower() for c in w.core)
        return self._upper and self._lower

    def case(self, w: Written, label: str, keep: bool) -> str:
        """The core of `w` in the case it is shown in (only recasable words change)."""
        c = self.casing
        cased = self._cased(w)
        if not c.capitalize or not w.recasable:
            return w.core
        shown = self._shown(w, label, keep, cased)
        return shown if shown.casefold() == w.core.casefold() else w.core  # `ı` -> `I` would be another word

    def _shown(self, w: Written, label: str, keep: bool, cased: bool) -> str:
        c = self.casing
        if cased and not c.recase:
            was = case_class(w.core)
            if keep:
                return w.core  # the input's marks and case stay
            if self.start:  # a sentence start by the predicted marks: `well` -> `Well`, `ex-US` -> `Ex-US`
                return sentence_start_case(w.core)
            if not (was == "C" and self.input_start):
                return w.core  # inside a sentence: the input's own case
            # capitalised only because it began the input's sentence: the model's case
        return c.model_case(w.core.lower(), case_of(label), self.start)

    def show(self, w: Written, label: str, forced: str | None = None) -> str:
        """One word as written, with the label's mark in place of its input marks and its case;
        `forced`: the input mark forced on the model (its own text is shown when it won)."""
        mk = mark_of(label)
        keep = forced is not None and forced != O and forced == mk
        core = self.case(w, label, forced is not None)
        out = w.lead + core + w.close[:w.at] + shown_mark(w, mk, keep) + w.close[w.at:]
        if mk != O:
            self.start = mk in SENTENCE_END
        elif any(c.isalnum() for c in w.core):  # a lone quote or emoji does not begin the sentence
            self.start = False
        if w.marks:
            self.input_start = any(c in ".?!…" for c in w.marks)
        elif any(c.isalnum() for c in w.core):
            self.input_start = False
        return out


def show_tokens(written_words: list[Written], labels: list[str], casing: Casing | bool = True,
                sentence_start: bool = True, forced: list[str] | None = None,
                input_cased: bool | None = None) -> list[str]:
    """Each word as written, with the label's mark in place of its input marks and the case that
    `casing` (a `Casing`, or True/False for rule-based capitals) gives it (`Renderer`).

    `forced`: the input marks forced on the model (--keep-input-marks): a word whose forced mark
    won is shown with its own mark text, and the input's case stays. `input_cased`: whether the unit's
    letters carry case (None: judged from these words, `carries_case`).
    """
    if len(written_words) != len(labels):  # a word without its label would vanish from the output
        raise ValueError(f"{len(written_words)} words, {len(labels)} labels")
    cased = carries_case(written_words) if input_cased is None else input_cased
    r = Renderer(casing, sentence_start, cased)
    return [r.show(w, lab, forced[k] if forced is not None else None) for k, (w, lab) in
            enumerate(zip(written_words, labels))]


class UnitRenderer:
    """Each utterance's words as shown, as `punctuate` shows them: an utterance on its own starts a
    sentence and is judged cased by itself; lines of one stream (`one_stream`) run on, sentences and
    the input's case crossing lines (judged cased from the first line that carries case on).
    `forced`: the utterances' own marks were forced on the model (--keep-input-marks)."""

    def __init__(self, casing: Casing, one_stream: bool, forced: bool) -> None:
        self.casing, self.one_stream, self.forced = casing, one_stream, forced
        self.render = Renderer(casing, input_cased=False)

    def show(self, utt: AsrUtterance, labels: list[str]) -> list[str]:
        """The words of `utt` as shown under its `labels`."""
        forced = utt.marks if self.forced else None
        if not self.one_stream:
            return show_tokens(utt.written, labels, self.casing, forced=forced)
        self.render.input_cased = self.render.input_cased or carries_case(utt.written)  # judged from here on
        return [self.render.show(w, lab, f) for w, lab, f in zip(utt.written, labels, forced or [None] * len(labels))]
