"""The inference engine: a model ready to label words (ESPnet's `Speech2Text`).

    >>> from punctkit import Punctuator
    >>> for done in Punctuator.load("fast").label(units):
    ...     done.utt, done.labels, done.shown, done.rows

`Engine` is what labels words: one model (`Punctuator`, built from a package or an experiment)
or several (`Ensemble`, infer/ensemble.py). `Engine.label` is the one labelling call of
`punctkit decode`, `punctuate`, `serve` and `--stream`; everything a label goes through is
here, once each:

- the model's words (decode/model_words.py: `don't` read as `do n't`, one label back):
  `Punctuator.distributions`;
- overlapping windows and each word's most central one (decode/windows.py);
- bounded memory: a long stream in segments of about `chunk_words` words (`_segments`), short
  independent streams batched (`_batched`), with the labels of a whole-stream decode;
- the decision (`decide`): marks and case together (decode/joint.py), the marks the input forces
  (`forced`), and the stream's ends (decode/stream_end.py: `close_ids`);
- how the words are shown (infer/render.py).

Streaming (infer/stream.py) reads its windows through `label_window_spans` and decides through
`decide`.
"""
from __future__ import annotations

import abc
import math
from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from punctkit.data.formats import split_text
from punctkit.data.formats.base import AsrUtterance, placed
from punctkit.data.labels import LabelSet, O, Substitution, default_substitution, get_inventory
from punctkit.data.streams import IGNORE, Extra, Stream
from punctkit.data.tokenize import Written
from punctkit.decode.boundary import NOTHING, BoundaryFusion, between, unit_boundaries, word_times
from punctkit.decode.joint import THRESHOLD, JointDecision
from punctkit.decode.lookahead import Span, label_windows
from punctkit.decode.model_words import ModelWords
from punctkit.decode.options import DecodeOptions
from punctkit.decode.stream_end import close_ids
from punctkit.decode.windows import Hyps, Predict, Predicted, decode_windows_rows
from punctkit.files import PunctkitError
from punctkit.infer.backends import TEXT_KEYS, decode_options, import_torch, pick_backend, torch_model
from punctkit.infer.render import Casing, UnitRenderer
from punctkit.package import EnsemblePackage, Package, read_package
from punctkit.pretrained import default_model
from punctkit.text.frontend import Frontend

Forced = list[str | None]  # per word: the mark the input forces on it (--keep-input-marks), or None (predicted)
Unit = AsrUtterance | str | Sequence[str] | Sequence[AsrUtterance] | Stream  # what `Engine.label` takes (see there)


@dataclass
class Labelled:
    """One utterance (or line) labelled: its labels, its words as shown (marks and case set) and,
    when asked for (`probs`), the model's distributions over the inventory's labels (words x labels)."""

    utt: AsrUtterance
    labels: list[str]
    shown: list[str]
    rows: np.ndarray | None = None
    hyps: Hyps | None = None  # with `nbest` > 1: the search's n-best label ids and scores, ends closed
    columns: tuple[str, ...] = ()  # the labels of the columns of `rows` (the inventory's, in order)

    @property
    def words(self) -> list[str]:
        """The input's words, without the marks the input had (`utt.written`: each as written)."""
        return self.utt.words

    @property
    def text(self) -> str:
        """The words as shown, one space apart, the input's tokens that are not words (`<unk>`) in place:
        what `punctuate` writes for them."""
        return " ".join(placed(self.utt, self.shown))

    @property
    def probabilities(self) -> list[dict[str, float]] | None:
        """Per word, each label's probability ({label: p}, the inventory's order); None unless asked for
        (`probs`)."""
        if self.rows is None:
            return None
        return [{lab: float(p) for lab, p in zip(self.columns, row)} for row in self.rows]

    @property
    def times(self) -> list[tuple[float | None, float | None]]:
        """Per word, its (start, end) seconds where the input gave them (a CTM, Whisper's words, ...), else
        (None, None)."""
        return word_times(self.utt.records, len(self.utt.words))


def as_unit(words: Sequence[str], forced: Forced | None = None, uttid: str = "s0") -> AsrUtterance:
    """Words (and the marks forced on them) as an utterance for `Engine.label`, each word as written."""
    marks = [O if m is None else m for m in (forced or [None] * len(words))]
    return AsrUtterance(uttid, list(words), marks, [Written("", w) for w in words], has_id=False)


def text_unit(text: str, inventory: LabelSet, uttid: str, lineno: int = 0,
              rules: Substitution | None = None) -> AsrUtterance:
    """A text as an utterance for `Engine.label`: its words (split on white space, line breaks too), each
    as written, the marks it has as the input's marks (kept with `forced`), the tokens that are not words
    in place; `rules`: how its marks map to labels (the inventory's default)."""
    p = split_text(text, inventory, rules if rules is not None else default_substitution(inventory))
    return AsrUtterance(uttid, p.words, p.marks, p.written, lineno=lineno, has_id=False, tags=p.tags)


def forced_marks(utt: AsrUtterance, forced: bool) -> Forced | None:
    """The marks of an utterance the model must keep (`forced`: --keep-input-marks), None where it predicts."""
    return [None if m == O else m for m in utt.marks] if forced else None


MAX_RUN_WORDS = 200_000  # words of one `stream` held as one unit (about 20 hours of speech); a longer one is cut


def stream_runs(units: Iterable[Unit]) -> Iterator[Unit]:
    """`units` with each run of consecutive utterances of one `stream` (AsrUtterance.stream, an stm's recording)
    as one unit, a list of lines of one stream; a run is cut after MAX_RUN_WORDS words (memory stays bounded)."""
    run: list[AsrUtterance] = []
    words = 0
    for u in units:
        if run and not (isinstance(u, AsrUtterance) and u.stream == run[0].stream and words < MAX_RUN_WORDS):
            yield run
            run, words = [], 0
        if isinstance(u, AsrUtterance) and u.stream is not None:
            run.append(u)
            words += len(u.words)
        else:
            yield u
    if run:
        yield run


def word_streams(word_lists: list[list[str]]) -> list[Stream]:
    """Unlabelled streams of words (keys s0, s1, ...)."""
    return [Stream(f"s{k}", [f"s{k}"], [0], words, [IGNORE] * len(words)) for k, words in enumerate(word_lists)]


class Engine(abc.ABC):
    """What labels words: one model (`Punctuator`) or several (`Ensemble`). A subclass gives the
    model's distributions (`distributions`), the one model a stream runs (`streamable`), and these:"""

    inventory: LabelSet       # the labels of the distributions, in this order
    chunk_words: int          # words a long stream is decoded in at once (memory bound)
    frontend: Frontend        # how words become tokens (an ensemble: its first member's)
    boundary: BoundaryFusion | None = None  # how turns and pauses weigh on the marks (decode/boundary.py)

    @property
    @abc.abstractmethod
    def step(self) -> int:
        """Windows start on multiples of this (an ensemble: a multiple of every member's step)."""

    @property
    @abc.abstractmethod
    def window(self) -> int:
        """The longest window: the context a segment of a long stream needs on each side."""

    @property
    @abc.abstractmethod
    def closes_streams(self) -> bool:
        """Whether a stream's first word begins a sentence and its last ends one (decode option
        `stream_end`; an ensemble: when every member's does)."""

    @property
    def decides_jointly(self) -> bool:
        """Whether marks and case are decided together (the decode option `joint`)."""
        return True

    @property
    def capital_rule(self) -> tuple[float, float]:
        """Rule 2 of the joint decision: the decode options `capital_threshold` and `capital_weight`."""
        return THRESHOLD, 0.0

    def model_width(self, word: str) -> int:
        """How many of the words the model reads one input word is (`don't`: 2 where the model reads
        IWSLT's `do n't`): its windows are planned over those (`_segments` cuts on their grid)."""
        return 1

    @abc.abstractmethod
    def distributions(self, streams: list[Stream], extra: Extra | None = None) -> list[Predicted]:
        """Per stream: the search's n-best label ids (one per input word) and the 1-best's distributions
        (words x labels, inventory order), before any decision. `extra`: a data directory's audio."""

    @abc.abstractmethod
    def streamable(self) -> "Punctuator":
        """The one model a `PunctStream` runs (an ensemble: its members as one tagger, else an error)."""

    # ------------------------------------------------------------------ the decision
    @property
    def joint(self) -> JointDecision:
        """The joint decision of marks and case over this engine's distributions (decode/joint.py)."""
        got = self.__dict__.get("_joint")
        if got is None:
            fe = self.frontend
            threshold, weight = self.capital_rule
            got = JointDecision(self.inventory, fe.case_lexicon, getattr(fe, "case_prior", None),
                                threshold=threshold, weight=weight, enabled=self.decides_jointly)
            self.__dict__["_joint"] = got
        return got

    def decide(self, rows: np.ndarray, words: list[str], *, forced: Forced | None = None,
               best: list[int] | None = None, prev: int | None = None, first: bool = True, last: bool = True,
               next_row: np.ndarray | None = None, next_word: str | None = None) -> list[int]:
        """The label ids of consecutive words of a stream, from their distributions (`rows`): the one
        place a label is chosen. Marks and case together, left to right (decode/joint.py: `prev`, the
        label id before these; `next_row`/`next_word`, the word after them when the stream goes on;
        `best`, the search's own ids where the rules do not apply); each `forced` mark kept; the
        stream's first word (`first`: these begin the stream) begins a sentence and its last (`last`:
        these end it) ends one, unless the decode option `stream_end` leaves streams open
        (decode/stream_end.py)."""
        inv, closes = self.inventory, self.closes_streams
        ids = self.joint.decide(rows, words, forced=forced, prev=prev, best=best, opens=first and closes,
                                next_row=next_row, next_word=next_word)
        if forced is not None:
            ids = [i if mk is None else inv.index(inv.relabel(inv.labels[i], mk)) for i, mk in zip(ids, forced)]
        return close_ids(ids, rows, inv, forced, closes=closes, opens=first, ends=last)

    def fused(self, rows: np.ndarray, boundaries: Sequence[int] | None) -> np.ndarray:
        """The words' distributions given what follows each of them (`boundaries`: decode/boundary.py's ids; None
        or all NOTHING: `rows` as they are)."""
        if self.boundary is None or boundaries is None:
            return rows
        return self.boundary.apply(rows, boundaries, self.inventory)

    def fused_best(self, rows: np.ndarray, boundaries: Sequence[int] | None, best: list[int]) -> list[int]:
        """The search's ids, each word whose distribution the boundary changed taking its arg-max."""
        if self.boundary is None or boundaries is None:
            return best
        return [b if k == NOTHING else int(r.argmax()) for b, k, r in zip(best, boundaries, rows)]

    # ------------------------------------------------------------------ labelling
    def label(self, units: str | Iterable[Unit], *, one_stream: bool = False, forced: bool = False,
              casing: Casing | None = None, probs: bool = False, extra: Extra | None = None,
              nbest: int = 1, stop: Callable[[], None] | None = None) -> Iterator[Labelled]:
        """Each unit labelled, in order, in bounded memory: the one labelling call.

        `units`: utterances (`AsrUtterance`, a list of words, or a text: `text_unit`; a text alone is one
        unit), each its own stream with an id of its own (`s0`, `s1`, ... where it has none), starting and
        ending sentences, except that consecutive utterances of one `stream` (an stm's recording) are
        lines of one stream (`stream_runs`); a list of utterances is lines of one stream (sentences and the input's case
        run on across them); a data directory's `Stream` is the lines of its utterances (`punctkit
        decode`). `one_stream`: all of `units` are lines of one stream (plain text, read as it comes).
        `forced`: each utterance's own marks are kept (--keep-input-marks), the model predicting the
        rest. `casing`: how the words are shown (`casing()`'s default). `probs`: each `Labelled` has its
        words x labels distributions (also where a mark is forced). `extra`: the audio of the data
        directory the `Stream`s come from (a stream with audio is read whole: its features are its
        utterances'). `nbest` > 1: each unit's `Labelled` has the search's n-best (`hyps`; one line a
        unit, the first its decided labels, the others' stream ends closed by the same rule). `stop`: called
        before each chunk of words is decoded (a batch of streams, a long stream's segment); it raises to
        stop labelling there (the server's requests whose clients left), else the labels are the same."""
        casing = casing if casing is not None else self.casing()
        if isinstance(units, str):
            units = [units]
        if one_stream:
            yield from self._one_stream(iter(units), forced, casing, probs, stop)
        else:
            yield from self._batched(stream_runs(units), forced, casing, probs, extra, nbest, stop)

    def label_window_spans(self, words: Sequence[str], base: int, wanted: Iterable[tuple[int, Sequence[Span]]],
                           cache: dict[Span, tuple[list[int], np.ndarray]]
                           ) -> tuple[dict[int, int], dict[int, np.ndarray]]:
        """For streaming (infer/stream.py): each wanted model word's label id and distribution, given as
        (word index, its windows (start, end): decode/lookahead.py's `word_windows`), `words` holding the
        stream's model words from `base` on; the windows not in `cache` are read in one batch
        (decode/lookahead.py: label_windows)."""
        p = self.streamable()
        rows: dict[int, np.ndarray] = {}
        ids = label_windows(words, base, wanted, p.frontend, p.predict, cache, rows)
        return ids, rows

    def _best_rows(self, word_lists: list[list[str]]) -> list[tuple[list[int], np.ndarray]]:
        """The search's best label ids of each word of each stream and their distributions."""
        return [(h[0][0], rows) for h, rows in self.distributions(word_streams(word_lists))]

    def _decided(self, stream: Stream, hyps: Hyps, rows: np.ndarray, forced: Forced | None,
                 nbest: int, boundaries: Sequence[int] | None = None) -> tuple[list[int], Hyps | None]:
        """A whole stream's decided label ids (`rows` fused with its `boundaries` already), and its n-best
        (`nbest` > 1) with the decided ids first and the others' ends closed as `decide` closes them."""
        ids = self.decide(rows, stream.words, forced=forced, best=self.fused_best(rows, boundaries, hyps[0][0]))
        if nbest <= 1:
            return ids, None
        return ids, [(ids, hyps[0][1])] + [(close_ids(h, rows, self.inventory, closes=self.closes_streams), score)
                                           for h, score in hyps[1:]]

    def _segments(self, items: Iterable[tuple[str, str | None, int]],
                  stop: Callable[[], None] | None = None) -> Iterator[tuple[str, np.ndarray]]:
        """(label, distribution) of every word of one stream of (word, forced mark or None, boundary id), in order,
        in bounded memory. Segments start on the window grid (a multiple of `step` of the words the
        model reads: `model_width`) and overlap by at least the longest window on each side of the
        words they keep, so every kept word has the same windows, and owner, as in a whole-stream decode."""
        L, S = self.window, self.step
        ctx = math.ceil(L / S) * S
        chunk = S * max(math.ceil(self.chunk_words / S), math.ceil(L / S))
        buf: list[tuple[str, str | None, int]] = []
        at: list[int] = []  # per word of buf: the model words before it in the stream
        buf_start = keep = 0
        prev: list[int] = []  # the label id of the last word labelled (the decision runs on)

        def cut(last: int) -> int:
            """The next segment's first word: the last one at or before `last` whose model words start on
            the grid (a split contraction may straddle a grid point; none found: `last` itself)."""
            for j in range(last, max(buf_start, last - 2 * ctx) - 1, -1):
                if at[j - buf_start] % S == 0:
                    return j
            return last

        def run(seg: list[tuple[str, str | None, int]], a: int, b: int,
                last: bool = False) -> Iterator[tuple[str, np.ndarray]]:
            if stop is not None:
                stop()
            words = [w for w, _, _ in seg]
            best, rows = self._best_rows([words])[0]
            bounds = [k for _, _, k in seg]
            rows = self.fused(rows, bounds)
            best = self.fused_best(rows, bounds, best)
            forced = [f for _, f, _ in seg[a:b]]
            ids = self.decide(rows[a:b], words[a:b], forced=forced, best=best[a:b], prev=prev[-1] if prev else None,
                              first=buf_start + a == 0, last=last, next_row=rows[b] if b < len(seg) else None,
                              next_word=words[b] if b < len(seg) else None)
            prev[:] = ids[-1:] or prev
            return zip([self.inventory.labels[i] for i in ids], rows[a:b])

        for it in items:
            at.append(at[-1] + self.model_width(buf[-1][0]) if buf else 0)
            buf.append(it)
            if buf_start + len(buf) >= keep + chunk + L:
                seg = buf[: keep + chunk + L - buf_start]
                yield from run(seg, keep - buf_start, keep + chunk - buf_start)
                keep += chunk
                start = cut(keep - ctx)
                del buf[: start - buf_start], at[: start - buf_start]
                buf_start = start
        if buf_start + len(buf) > keep:
            yield from run(buf, keep - buf_start, len(buf), last=True)

    def _rows(self, pairs: list[tuple[str, np.ndarray]]) -> tuple[list[str], np.ndarray]:
        n = len(self.inventory.labels)
        return [p[0] for p in pairs], np.array([p[1] for p in pairs], dtype=np.float64).reshape(len(pairs), n)

    def _batched(self, units: Iterable[Unit], forced: bool, casing: Casing, probs: bool,
                 extra: Extra | None = None, nbest: int = 1,
                 stop: Callable[[], None] | None = None) -> Iterator[Labelled]:
        """Independent streams (an utterance, lines of one stream, or a data directory's stream),
        batched across streams up to about `chunk_words` words; a longer stream alone, in segments
        (`_segments`), unless it has audio (`extra`) or n-best lists are asked for."""
        group: list[tuple[list[AsrUtterance], Stream, Forced | None, list[int] | None]] = []
        size = 0

        def show(lines: list[AsrUtterance], labels: list[str], rows: np.ndarray,
                 hyps: Hyps | None = None) -> Iterator[Labelled]:
            render = UnitRenderer(casing, len(lines) > 1, forced)  # lines of one stream: sentences run on
            k = 0
            for u in lines:
                mine, r = labels[k:k + len(u.words)], rows[k:k + len(u.words)]
                k += len(u.words)
                yield Labelled(u, mine, render.show(u, mine), r if probs else None, hyps, self.inventory.labels)

        def flush() -> Iterator[Labelled]:
            nonlocal size
            todo = [stream for _, stream, _, _ in group if stream.words]
            if todo and stop is not None:
                stop()
            done = iter(self.distributions(todo, extra)) if todo else iter(())
            for lines, stream, fx, bounds in group:
                rows = np.zeros((0, len(self.inventory.labels)))
                labels: list[str] = []
                hyps = None
                if stream.words:
                    h, rows = next(done)
                    rows = self.fused(rows, bounds)
                    ids, hyps = self._decided(stream, h, rows, fx, nbest, bounds)
                    labels = [self.inventory.labels[i] for i in ids]
                yield from show(lines, labels, rows, hyps)
            group.clear()
            size = 0

        for k, unit in enumerate(units):
            lines = self._lines(unit, f"s{k}")
            words = [w for u in lines for w in u.words]
            fx = [f for u in lines for f in forced_marks(u, True)] if forced else None
            bounds = unit_boundaries(lines) if self.boundary is not None else None
            if len(words) > self.chunk_words and extra is None and nbest <= 1:
                yield from flush()
                items = zip(words, fx or [None] * len(words), bounds or [NOTHING] * len(words))
                labels, rows = self._rows(list(self._segments(items, stop)))
                yield from show(lines, labels, rows)
                continue
            stream = unit if isinstance(unit, Stream) else Stream(f"s{k}", [f"s{k}"], [0], words, [IGNORE] * len(words))
            group.append((lines, stream, fx, bounds))
            size += len(words)
            if size >= self.chunk_words:
                yield from flush()
        yield from flush()

    def _lines(self, unit: Unit, uttid: str) -> list[AsrUtterance]:
        """A unit as the lines of one stream; a text or a list of words made an utterance `uttid` (each unit
        of a call its own id)."""
        if isinstance(unit, AsrUtterance):
            return [unit]
        if isinstance(unit, Stream):  # a data directory's: its utterances, their words as the model reads them
            return [AsrUtterance(uttid, unit.words[a:b], [O] * (b - a), [Written("", w) for w in unit.words[a:b]])
                    for uttid, a, b in unit.utt_spans()]
        if isinstance(unit, str):
            return [text_unit(unit, self.inventory, uttid)]
        items = list(unit)
        if items and isinstance(items[0], AsrUtterance):
            return items  # type: ignore[return-value]
        return [as_unit(items, uttid=uttid)]  # type: ignore[arg-type]

    def _one_stream(self, units: Iterator[Unit], forced: bool, casing: Casing, probs: bool,
                    stop: Callable[[], None] | None = None) -> Iterator[Labelled]:
        """Lines as one stream: words flow through `_segments`, lines come out whole, in order."""
        render = UnitRenderer(casing, True, forced)
        pending: deque[AsrUtterance] = deque()  # lines whose words are not all labelled yet

        def items() -> Iterator[tuple[str, str | None, int]]:
            """Each word, its forced mark and its boundary id, which waits for the next word (a line's last
            word's for the next line: its speaker and start)."""
            held = None  # the last word read: (word, forced mark, speaker, times)
            for n, unit in enumerate(units):
                for ln in self._lines(unit, f"s{n}"):
                    pending.append(ln)
                    times = word_times(ln.records, len(ln.words)) if self.boundary is not None else None
                    for j, (w, f) in enumerate(zip(ln.words, forced_marks(ln, forced) or [None] * len(ln.words))):
                        t = times[j] if times is not None else (None, None)
                        if held is not None:
                            k = between(held[2], held[3], ln.speaker, t) if self.boundary is not None else NOTHING
                            yield held[0], held[1], k
                        held = (w, f, ln.speaker, t)
            if held is not None:
                yield held[0], held[1], NOTHING

        got: deque[tuple[str, np.ndarray]] = deque()
        labelled = self._segments(items(), stop)
        while True:
            while pending and len(got) >= len(pending[0].words):  # the first pending line is complete
                ln = pending.popleft()
                labels, rows = self._rows([got.popleft() for _ in ln.words])
                yield Labelled(ln, labels, render.show(ln, labels), rows if probs else None, columns=self.inventory.labels)
            nxt = next(labelled, None)
            if nxt is None:
                break
            got.append(nxt)
        for ln in pending:  # only lines without words can be left
            if ln.words:
                raise PunctkitError(f"line {ln.lineno}: the model returned no labels for its words")
            yield Labelled(ln, [], [], np.zeros((0, len(self.inventory.labels))) if probs else None,
                           columns=self.inventory.labels)

    # ------------------------------------------------------------------ showing
    def casing(self, capitalize: bool = True, recase: bool = False) -> Casing:
        """How this model's output is cased (infer/render.py: Casing): its inventory's case classes and
        its frontend's case lexicon; `capitalize=False`: every word as it came; `recase`: the model's
        case also where the input carries case."""
        return Casing(self.inventory, self.frontend.case_lexicon, capitalize, recase)

    def punctuate(self, text: str, keep_input_marks: bool = False, capitalize: bool = True,
                  recase: bool = False) -> str:
        """`label` for a text (one stream; line breaks kept): the input's words in order, as written,
        one space apart, with marks predicted (or kept) and case changed only for words (letters, letters and
        digits, false starts: infer/render.py): the model's case, except that where the input's letters carry case its
        words keep it inside sentences (`recase`: the model's case everywhere; `capitalize=False`:
        every word as it came)."""
        rules = default_substitution(self.inventory)
        lines = (text_unit(t, self.inventory, str(i), i, rules) for i, t in enumerate(text.splitlines(), 1))
        done = self.label(lines, one_stream=True, forced=keep_input_marks, casing=self.casing(capitalize, recase))
        return "\n".join(" ".join(placed(d.utt, d.shown)) for d in done)


@dataclass(frozen=True)
class Backend:
    """How a model runs: `predict` (n-best label ids and distributions of every window of a
    WindowDataset), its `name` (torch, onnx), the torch `model` (None with onnx) and the onnx `tagger`
    (None with torch; infer/ensemble.py runs members side by side)."""

    predict: Predict
    name: str = "torch"
    model: Any = None
    tagger: Any = None


@dataclass(kw_only=True)
class Punctuator(Engine):
    """A loaded model (torch or onnxruntime) with its frontend and decoding options; built by keyword."""

    runner: Backend
    frontend: Frontend
    inventory: LabelSet
    conf: dict[str, Any]
    manifest: dict[str, Any] = field(default_factory=dict)
    chunk_words: int = 10000      # words decoded at once (memory bound)
    options: DecodeOptions = field(default_factory=DecodeOptions)  # resolved decoding options
    needs_audio: bool = False     # the model reads a data directory's features (`extra`)
    boundary: BoundaryFusion | None = None  # turns and pauses as a cue (decode/boundary.py; a package's boundary.json)

    @classmethod
    def load(cls, path: str | Path | None = None, *, ngpu: int = 0, threads: int = 0, batch_size: int | None = None,
             beam: int | None = None, chunk_words: int = 10000, step: int | None = None,
             quantize: bool = False, backend: str = "auto") -> "Punctuator":
        """Load a packed model (`punctkit pack`) or a shipped one by name (`fast`); `threads`: CPU
        threads (0: the library's default); `step` replaces the packed decoding step (words between
        windows: larger is faster, up to the window); `quantize` runs the model with int8 weights
        (`quantize_int8`, CPU, torch); `backend`: torch, onnx (a package packed with --onnx; no torch
        import) or auto (onnx when possible). An ensemble package (`punctkit pack --ensemble`) is
        loaded by punctkit.load_model. `path` None: the model installed with punctkit."""
        pkg = read_package(default_model() if path is None else path)
        if isinstance(pkg, EnsemblePackage):
            raise PunctkitError(f"{pkg.path}: an ensemble package of {len(pkg.members)} models: load it with "
                                f"punctkit.load_model (punctuate -m and serve do)")
        return cls.from_package(pkg, ngpu=ngpu, threads=threads, batch_size=batch_size, beam=beam,
                                chunk_words=chunk_words, step=step, quantize=quantize, backend=backend)

    @classmethod
    def from_package(cls, pkg: Package, *, ngpu: int = 0, threads: int = 0, batch_size: int | None = None,
                     beam: int | None = None, chunk_words: int = 10000, step: int | None = None,
                     quantize: bool = False, backend: str = "auto",
                     options: DecodeOptions | None = None, show: bool = False) -> "Punctuator":
        """The model of a read package (`load`'s options); `options`: decoding options resolved
        by the caller (`punctkit decode`), in place of the packed ones with `batch_size`, `beam`, `step`;
        `show`: a progress bar over the batches (`punctkit decode`)."""
        conf = pkg.conf
        opts = options or decode_options(pkg, batch_size, beam, step)
        pad_id = pkg.frontend.pad_id
        kind = pick_backend(pkg, backend, ngpu, quantize)
        if kind == "onnx":
            from punctkit.onnx import OnnxTagger, quantized_per_batch

            if quantized_per_batch(pkg.onnx):
                opts = replace(opts, batch_size=1)  # int8: a window's labels its own, whatever runs beside it
            tagger = OnnxTagger(pkg.onnx, threads, f"{pkg.path} (model.onnx)")
            runner = Backend(lambda ds: tagger.predict(ds, opts.batch_size, pad_id, show), "onnx", tagger=tagger)
        else:
            model, device = torch_model(pkg, ngpu, threads, quantize)  # first: it imports torch (import_torch)
            if quantize:  # torch's dynamic int8 quantizes activations per batch too
                opts = replace(opts, batch_size=1)
            from punctkit.decode.decoder import predict

            missing = set(model.needs) - TEXT_KEYS
            if missing:
                raise PunctkitError(f"{pkg.path}: model {conf['model'].get('type')} needs "
                                    f"{', '.join(sorted(missing))}; a package is fed words only: decode its "
                                    f"experiment dir (punctkit decode EXP DATA OUT) for its audio")
            runner = Backend(lambda ds: predict(model, ds, opts.batch_size, device, opts.beam, 1, pad_id, show),
                             "torch", model=model)
        return cls(runner=runner, frontend=pkg.frontend, inventory=get_inventory(conf["resolved"]["inventory"]),
                   conf=conf, manifest=pkg.manifest, chunk_words=chunk_words, options=opts, boundary=pkg.boundary)

    @classmethod
    def from_experiment(cls, exp_dir: str | Path, options: DecodeOptions, *, conf: dict[str, Any] | None = None,
                        ngpu: int = 0, threads: int = 0, chunk_words: int = 10000,
                        show: bool = False) -> "Punctuator":
        """A trained model directory's model (`options.checkpoint`: None for model.avg.pt, model.best.pt,
        the last epoch) decoding with resolved `options` (decode/options.py), n-best lists included;
        `conf`: its config.yaml when already read; `threads`: torch's CPU threads (0: as they are);
        `show`: a progress bar over the batches."""
        from punctkit.batch import wants_audio
        from punctkit.decode.decoder import predict
        from punctkit.expdir import load_experiment_model, pick_device, read_model_config

        torch = import_torch()
        conf = conf or read_model_config(exp_dir)
        device = pick_device(ngpu)
        if threads:
            torch.set_num_threads(int(threads))
        model, frontend, inventory, conf = load_experiment_model(exp_dir, options.checkpoint, device, conf)
        pad_id, o = frontend.pad_id, options
        runner = Backend(lambda ds: predict(model, ds, o.batch_size, device, o.beam, o.nbest, pad_id, show),
                         "torch", model=model)
        return cls(runner=runner, frontend=frontend, inventory=inventory, conf=conf, chunk_words=chunk_words,
                   options=options, needs_audio=wants_audio(conf, model.needs))

    # --- how it runs
    @property
    def predict(self) -> Predict:
        return self.runner.predict

    @property
    def backend(self) -> str:
        return self.runner.name

    @property
    def model(self) -> Any:
        return self.runner.model

    @property
    def tagger(self) -> Any:
        return self.runner.tagger

    @property
    def card(self) -> dict[str, Any]:
        """The packed model's card (training data, test figures, ...)."""
        return self.manifest.get("card", {})

    @property
    def window(self) -> int:
        return self.options.window

    @property
    def step(self) -> int:
        return self.options.step

    @property
    def closes_streams(self) -> bool:
        return self.options.closes_streams

    @property
    def decides_jointly(self) -> bool:
        return self.options.joint

    @property
    def capital_rule(self) -> tuple[float, float]:
        return float(self.options.capital_threshold), float(self.options.capital_weight)

    def model_width(self, word: str) -> int:
        return ModelWords.width(word, self.frontend.split_contractions)

    def distributions(self, streams: list[Stream], extra: Extra | None = None) -> list[Predicted]:
        """Per stream: n-best label ids and the 1-best's distributions, one per input word. A model
        trained on IWSLT's tokens reads `don't` as `do n't` (`ModelWords`), one label back."""
        extra = extra if self.needs_audio else None  # a text model reads words only
        split = [ModelWords(s.words, self.frontend.split_contractions) for s in streams]
        if extra is not None and any(m.starts is not None for m in split):
            raise PunctkitError("this model reads contractions split (do n't) and the data directory has them "
                                "whole (don't): its audio is aligned to its words; prepare it with "
                                "--split-contractions")
        model_streams = [s if m.starts is None else Stream(s.key, s.uttids, [m.starts[i] for i in s.starts],
                                                           m.words, [IGNORE] * len(m.words), s.meta)
                         for s, m in zip(streams, split)]
        decoded = decode_windows_rows(model_streams, self.frontend, self.window, self.step, self.predict, extra,
                                      self.options.overlap)
        return [m.collapse_hyps(h, rows, self.inventory) for m, (h, rows) in zip(split, decoded)]

    def streamable(self) -> "Punctuator":
        return self
