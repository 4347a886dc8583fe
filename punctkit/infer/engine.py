"""The inference engine: a model ready to label words (ESPnet's `Speech2Text`).

    >>> from punctkit.infer import load_model
    >>> for done in load_model("fast")(units):
    ...     done.utt, done.labels, done.shown, done.rows

`Engine` is the one engine object: built by `load_model` (the one construction path, which
`punctkit.load` wraps: shipped names, packages, trained model directories, ensembles), it runs a
scorer (infer/scorers.py: one model, or an ensemble averaging its members' distributions) and
its call, `Engine.label`, is the one labelling call of `punctkit decode`, `punctuate`, `serve`
and `--stream`; everything a label goes through is here, once each:

- the scorer's distributions: the model's words (decode/model_words.py: `don't` read as `do n't`,
  one label back), overlapping windows and each word's most central one (decode/windows.py),
  turns and pauses fused in (decode/boundary.py);
- bounded memory: a long stream in segments of about `chunk_words` words (`Segments`), short
  independent streams batched (`_batched`), with the labels of a whole-stream decode;
- the decision (decode/decide.py: `Decision`): marks and case together (decode/joint.py), the marks
  the input forces (`forced`), and the stream's ends (decode/stream_end.py: `close_ids`);
- how the words are shown (infer/render.py).

Streaming (infer/stream.py) reads its windows through the scorer's `label_window_spans` and decides
through the same `Decision`.
"""
from __future__ import annotations

import math
import os
from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from punctkit.data.boundaries import NOTHING, between, unit_boundaries
from punctkit.data.formats import split_text
from punctkit.data.formats.base import AsrUtterance, StreamLines, placed
from punctkit.data.labelled import Labelled, word_times
from punctkit.data.labels import LabelSet, O, Substitution, default_substitution, get_inventory
from punctkit.data.streams import IGNORE, Extra, Stream
from punctkit.data.tokenize import Written
from punctkit.decode.combine import parse_weights
from punctkit.decode.decide import Decision, Forced
from punctkit.decode.joint import JointDecision
from punctkit.decode.options import DecodeOptions
from punctkit.decode.stream_end import close_ids
from punctkit.decode.windows import Hypothesis, WindowPrediction
from punctkit.files import PunctkitError
from punctkit.infer.backends import TorchRunner, decode_options, import_torch, package_runner
from punctkit.infer.render import Casing, UnitRenderer
from punctkit.infer.scorers import Ensemble, MemberRun, ModelScorer, shared_windows, side_by_side
from punctkit.package import EnsemblePackage, Package, read_package
from punctkit.pretrained import SHIPPED, default_model
from punctkit.text.frontend import Frontend

# The engine's one unit: the lines of one stream (base.StreamLines: its utterances, in order, sentences and case running
# on across them), with a data directory's `Stream` where the model reads its audio. Everything inside the engine
# takes it; `Engine.label` makes one of each unit it is given, once, at its entry (`unit_of`).
Unit = StreamLines
# what `Engine.label` takes (public: punctkit.load(...).label): a Unit (a reader's stream: Format.streams), an
# utterance, a text, a list of words, a list of utterances (lines of one stream) or a data directory's `Stream`
Given = StreamLines | AsrUtterance | str | Sequence[str] | Sequence[AsrUtterance] | Stream


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


def word_streams(word_lists: list[list[str]]) -> list[Stream]:
    """Unlabelled streams of words (keys s0, s1, ...)."""
    return [Stream(f"s{k}", [f"s{k}"], [0], words, [IGNORE] * len(words)) for k, words in enumerate(word_lists)]


def stream_lines(stream: Stream) -> list[AsrUtterance]:
    """A data directory's stream as the lines of one stream: each utterance with its words as the model reads them
    and, where the directory says (`Stream.speakers`, `Stream.times`: segments, a ctm; data/timing.py), its speaker
    and its words' times (records' `start_s`, `end_s`), from which a boundary fusion takes the turn changes and
    pauses (decode/boundary.py: unit_boundaries)."""
    known = stream.speakers is not None or stream.times is not None
    lines = []
    for k, (uttid, a, b) in enumerate(stream.utt_spans()):
        words = stream.words[a:b]
        times = stream.times[a:b] if stream.times is not None else [(None, None)] * (b - a)
        lines.append(AsrUtterance(uttid, words, [O] * (b - a), [Written("", w) for w in words],
                                  records=[{"start_s": t0, "end_s": t1} for t0, t1 in times] if known else [],
                                  speaker=stream.speakers[k] if stream.speakers is not None else None))
    return lines


def unit_of(given: Given, inventory: LabelSet, uttid: str) -> Unit:
    """What `Engine.label` is given as the engine's one `Unit`, the one conversion: a Unit as it is; an utterance
    as its one line; a list of utterances as its lines; a data directory's `Stream` as its utterances' lines
    (`stream_lines`), with it; a text (`text_unit`) or a list of words (`as_unit`) as one line made `uttid`."""
    if isinstance(given, StreamLines):
        return given
    if isinstance(given, AsrUtterance):
        return StreamLines([given])
    if isinstance(given, Stream):
        return StreamLines(stream_lines(given), given.key, given)
    if isinstance(given, str):
        return StreamLines([text_unit(given, inventory, uttid)])
    items = list(given)
    if items and isinstance(items[0], AsrUtterance):
        return StreamLines(items)  # type: ignore[arg-type]
    return StreamLines([as_unit(items, uttid=uttid)])  # type: ignore[arg-type]


@dataclass
class StreamWord:
    """One word of a stream on its way through `Segments`: the word, the mark the input forces on it (None:
    predicted) and what follows it (decode/boundary.py's id)."""

    word: str
    forced: str | None = None
    boundary: int = NOTHING


@dataclass
class Segments:
    """A long stream's words labelled in segments of about `chunk_words` words (bounded memory). Segments start on
    the window grid (a multiple of `step` of the words the model reads: `model_width`) and overlap by at least
    the longest window on each side of the words they keep, so every kept word has the same windows, and owner,
    as in a whole-stream decode; the decision runs on from one segment to the next (`prev`)."""

    engine: "Engine"
    stop: Callable[[], None] | None = None
    buf: list[StreamWord] = field(default_factory=list)
    at: list[int] = field(default_factory=list)  # per word of buf: the model words before it in the stream
    buf_start: int = 0   # the stream index of buf's first word
    keep: int = 0        # the stream index of the first word not labelled yet
    prev: int | None = None  # the label id of the last word labelled
    ctx: int = field(init=False, default=0)    # the context a segment keeps before its words: whole steps
    chunk: int = field(init=False, default=0)  # the words a segment labels: whole steps, at least a window

    def __post_init__(self) -> None:
        L, S = self.engine.window, self.engine.step
        self.ctx = math.ceil(L / S) * S
        self.chunk = S * max(math.ceil(self.engine.chunk_words / S), math.ceil(L / S))

    def __call__(self, items: Iterable[StreamWord]) -> Iterator[tuple[str, np.ndarray]]:
        """(label, distribution) of every word of the stream, in order."""
        L = self.engine.window
        for it in items:
            buf = self.buf
            self.at.append(self.at[-1] + self.engine.scorer.model_width(buf[-1].word) if buf else 0)
            buf.append(it)
            if self.buf_start + len(buf) >= self.keep + self.chunk + L:
                seg = buf[: self.keep + self.chunk + L - self.buf_start]
                yield from self._run(seg, self.keep - self.buf_start, self.keep + self.chunk - self.buf_start)
                self.keep += self.chunk
                start = self._cut(self.keep - self.ctx)
                del buf[: start - self.buf_start], self.at[: start - self.buf_start]
                self.buf_start = start
        if self.buf_start + len(self.buf) > self.keep:
            yield from self._run(self.buf, self.keep - self.buf_start, len(self.buf), last=True)

    def _cut(self, last: int) -> int:
        """The next segment's first word: the last one at or before `last` whose model words start on
        the grid (a split contraction may straddle a grid point; none found: `last` itself)."""
        for j in range(last, max(self.buf_start, last - 2 * self.ctx) - 1, -1):
            if self.at[j - self.buf_start] % self.engine.step == 0:
                return j
        return last

    def _run(self, seg: list[StreamWord], a: int, b: int, last: bool = False) -> list[tuple[str, np.ndarray]]:
        """Words a..b-1 of the segment `seg` labelled, the others their context."""
        if self.stop is not None:
            self.stop()
        eng = self.engine
        words = [w.word for w in seg]
        got = eng.scorer.distributions(word_streams([words]), None, [[w.boundary for w in seg]])[0]
        rows = got.rows
        ids = eng.decision.decide(rows[a:b], words[a:b], forced=[w.forced for w in seg[a:b]], best=got.best[a:b],
                                  prev=self.prev, first=self.buf_start + a == 0, last=last,
                                  next_row=rows[b] if b < len(seg) else None,
                                  next_word=words[b] if b < len(seg) else None)
        self.prev = ids[-1] if ids else self.prev
        return list(zip([eng.inventory.labels[i] for i in ids], rows[a:b]))


@dataclass
class _Pending:
    """A unit of `_batched` waiting for its batch: its lines (one stream), the stream the model reads, the marks
    the input forces and what follows each word (None: not weighed)."""

    lines: list[AsrUtterance]
    stream: Stream
    forced: Forced | None
    boundaries: list[int] | None


@dataclass(kw_only=True)
class Engine:
    """The engine: a model ready to label words. Its scorer gives the distributions (infer/scorers.py: one model,
    `ModelScorer`, or an `Ensemble` that averages its members'); its decision (decode/decide.py) chooses the
    labels; it is called on units and yields `Labelled` (`label`). Built by `load_model`."""

    scorer: ModelScorer | Ensemble
    chunk_words: int = 10000      # words decoded at once (memory bound)
    decision: Decision = field(init=False, repr=False)

    def __post_init__(self) -> None:
        o, fe = self.scorer.options, self.scorer.frontend
        joint = JointDecision(self.scorer.inventory, fe.case_lexicon, getattr(fe, "case_prior", None),
                              threshold=float(o.capital_threshold), weight=float(o.capital_weight), enabled=o.joint)
        self.decision = Decision(self.scorer.inventory, joint, o.closes_streams)

    # --- what the applications read
    @property
    def inventory(self) -> LabelSet:
        """The labels of the distributions, in this order."""
        return self.scorer.inventory

    @property
    def frontend(self) -> Frontend:
        """How words become tokens (an ensemble: its first member's)."""
        return self.scorer.frontend

    @property
    def options(self) -> DecodeOptions:
        """The resolved decoding options (an ensemble: the plan of infer/scorers.py's `Ensemble`)."""
        return self.scorer.options

    @property
    def window(self) -> int:
        """The longest window: the context a segment of a long stream needs on each side."""
        return self.options.window

    @property
    def step(self) -> int:
        """Windows start on multiples of this (an ensemble: a multiple of every member's step)."""
        return self.options.step

    @property
    def closes_streams(self) -> bool:
        """Whether a stream's first word begins a sentence and its last ends one (decode option `stream_end`)."""
        return self.options.closes_streams

    @property
    def backend(self) -> str:
        """How it runs: torch or onnx (an ensemble: its members', joined by `+`)."""
        return self.scorer.backend

    @property
    def card(self) -> dict[str, Any]:
        """The packed model's card (training data, test figures, ...)."""
        return self.scorer.card

    def with_options(self, **changes: Any) -> "Engine":
        """This engine with decoding options changed (`DecodeOptions`' fields: `overlap`, `joint`,
        `capital_weight`, ...): a new engine, its decision built anew."""
        return replace(self, scorer=self.scorer.with_options(**changes))

    def streamable(self) -> "Engine":
        """The engine a `PunctStream` runs: this one over its one model (an ensemble: its members as one
        tagger, else a one-line error)."""
        one = self.scorer.streamable()
        return self if one is self.scorer else Engine(scorer=one, chunk_words=self.chunk_words)

    # ------------------------------------------------------------------ labelling
    def label(self, units: str | Iterable[Given], *, one_stream: bool = False, forced: bool = False,
              casing: Casing | None = None, probs: bool = False, extra: Extra | None = None,
              nbest: int = 1, stop: Callable[[], None] | None = None) -> Iterator[Labelled]:
        """Each unit labelled, in order, in bounded memory: the one labelling call (also the engine's call).

        `units` (`Given`, each made the engine's one `Unit` here, once: `unit_of`): utterances (`AsrUtterance`,
        a list of words, or a text: `text_unit`; a text alone is one unit), each its own stream with an id of its
        own (`s0`, `s1`, ... where it has none), starting and ending sentences; the lines of one stream
        (`StreamLines`: a reader's stream, an stm's recording, as `Format.streams` gives it; or a list of
        utterances): sentences and the input's case run on across them; a data directory's `Stream` is the lines
        of its utterances (`punctkit decode`). `one_stream`: all of `units` are lines of one stream (plain text,
        read as it comes).
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
        made = (unit_of(u, self.inventory, f"s{k}") for k, u in enumerate(units))
        if one_stream:
            yield from self._one_stream(made, forced, casing, probs, stop)
        else:
            yield from self._batched(made, forced, casing, probs, extra, nbest, stop)

    __call__ = label

    def _decided(self, stream: Stream, got: WindowPrediction, forced: Forced | None,
                 nbest: int) -> tuple[list[int], list[Hypothesis] | None]:
        """A whole stream's decided label ids (`got` fused with its boundaries already), and its n-best
        (`nbest` > 1) with the decided ids first and the others' ends closed as the decision closes them."""
        ids = self.decision.decide(got.rows, stream.words, forced=forced, best=got.best)
        if nbest <= 1:
            return ids, None
        return ids, [Hypothesis(ids, got.hyps[0].score)] + [
            Hypothesis(close_ids(h.ids, got.rows, self.inventory, closes=self.closes_streams), h.score)
            for h in got.hyps[1:]]

    def _rows(self, pairs: list[tuple[str, np.ndarray]]) -> tuple[list[str], np.ndarray]:
        n = len(self.inventory.labels)
        return [p[0] for p in pairs], np.array([p[1] for p in pairs], dtype=np.float64).reshape(len(pairs), n)

    def _shown(self, lines: list[AsrUtterance], labels: list[str], rows: np.ndarray, casing: Casing, forced: bool,
               probs: bool, hyps: list[Hypothesis] | None = None) -> Iterator[Labelled]:
        """The lines of one stream labelled (`labels`, `rows`: their words', in order) and shown."""
        render = UnitRenderer(casing, len(lines) > 1, forced)  # lines of one stream: sentences run on
        worded = [k for k, u in enumerate(lines) if u.words]
        k = 0
        for n, u in enumerate(lines):
            mine, r = labels[k:k + len(u.words)], rows[k:k + len(u.words)]
            k += len(u.words)
            yield Labelled(u, mine, render.show(u, mine), r if probs else None, hyps, self.inventory.labels,
                           starts=n == worded[0] if worded else False, ends=n == worded[-1] if worded else False)

    def _flush(self, group: list[_Pending], casing: Casing, forced: bool, probs: bool, extra: Extra | None,
               nbest: int, stop: Callable[[], None] | None) -> Iterator[Labelled]:
        """A batch of independent streams labelled together, each shown."""
        todo = [p for p in group if p.stream.words]
        if todo and stop is not None:
            stop()
        bounds = [p.boundaries for p in todo] if self.scorer.uses_boundaries else None
        done = iter(self.scorer.distributions([p.stream for p in todo], extra, bounds) if todo else ())
        for p in group:
            rows = np.zeros((0, len(self.inventory.labels)))
            labels: list[str] = []
            hyps = None
            if p.stream.words:
                got = next(done)
                rows = got.rows
                ids, hyps = self._decided(p.stream, got, p.forced, nbest)
                labels = [self.inventory.labels[i] for i in ids]
            yield from self._shown(p.lines, labels, rows, casing, forced, probs, hyps)

    def _batched(self, units: Iterable[Unit], forced: bool, casing: Casing, probs: bool,
                 extra: Extra | None = None, nbest: int = 1,
                 stop: Callable[[], None] | None = None) -> Iterator[Labelled]:
        """Units, each an independent stream (an utterance, lines of one stream, or a data directory's stream),
        batched across streams up to about `chunk_words` words; a longer stream alone, in segments
        (`Segments`), unless it has audio (`extra`) or n-best lists are asked for."""
        group: list[_Pending] = []
        size = 0  # the words of `group`
        for k, unit in enumerate(units):
            lines, words = unit.lines, unit.words
            fx = [f for u in lines for f in forced_marks(u, True)] if forced else None  # type: ignore[union-attr]
            bounds = unit_boundaries(lines) if self.scorer.uses_boundaries else None
            if len(words) > self.chunk_words and extra is None and nbest <= 1:
                yield from self._flush(group, casing, forced, probs, extra, nbest, stop)
                group, size = [], 0
                items = [StreamWord(w, fx[j] if fx else None, bounds[j] if bounds else NOTHING)
                         for j, w in enumerate(words)]
                labels, rows = self._rows(list(Segments(self, stop)(items)))
                yield from self._shown(lines, labels, rows, casing, forced, probs)
                continue
            stream = unit.stream if unit.stream is not None else \
                Stream(f"s{k}", [f"s{k}"], [0], words, [IGNORE] * len(words))
            group.append(_Pending(lines, stream, fx, bounds))
            size += len(words)
            if size >= self.chunk_words:
                yield from self._flush(group, casing, forced, probs, extra, nbest, stop)
                group, size = [], 0
        yield from self._flush(group, casing, forced, probs, extra, nbest, stop)

    def _stream_words(self, units: Iterator[Unit], forced: bool, pending: deque[AsrUtterance]) -> Iterator[StreamWord]:
        """The words of lines of one stream, each line put on `pending` as it is read; each word's boundary id
        waits for the next word (a line's last word's for the next line: its speaker and start)."""
        weighs = self.scorer.uses_boundaries
        held: tuple[StreamWord, str | None, Any] | None = None  # the last word read, its speaker and times
        for unit in units:
            for ln in unit.lines:
                pending.append(ln)
                times = word_times(ln.records, len(ln.words)) if weighs else None
                for j, (w, f) in enumerate(zip(ln.words, forced_marks(ln, forced) or [None] * len(ln.words))):
                    t = times[j] if times is not None else (None, None)
                    if held is not None:
                        held[0].boundary = between(held[1], held[2], ln.speaker, t) if weighs else NOTHING
                        yield held[0]
                    held = (StreamWord(w, f), ln.speaker, t)
        if held is not None:
            yield held[0]

    def _one_stream(self, units: Iterator[Unit], forced: bool, casing: Casing, probs: bool,
                    stop: Callable[[], None] | None = None) -> Iterator[Labelled]:
        """Lines as one stream: words flow through `Segments`, lines come out whole, in order (a line that
        holds the last word read so far waits for the next word: whether it ends the stream)."""
        render = UnitRenderer(casing, True, forced)
        pending: deque[AsrUtterance] = deque()  # lines whose words are not all labelled yet
        got: deque[tuple[str, np.ndarray]] = deque()
        labelled = Segments(self, stop)(self._stream_words(units, forced, pending))
        started = ended = False  # a line with words came out; the words are all labelled
        while True:
            while pending and (len(got) > len(pending[0].words)
                               or len(got) == len(pending[0].words) and (ended or not got)):
                ln = pending.popleft()
                labels, rows = self._rows([got.popleft() for _ in ln.words])
                yield Labelled(ln, labels, render.show(ln, labels), rows if probs else None,
                               columns=self.inventory.labels, starts=bool(ln.words) and not started,
                               ends=bool(ln.words) and ended and not got)
                started = started or bool(ln.words)
            if ended:
                break
            nxt = next(labelled, None)
            if nxt is None:
                ended = True
                continue
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




# ---------------------------------------------------------------------- loading: the one construction path
ModelSpec = str | os.PathLike | Package  # a shipped model's name, a package file (or one read), an experiment dir
Models = ModelSpec | Sequence[ModelSpec]


@dataclass
class Source:
    """One model to load: a read package or a trained model directory (`model`), its name (errors, the card),
    its share of an ensemble's weights (an ensemble package's members: their packed weights) and, for a
    directory, its config once read."""

    model: Package | Path
    name: str
    share: float = 1.0
    packed: bool = False  # a member of an ensemble package
    conf: dict[str, Any] | None = None


def read_sources(model: Models | None, *, dirs: bool = False,
                 ensembles: str | None = None) -> tuple[list[Source], dict[str, Any]]:
    """The models `model` names (None: the model installed with punctkit), each package read and each
    directory taken as a trained model directory (`dirs`: also a path that does not exist, `punctkit decode`'s
    models): the one place an ensemble package becomes its members, with their packed weights shared among the
    models given (`ensembles`: what to do instead; an ensemble package is then a one-line error that says it).
    Also the ensemble package's manifest when it is the one model given (else {})."""
    if model is None:
        specs: list[ModelSpec] = [default_model()]
    elif isinstance(model, (str, os.PathLike, Package)):
        specs = [model]
    else:
        specs = list(model)
    if not specs:
        raise PunctkitError("no model given: name a shipped model (fast, accurate) or a packed model's file")
    out: list[Source] = []
    manifest: dict[str, Any] = {}
    for spec in specs:
        share = 1.0 / len(specs)
        if isinstance(spec, Package):
            out.append(Source(spec, str(spec.path), share))
            continue
        path = Path(spec)
        if str(spec) not in SHIPPED and (path.is_dir() or dirs and not path.exists()):
            out.append(Source(path, str(spec), share))
            continue
        pkg = read_package(spec)
        if isinstance(pkg, EnsemblePackage) and ensembles is not None:
            raise PunctkitError(f"{spec}: an ensemble package of {len(pkg.members)} models: {ensembles}")
        if isinstance(pkg, EnsemblePackage):
            out += [Source(m, f"{pkg.path} (model {k})", w / len(specs), packed=True)
                    for k, (m, w) in enumerate(zip(pkg.members, pkg.weights))]
            manifest = pkg.manifest if len(specs) == 1 else {}
        else:
            out.append(Source(pkg, str(spec), share))
    return out, manifest


def load_model(model: Models | None = None, weights: str | Sequence[float] | None = None, *, ngpu: int = 0,
               threads: int = 0, batch_size: int | None = None, beam: int | None = None, chunk_words: int = 10000,
               step: int | None = None, quantize: bool = False, backend: str = "auto",
               options: Sequence[DecodeOptions | None] | None = None, run: MemberRun | None = None,
               single: bool = False, show: bool = False) -> Engine:
    """The engine of any model: the one way one is built (`punctkit.load` wraps it).

    `model`: a shipped model's name (`fast`; None: the model installed with punctkit), a packed model
    (`punctkit pack`: a file, or one read), a trained model directory (`punctkit train`'s: its checkpoint
    `options.checkpoint`, torch), or several: their ensemble (infer/scorers.py), as is an ensemble package
    (`punctkit pack --ensemble`: its members with their packed weights) or one model with `weights`; `single`:
    an ensemble is a one-line error. `weights`: the members' (`0.6,0.4`; default: equal, or packed).
    `ngpu`, `threads` (CPU threads; 0: the library's default), `quantize` (torch's int8, CPU) and `backend`
    (torch, onnx: a package packed with --onnx, no torch import; auto: onnx when possible): how each model
    runs. `options`: each model's decoding options resolved by the caller (`punctkit decode`), else a
    package's packed ones (an experiment's `decode:` section) with `batch_size`, `beam` and `step` (words
    between windows: larger is faster, up to the window) over them. `run`: how an ensemble's members run
    (infer/scorers.py: MemberRun; None: side by side where they can, else in turn). `chunk_words`: words
    decoded at once (memory bound); `show`: a progress bar over the batches (`punctkit decode`)."""
    sources, manifest = read_sources(model, ensembles="give one packed model here" if single else None)
    several = weights is not None or len(sources) > 1 or any(s.packed for s in sources)
    if single and several:
        raise PunctkitError(f"{', '.join(s.name for s in sources)}: an ensemble of {len(sources)} models: give one "
                            f"packed model here")
    return build_engine(sources, weights if several else None, manifest if weights is None else {},
                        ngpu=ngpu, threads=threads, batch_size=batch_size, beam=beam, chunk_words=chunk_words,
                        step=step, quantize=quantize, backend=backend, options=options, run=run, show=show)


def build_engine(sources: list[Source], weights: str | Sequence[float] | None = None,
                 manifest: dict[str, Any] | None = None, *, ngpu: int = 0, threads: int = 0,
                 batch_size: int | None = None, beam: int | None = None, chunk_words: int = 10000,
                 step: int | None = None, quantize: bool = False, backend: str = "auto",
                 options: Sequence[DecodeOptions | None] | None = None, run: MemberRun | None = None,
                 show: bool = False) -> Engine:
    """The engine of models read by `read_sources` (`load_model`'s options): one model's, or with `weights`
    (or several models) their ensemble's, whose ONNX members over one frontend and one window plan run side by
    side (`run` None or shared: infer/scorers.py, `side_by_side`), sharing `threads` (0: every CPU this
    process may use)."""
    opts = list(options) if options is not None else [None] * len(sources)
    knobs = dict(ngpu=ngpu, batch_size=batch_size, beam=beam, step=step, quantize=quantize, backend=backend)
    pkgs = [s.model for s in sources if isinstance(s.model, Package)]
    together = (run in (None, "shared") and len(sources) > 1 and len(pkgs) == len(sources) and options is None
                and side_by_side(pkgs, dict(knobs, threads=threads)))  # type: ignore[arg-type]
    cores = int(threads or 0)
    if together:
        from punctkit.onnx import usable_cpus

        cores = cores or usable_cpus()
        threads = max(1, cores // len(sources))
    scorers = [_scorer(s, o, threads=threads, show=show, **knobs) for s, o in zip(sources, opts)]  # type: ignore[arg-type]
    if weights is None and len(sources) == 1 and not sources[0].packed:
        return Engine(scorer=scorers[0], chunk_words=chunk_words)
    shares = parse_weights(weights, len(sources)) if weights is not None else [s.share for s in sources]
    ens = Ensemble(members=scorers, weights=shares, names=[s.name for s in sources], manifest=manifest or {},
                   run="in_turn" if run in (None, "shared") else run)
    if together:
        ens.shared = shared_windows(ens.members, ens.weights, workers=min(len(sources), cores))
    return Engine(scorer=ens, chunk_words=chunk_words)


def _scorer(src: Source, options: DecodeOptions | None, *, ngpu: int, threads: int, batch_size: int | None,
            beam: int | None, step: int | None, quantize: bool, backend: str, show: bool) -> ModelScorer:
    """One model's scorer: a package's (infer/backends.py: package_runner) or a trained model directory's."""
    if isinstance(src.model, Package):
        pkg = src.model
        opts = options or decode_options(pkg.conf, batch_size, beam, step)
        runner, opts = package_runner(pkg, opts, ngpu=ngpu, threads=threads, quantize=quantize, backend=backend,
                                      show=show)
        return ModelScorer(runner=runner, frontend=pkg.frontend, conf=pkg.conf, options=opts, manifest=pkg.manifest,
                           inventory=get_inventory(pkg.conf["resolved"]["inventory"]), boundary=pkg.boundary)
    from punctkit.batch import wants_audio
    from punctkit.expdir import load_experiment_model, pick_device, read_model_config

    if quantize or backend == "onnx":
        raise PunctkitError(f"{src.model}: a trained model directory runs in torch: pack it (punctkit pack --onnx, "
                            f"--int8) for onnxruntime or int8")
    torch = import_torch()
    conf = src.conf or read_model_config(src.model)
    opts = options or decode_options(conf, batch_size, beam, step)
    device = pick_device(ngpu)
    if threads:
        torch.set_num_threads(int(threads))
    model, frontend, inventory, conf = load_experiment_model(src.model, opts.checkpoint, device, conf)
    runner = TorchRunner(model, device, opts.batch_size, opts.beam, opts.nbest, frontend.pad_id, show)
    return ModelScorer(runner=runner, frontend=frontend, inventory=inventory, conf=conf, options=opts,
                       needs_audio=wants_audio(conf, model.needs))
