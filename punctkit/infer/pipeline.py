"""From utterances to labels, shown words and probabilities, over any engine (infer/engine.py), with no I/O.

Inputs of any length run in bounded memory: a stream is decoded in segments of about
`chunk_words` words that overlap by a window, and each word's label comes from the same
window as when the whole stream is decoded at once (punctkit.decode.windows), so the result
equals `punctkit decode`'s. Independent utterances are batched across utterances.
"""
from __future__ import annotations

import math
from collections import deque
from typing import TYPE_CHECKING, Any, Iterable, Iterator

import numpy as np

from punctkit.data.formats import AsrUtterance, split_text
from punctkit.data.labels import O, LabelSet, default_substitution
from punctkit.data.streams import IGNORE, Stream
from punctkit.data.tokenize import Casing, Renderer, carries_case, show_tokens
from punctkit.decode.joint import JointDecision
from punctkit.decode.stream_end import close_stream
from punctkit.decode.windows import Predicted
from punctkit.files import PunctkitError

if TYPE_CHECKING:
    from punctkit.text.frontend import Frontend

Fixed = list[str | None]  # per word: the mark it must keep, or None (predicted)
Labelled = tuple[AsrUtterance, list[str], list[str]]  # an utterance, its labels, its words as shown
# with probs: also the utterance's words x labels distributions
LabelledRows = tuple[AsrUtterance, list[str], list[str], np.ndarray]


def word_streams(word_lists: list[list[str]]) -> list[Stream]:
    """Unlabelled streams of words (keys s0, s1, ...)."""
    return [Stream(f"s{k}", [f"s{k}"], [0], words, [IGNORE] * len(words)) for k, words in enumerate(word_lists)]


def fixed_labels(inventory: LabelSet, ids: list[int], fixed: Fixed | None) -> list[str]:
    """The labels of label ids, with each fixed mark (None: predicted) kept and the predicted case."""
    labels = [inventory.labels[i] for i in ids]
    if fixed is not None:
        for i, mk in enumerate(fixed):
            if mk is not None:
                labels[i] = inventory.relabel(labels[i], mk)
    return labels


def split_rows(pairs: Iterable[tuple[str, np.ndarray]], n_labels: int) -> tuple[list[str], np.ndarray]:
    """(labels, words x labels array) from (label, row) pairs."""
    labels: list[str] = []
    rows: list[np.ndarray] = []
    for label, row in pairs:
        labels.append(label)
        rows.append(row)
    return labels, np.array(rows, dtype=np.float64).reshape(len(rows), n_labels)


class Labeller:
    """The labelling API of every engine (a Punctuator, an Ensemble), built on its `decode`:
    one stream's labels in bounded memory, independent utterances batched, probabilities,
    readable text. Subclasses give `inventory`, `frontend`, `chunk_words`, `grid`, `reach`, `closes_streams`,
    `decode`."""

    # what an engine gives (infer/engine.py: Engine): attributes or properties
    inventory: LabelSet
    chunk_words: int
    frontend: "Frontend"
    grid: int
    reach: int
    closes_streams: bool

    def decode(self, streams: list[Stream], extra: Any = None) -> list[Predicted]:
        raise NotImplementedError

    def streamable(self) -> Any:
        """The one model a `PunctStream` runs (infer/engine.py: Engine.streamable)."""
        raise NotImplementedError

    @property
    def decides_jointly(self) -> bool:
        """Whether marks and case are decided together (the decode option `joint`)."""
        return True

    @property
    def joint(self) -> JointDecision:
        """The joint decision of marks and case over this engine's distributions (decode/joint.py):
        the one place each word's label is chosen from its distribution, given its neighbours'."""
        got = self.__dict__.get("_joint")
        if got is None:
            fe = self.frontend
            got = JointDecision(self.inventory, fe.case_lexicon, getattr(fe, "case_prior", None),
                                enabled=self.decides_jointly)
            self.__dict__["_joint"] = got
        return got

    # --- labelling
    def _rows(self, word_lists: list[list[str]]) -> list[tuple[list[int], np.ndarray]]:
        """Best label ids of each word of each stream and their distributions."""
        return [(h[0][0], rows) for h, rows in self.decode(word_streams(word_lists))]

    def stream_labels(self, items: Iterable[tuple[str, str | None]], probs: bool = False) -> Iterator[Any]:
        """The label of every word of one stream of (word, fixed mark or None), in order, in bounded memory;
        with `probs`, (label, row): the row is the model's distribution over the inventory's labels
        (also for a word whose mark is fixed). The stream's first word begins a sentence and its last
        word ends one (decode/stream_end.py), unless the input fixed that mark.

        Segments start on the window grid (multiples of `grid`) and overlap by
        at least the longest window on each side of the words they keep, so every kept
        word has the same windows, and owner, as in a whole-stream decode.
        """
        L, S = self.reach, self.grid
        ctx = math.ceil(L / S) * S
        chunk = S * max(math.ceil(self.chunk_words / S), math.ceil(L / S))
        buf: list[tuple[str, str | None]] = []
        buf_start = keep = 0

        prev: list[int] = []  # the label id of the last word labelled (the joint decision runs on)

        def run(seg: list[tuple[str, str | None]], a: int, b: int, last: bool = False) -> Iterator[Any]:
            words = [w for w, _ in seg]
            best, rows = self._rows([words])[0]
            fixed = [f for _, f in seg[a:b]]
            first = buf_start + a == 0
            ids = self.joint.decide(rows[a:b], words[a:b], fixed=fixed, prev=prev[-1] if prev else None, best=best[a:b],
                                    opens=first and self.closes_streams,
                                    next_row=rows[b] if b < len(seg) else None,
                                    next_word=words[b] if b < len(seg) else None)
            prev[:] = ids[-1:] or prev
            labels = fixed_labels(self.inventory, ids, fixed)
            if first or last:  # the stream's start and end bound sentences, unless the options leave them open
                labels = close_stream(labels, rows[a:b], self.inventory, fixed, closes=self.closes_streams,
                                      opens=first, ends=last)
            return zip(labels, rows[a:b]) if probs else iter(labels)

        for it in items:
            buf.append(it)
            if buf_start + len(buf) >= keep + chunk + L:
                seg = buf[: keep + chunk + L - buf_start]
                yield from run(seg, keep - buf_start, keep + chunk - buf_start)
                keep += chunk
                del buf[: keep - ctx - buf_start]
                buf_start = keep - ctx
        if buf_start + len(buf) > keep:
            yield from run(buf, keep - buf_start, len(buf), last=True)

    def label_utterances(self, utts: Iterable[tuple[list[str], Fixed | None]],
                         probs: bool = False) -> Iterator[Any]:
        """Labels of independent utterances (each its own stream, its last word ending a sentence
        unless the decode option `stream_end` is `open`),
        batched across utterances; with `probs`, (labels, words x labels array) per utterance."""
        group: list[tuple[list[str], Fixed | None]] = []
        size = 0
        n_labels = len(self.inventory.labels)

        def flush() -> Iterator[Any]:
            nonlocal size
            done = self._rows([w for w, _ in group if w]) if any(w for w, _ in group) else []
            k = 0
            for words, fixed in group:
                if words:
                    best, rows = done[k]
                    ids = self.joint.decide(rows, words, fixed=fixed, opens=self.closes_streams, best=best)
                    labels = close_stream(fixed_labels(self.inventory, ids, fixed), rows, self.inventory, fixed,
                                          closes=self.closes_streams)
                    k += 1
                else:
                    labels, rows = [], np.zeros((0, n_labels))
                yield (labels, rows) if probs else labels
            group.clear()
            size = 0

        for words, fixed in utts:
            if len(words) > self.chunk_words:
                yield from flush()
                items = zip(words, fixed if fixed is not None else [None] * len(words))
                yield split_rows(self.stream_labels(items, True), n_labels) if probs \
                    else list(self.stream_labels(items))
                continue
            group.append((words, fixed))
            size += len(words)
            if size >= self.chunk_words:
                yield from flush()
        yield from flush()

    def label_words(self, words: list[str], fixed: Fixed | None = None, probs: bool = False) -> Any:
        """Labels of one stream of words (`fixed`: marks to keep, None where predicted); with `probs`,
        (labels, words x labels array of the model's distributions, also where a mark is fixed)."""
        items = zip(words, fixed if fixed is not None else [None] * len(words))
        if probs:
            return split_rows(self.stream_labels(items, True), len(self.inventory.labels))
        return list(self.stream_labels(items))

    def probs(self, words: list[str]) -> np.ndarray:
        """The model's distribution over the inventory's labels for each word of one stream (words x labels)."""
        return self.label_words(words, probs=True)[1]

    def casing(self, capitalize: "bool | Casing" = True, recase: bool = False) -> Casing:
        """How this model's output is cased (punctkit.data.tokenize.Casing): its inventory's case
        classes and its frontend's case lexicon; `capitalize=False`: every word as it came;
        `recase`: the model's case also where the input carries case."""
        if isinstance(capitalize, Casing):
            return capitalize
        return Casing(self.inventory, self.frontend.case_lexicon, capitalize, recase)

    def punctuate(self, text: str, keep_input_marks: bool = False, capitalize: bool = True,
                  recase: bool = False) -> str:
        """Punctuated, readable text (one stream; line breaks kept): the input's words in order, as
        written, one space apart, with marks predicted (or kept) and case changed only for alphabetic
        words (punctkit.data.tokenize.show_tokens): the model's case, except that where the input's
        letters carry case its words keep it inside sentences (`recase`: the model's case everywhere;
        `capitalize=False`: every word as it came)."""
        rules = default_substitution(self.inventory)
        passages = (split_text(t, self.inventory, rules) for t in text.splitlines())
        lines = (AsrUtterance(str(i), p.words, p.marks, p.written, lineno=i, has_id=False)
                 for i, p in enumerate(passages, 1))
        return "\n".join(" ".join(shown) for _, _, shown in label_units(self, lines, True, keep_input_marks,
                                                                         self.casing(capitalize, recase)))


# ------------------------------------------------------------------ utterances in, shown words out

def input_fixed(utt: AsrUtterance, keep: bool) -> Fixed | None:
    """The marks of an utterance the model must keep (--keep-input-marks), None where it predicts."""
    return [None if m == O else m for m in utt.marks] if keep else None


def kept_marks(utt: AsrUtterance, keep: bool) -> list[str] | None:
    """The input marks that were given to the model as fixed (--keep-input-marks), else None."""
    return utt.marks if keep else None


class UnitRenderer:
    """Each utterance's words as shown, as `punctuate` shows them: an utterance on its own starts a
    sentence and is judged cased by itself; lines of one stream (`one_stream`) run on, sentences and
    the input's case crossing lines (judged cased from the first line that carries case on)."""

    def __init__(self, casing: Casing, one_stream: bool, keep_input_marks: bool) -> None:
        self.casing, self.one_stream, self.keep = casing, one_stream, keep_input_marks
        self.render = Renderer(casing, input_cased=False)

    def show(self, utt: AsrUtterance, labels: list[str]) -> list[str]:
        """The words of `utt` as shown under its `labels`."""
        kept = kept_marks(utt, self.keep)
        if not self.one_stream:
            return show_tokens(utt.written, labels, self.casing, kept=kept)
        self.render.input_cased = self.render.input_cased or carries_case(utt.written)  # judged from here on
        return [self.render.show(w, lab, k) for w, lab, k in zip(utt.written, labels, kept or [None] * len(labels))]


def label_units(punct: Labeller, units: Iterable[AsrUtterance], one_stream: bool, keep_input_marks: bool,
                capitalize: "bool | Casing", probs: bool = False) -> Iterator[Any]:
    """Each utterance in order with its labels and its words as shown (marks and case set), as
    `Labelled`; with `probs`, `LabelledRows` (4th item: its words x labels distributions).
    `one_stream` (plain-text lines) labels all words as one stream, sentences crossing lines;
    otherwise each utterance is its own stream and starts a sentence. `punct`: any engine
    (a Punctuator, an Ensemble). `capitalize`: a `Casing`, or a bool for `punct.casing`."""
    render = UnitRenderer(punct.casing(capitalize), one_stream, keep_input_marks)
    if one_stream:
        yield from _stream_units(punct, iter(units), keep_input_marks, render, probs)
        return
    seen: deque[AsrUtterance] = deque()  # utterances waiting for their labels (at most one chunk)

    def feed() -> Iterator[tuple[list[str], Fixed | None]]:
        for u in units:
            seen.append(u)
            yield u.words, input_fixed(u, keep_input_marks)

    for res in punct.label_utterances(feed(), probs=probs):
        labels, rows = res if probs else (res, None)
        u = seen.popleft()
        shown = render.show(u, labels)
        yield (u, labels, shown, rows) if probs else (u, labels, shown)


def _stream_units(punct: Labeller, units: Iterator[AsrUtterance], keep_input_marks: bool,
                  render: UnitRenderer, probs: bool = False) -> Iterator[Any]:
    """Lines as one stream: words flow through `stream_labels`, lines come out whole, in order."""
    pending: deque[AsrUtterance] = deque()  # lines whose words are not all labelled yet
    n_labels = len(punct.inventory.labels)

    def items() -> Iterator[tuple[str, str | None]]:
        for ln in units:
            pending.append(ln)
            fixed = input_fixed(ln, keep_input_marks) or [None] * len(ln.words)
            yield from zip(ln.words, fixed)

    labels: deque[Any] = deque()
    labelled = punct.stream_labels(items(), probs=probs)
    while True:
        while pending and len(labels) >= len(pending[0].words):  # the first pending line is complete
            ln = pending.popleft()
            got = [labels.popleft() for _ in ln.words]
            mine, rows = split_rows(got, n_labels) if probs else (got, None)
            shown = render.show(ln, mine)
            yield (ln, mine, shown, rows) if probs else (ln, mine, shown)
        nxt = next(labelled, None)
        if nxt is None:
            break
        labels.append(nxt)
    for ln in pending:  # only lines without words can be left
        if ln.words:
            raise PunctkitError(f"line {ln.lineno}: the model returned no labels for its words")
        yield (ln, [], [], np.zeros((0, n_labels))) if probs else (ln, [], [])
