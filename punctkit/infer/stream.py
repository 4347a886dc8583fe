"""Streaming punctuation: words in as a recognizer emits them, punctuated words out as soon as decided.

    >>> s = PunctStream(load_model("fast"), lookahead=4)
    >>> s.feed("so i 'm here")        # [Committed(word, label, shown), ...] committed by these words
    >>> s.finish()                    # the rest, at the end of the talk

A word's label is decided once `lookahead` further words have arrived (unlimited:
once no later window can hold it, a window's worth of words later) or the stream
ends (punctkit/decode/lookahead.py). Its windows are read through the engine's scorer
(`ModelScorer.label_window_spans`), its model words collapse back to input words through
`ModelWords`, and its labels are decided by the engine's `Decision` (marks and case together, the
stream's first word beginning a sentence and its last ending one), as offline labelling
decides them; a committed word is never revised, and the next sentence's capitalisation
follows the committed marks. `PunctStream` does no I/O, so an async handler (a websocket)
can drive it (`feed` is CPU work: run it in an executor, one call at a time per stream);
`stream_lines` is the line protocol of `punctkit punctuate --stream` (`punctuate_stream`).
"""
from __future__ import annotations

import contextlib
import json
import sys
from dataclasses import dataclass
from typing import Iterable, Iterator, NamedTuple, Sequence

import numpy as np

from punctkit.data.boundaries import NOTHING, between
from punctkit.data.formats import REGISTRY, cues, split_text
from punctkit.data.formats.times import seconds
from punctkit.data.labelled import Times
from punctkit.data.labels import default_substitution
from punctkit.data.tokenize import Written, split_words
from punctkit.decode.combine import combine
from punctkit.decode.lookahead import Span, delay, parse_lookahead, word_windows
from punctkit.decode.model_words import ModelWords
from punctkit.decode.windows import Hypothesis, WindowPrediction
from punctkit.files import PunctkitError, decode_lines, parse_json, stdin_lines
from punctkit.infer.engine import Engine
from punctkit.infer.render import Casing, Renderer, carries_case
from punctkit.infer.scorers import Ensemble, ModelScorer


class Committed(NamedTuple):
    """One word a stream committed (a tuple: `word, label, shown = c`)."""

    word: str   # the word the model read
    label: str  # its label (mark and case class)
    shown: str  # the word as shown: the input's word, its mark and case set


STREAM_FORMATS = ("text", "jsonl")


class PunctStream:
    """One talk's words fed in order; `feed` and `finish` return the words they commit."""

    def __init__(self, engine: Engine, lookahead: int | None = None, casing: Casing | None = None) -> None:
        """`engine`: a loaded `punctkit.Engine` of one model, or of an ensemble whose members run side by
        side (infer/scorers.py), streamed as that one tagger (`Engine.streamable`).
        `casing`: how the words are shown (`engine.casing(...)`; None: its default); whether
        the input carries case is judged on the words seen so far."""
        casing = casing if casing is not None else engine.casing()
        punct = engine.streamable()
        one = punct.scorer
        assert isinstance(one, ModelScorer)  # (`streamable`: one model, or an ensemble's members as one)
        if lookahead is not None and getattr(one.runner.model, "seq2seq", False):
            raise PunctkitError(f"model {one.conf['model'].get('type')} is an encoder-decoder: a bounded "
                                f"--lookahead is for taggers; stream it with unlimited look-ahead (inf)")
        model_conf = one.conf.get("model", {})
        built_in = model_conf.get("delay", 0) if model_conf.get("direction") == "uni" else 0
        if lookahead is not None and lookahead < built_in:
            # its labels are read from the states `delay` words on: with fewer words they are not there yet
            raise PunctkitError(f"this model reads {built_in} words ahead by construction (direction: uni, "
                                f"delay: {built_in}): stream it with --lookahead {built_in} or more")
        self.punct = punct
        self.scorer = one
        # an ensemble whose members weigh turns and pauses: where they are known, each member's own distributions
        # are fused with its boundary fusion before they are averaged (as offline: infer/scorers.py)
        self.ensemble = engine.scorer if isinstance(engine.scorer, Ensemble) and engine.scorer.uses_boundaries \
            else None
        self.lookahead = lookahead
        self.casing = casing
        self.rules = default_substitution(punct.inventory)
        self.arrived = 0     # words fed since the start (over all contexts)
        self.committed = 0   # words committed since the start
        self._reset()

    def _reset(self) -> None:
        self.words: list[str] = []        # the context's words the model reads, from index `base` on
        self.written: list[Written | None] = []  # each input word at its first model word (None: a piece after)
        self.cased: list[bool] = []        # per model word: whether the input carried case by its feed
        self.speakers: list[str | None] = []  # per model word: its feed's speaker (None: not said)
        self.times: list[Times] = []       # per model word: its input word's (start, end) seconds, None unknown
        self.input_cased = False           # some feed of this context carried case (as punctuate's lines)
        self.base = 0
        self.n = 0                        # words of this context so far
        self.done = 0                     # words of this context committed
        self.render = Renderer(self.casing)  # sentence state and the input's case, run on
        self.prev: int | None = None      # the label id of the last word committed (decode/joint.py)
        self.cache: dict[Span, WindowPrediction] = {}
        self.member_caches: list[dict[Span, WindowPrediction]] = \
            [{} for _ in self.ensemble.members] if self.ensemble is not None else []

    @property
    def pending(self) -> int:
        """Words fed but not committed yet."""
        return self.n - self.done

    def feed(self, words: str | Sequence[str], speaker: str | None = None,
             times: tuple[float | None, float | None] | None = None) -> list[Committed]:
        """Add words (a text, split on white space but never at a no-break space, or its tokens) said by
        `speaker` (None: not said; a change between feeds is a turn change), within `times` (start, end seconds
        of the feed, None unknown: its words share it, the gap to the next feed a pause); returns the words
        this commits."""
        tokens = split_words(words) if isinstance(words, str) else list(words)
        p = split_text(" ".join(tokens), self.punct.inventory, self.rules)
        m = ModelWords(p.words, self.punct.frontend.split_contractions)  # `don't` -> `do n't` for IWSLT's models
        self.words += m.words
        start, end = times if times is not None else (None, None)
        for k, w in enumerate(p.written):
            pieces = 1 + ((m.starts[k + 1] - m.starts[k] - 1) if m.starts else 0)
            self.written += [w] + [None] * (pieces - 1)
            first, last = k == 0, k == len(p.written) - 1
            self.times += [(start if first else None, end if last else None)] * pieces
        self.speakers += [speaker] * len(m.words)
        # whether the input carries case: judged per feed, from the first feed that carries it on,
        # as punctuate judges a one-stream input's lines
        self.input_cased = self.input_cased or carries_case(p.written)
        self.cased += [self.input_cased] * len(m.words)
        self.n += len(m.words)
        self.arrived += len(p.words)
        return self._commit(self.n - delay(self.punct.window, self.lookahead))

    def finish(self) -> list[Committed]:
        """End the context (the talk, or a final with --flush-on-final): commits every word held;
        the next word fed starts a new context and a sentence."""
        out = self._commit(self.n, ended=True)
        self._reset()
        return out

    def run(self, chunks: Iterable[str | Sequence[str]]) -> Iterator[Committed]:
        """The generator form: committed words as the chunks come, then the rest at their end."""
        for chunk in chunks:
            yield from self.feed(chunk)
        yield from self.finish()

    def _commit(self, upto: int, ended: bool = False) -> list[Committed]:
        """Label words done..upto-1 (decided: with `ended`, n is the stream's length) and show them.
        Marks and case are decided together (decode/joint.py): a word's label weighs the next word's
        distribution, so with a case-aware model the last decided word waits for the next call, unless
        the stream ends."""
        while self.done < upto < self.n and self.written[upto - self.base] is None:
            upto -= 1  # an input word is committed with all its model words
        if upto <= self.done:
            return []
        p, inv = self.punct, self.punct.inventory
        wanted = [(i, word_windows(i, self.n, p.window, p.step, self.lookahead, p.options.overlap))
                  for i in range(self.done, upto)]
        heads = [i for i in range(self.done, upto) if self.written[i - self.base] is not None] + [upto]
        spans = list(zip(heads, heads[1:]))  # model words i..j-1 are one input word
        words = ["".join(self.words[i - self.base:j - self.base]) for i, j in spans]
        # what follows each word (its last model word's): known once the next word has arrived
        held = self._boundaries() if self.scorer.uses_boundaries or self.ensemble is not None else None
        bounds = [held[j - 1 - self.base] for _, j in spans] if held is not None else None
        if self.ensemble is not None and bounds is not None and any(k != NOTHING for k in bounds):
            each = [m.fuse(self._input_words(m, cache, wanted, heads, held), bounds).rows
                    for m, cache in zip(self.ensemble.members, self.member_caches)]
            avg = combine(each, self.ensemble.weights)
            got = WindowPrediction([Hypothesis(avg.argmax(1).tolist())], avg)
        else:
            got = self.scorer.fuse(self._input_words(self.scorer, self.cache, wanted, heads, held), bounds)
        best, word_rows = got.best, got.rows
        held = p.decision.joint.active and not ended  # the last word waits for its successor's distribution
        if held and len(spans) < 2:
            return []
        decided = spans[:-1] if held else spans
        k = len(decided)
        label_ids = p.decision.decide(word_rows[:k], words[:k], best=best[:k], prev=self.prev,
                                      first=self.done == 0, last=ended, next_row=word_rows[-1] if held else None,
                                      next_word=words[-1] if held else None)
        out: list[Committed] = []
        for (i, j), lab in zip(decided, label_ids):
            w, label = self.written[i - self.base], inv.labels[lab]
            assert w is not None
            self.prev = lab
            self.render.input_cased = self.cased[i - self.base]
            out.append(Committed("".join(self.words[i - self.base:j - self.base]), label, self.render.show(w, label)))
        self.done = decided[-1][1]
        self.committed += len(out)
        self._trim()
        return out

    def _boundaries(self) -> list[int]:
        """The boundary id after each model word held (from `base` on): between an input word's last model word
        and the next input word's first, once that has arrived; NOTHING inside a word and after the last."""
        w = self.written
        return [between(self.speakers[k], self.times[k], self.speakers[k + 1], self.times[k + 1])
                if k + 1 < len(w) and w[k + 1] is not None else NOTHING for k in range(len(w))]

    def _input_words(self, scorer: ModelScorer, cache: dict[Span, WindowPrediction],
                     wanted: list[tuple[int, list[Span]]], heads: list[int],
                     boundaries: list[int] | None = None) -> WindowPrediction:
        """The 1-best and distributions of the input words whose model words start at `heads` (the last: the end)
        from `scorer`'s windows (`wanted`: each model word's, read through `cache`; `boundaries`: what follows
        each model word held, for a network that reads it), one per input word."""
        ids, rows = scorer.label_window_spans(self.words, self.base, wanted, cache, boundaries)
        pieces = ModelWords.of_spans([j - heads[0] for j in heads])  # back to one label per input word
        best, word_rows = pieces.collapse([ids[i] for i in range(heads[0], heads[-1])],
                                          np.stack([rows[i] for i in range(heads[0], heads[-1])]), scorer.inventory)
        return WindowPrediction([Hypothesis(best)], word_rows)

    def _trim(self) -> None:
        """Drop words no undecided word's window can reach (bounded memory)."""
        keep_from = max(self.base, self.done - self.punct.window + 1)
        del self.words[: keep_from - self.base]
        del self.written[: keep_from - self.base]
        del self.cased[: keep_from - self.base]
        del self.speakers[: keep_from - self.base]
        del self.times[: keep_from - self.base]
        self.base = keep_from
        self.cache = {s: v for s, v in self.cache.items() if s[0] >= keep_from}
        self.member_caches = [{s: v for s, v in c.items() if s[0] >= keep_from} for c in self.member_caches]


@dataclass(frozen=True)
class StreamLine:
    """One JSON line of a streaming recognizer: its text, whether it is final, its speaker and times (None: not
    said)."""

    text: str
    final: bool
    speaker: str | None = None
    times: tuple[float | None, float | None] | None = None


def _final_text(line: str, where: str) -> StreamLine:
    """One JSON line of a streaming recognizer (`text`, `final`; `speaker`, `start`, `end` where it says them);
    a line without `final` is final, one with only `partial` (Vosk) is not."""
    try:
        obj = parse_json(line)
    except json.JSONDecodeError as e:
        raise PunctkitError(f"{where}: not JSON ({e.msg}, column {e.colno}); give one object "
                            f"{{\"text\": ..., \"final\": true|false}} per line, or plain words") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("text", obj.get("partial")), str):
        raise PunctkitError(f"{where}: expected an object with a \"text\" string (and \"final\": true|false)")
    if "text" not in obj:
        return StreamLine(obj["partial"], False)
    speaker = obj.get("speaker")
    if speaker is not None and not isinstance(speaker, (str, int)) or isinstance(speaker, bool):
        raise PunctkitError(f"{where}: \"speaker\" must be a string or an integer, got {str(speaker)[:40]!r}")
    times = None
    if "start" in obj or "end" in obj:
        times = (seconds(obj["start"], where, "start") if obj.get("start") is not None else None,
                 seconds(obj["end"], where, "end") if obj.get("end") is not None else None)
    return StreamLine(obj["text"], obj.get("final", True) is not False,
                      None if speaker is None else str(speaker), times)


# formats of lines with fields around the words, which --stream would take for words: their classifiers' names
FILE_KINDS = {"ctm": "a CTM (`uttid channel start duration word`)", "stm": "an stm (`file channel speaker begin end "
              "words`)", "nlp": "Rev's NLP format (its header)"}


def _file_kind(line: str) -> str:
    """What a line is when it is a line of a format with fields (FILE_KINDS; an stm's `;;` comment), else ''."""
    if line.startswith(";;"):
        return "an stm's or a CTM's comments (`;;`)"
    for name in ("nlp", "stm", "ctm"):
        if REGISTRY[name].line_kind(line):  # type: ignore[misc]
            return FILE_KINDS[name]
    return ""


class LineProtocol:
    """The line protocol of `punctuate --stream` and of the server's `/stream` websocket, one line at
    a time: a plain line, or a JSON final, gives one output line (committed words, single spaces;
    empty when none); a JSON partial gives none; a final ends the context only with `flush_on_final`.
    `input_format`: text or jsonl; None: jsonl when the first non-blank line starts with `{`."""

    def __init__(self, stream: PunctStream, input_format: str | None = None, flush_on_final: bool = False,
                 source: str = "standard input") -> None:
        if input_format not in (None, *STREAM_FORMATS):
            raise PunctkitError(f"--stream reads {' or '.join(STREAM_FORMATS)} (plain words or JSON lines), "
                                f"not {input_format}")
        self.stream = stream
        self.fmt = input_format
        self.flush_on_final = flush_on_final
        self.source = source
        self.lineno = 0

    def line(self, line: str) -> str | None:
        """The output line for one input line (None: nothing to write)."""
        self.lineno += 1
        if self.fmt is None and line.strip():
            self.fmt = "jsonl" if line.lstrip().startswith("{") else "text"
        if self.fmt != "jsonl" and self.lineno <= 2 and (cues.timing_kind(line) or line.startswith("WEBVTT")):
            raise PunctkitError(f"{self.source} line {self.lineno}: subtitles (a cue's timing line or a WEBVTT "
                                f"header), which --stream does not read: punctuate the file without --stream")
        if self.fmt != "jsonl" and self.lineno <= 2 and (kind := _file_kind(line)):
            raise PunctkitError(f"{self.source} line {self.lineno}: a line of {kind}, which --stream does not read "
                                f"(it reads words): punctuate the file without --stream")
        if self.fmt != "jsonl":
            return " ".join(s for _, _, s in self.stream.feed(line))
        if not line.strip():
            return None
        got = _final_text(line, f"{self.source} line {self.lineno}")
        if not got.final:
            return None
        out = self.stream.feed(got.text, got.speaker, got.times) + (self.stream.finish() if self.flush_on_final else [])
        return " ".join(s for _, _, s in out)

    def end(self) -> str | None:
        """At the end of the input: the words still held, if any."""
        rest = self.stream.finish()
        return " ".join(s for _, _, s in rest) if rest else None


def stream_lines(stream: PunctStream, lines: Iterable[str], input_format: str | None = None,
                 flush_on_final: bool = False, source: str = "standard input") -> Iterator[str]:
    """`punctkit punctuate --stream` over an iterable of input lines (LineProtocol): an output line per
    plain input line or JSON final, then one with the words still held, if any. A line that cannot
    be read (a PunctkitError from `lines` or from the protocol) stops it: the words held come out
    first, then the error is raised."""
    proto = LineProtocol(stream, input_format, flush_on_final, source)
    failed: PunctkitError | None = None
    try:
        for line in lines:
            out = proto.line(line)
            if out is not None:
                yield out
    except PunctkitError as e:
        failed = e
    rest = proto.end()
    if rest is not None:
        yield rest
    if failed is not None:
        raise failed


def punctuate_stream(engine: Engine, src: str, input_format: str | None = None, encoding: str | None = None,
                     lookahead: str | None = None, flush_on_final: bool = False,
                     casing: Casing | None = None) -> int:
    """`punctkit punctuate --stream`: `src`'s lines (`-`: standard input) as they come (decoded as every
    input is: files.decode_lines; a FIFO too), each output line written to standard output and flushed
    when written; returns the words streamed."""
    state = PunctStream(engine, parse_lookahead(lookahead), casing)
    with contextlib.ExitStack() as stack:
        lines = (stdin_lines(encoding) if src == "-" else
                 decode_lines(stack.enter_context(open(src, "rb")), src, encoding))
        source = "standard input" if src == "-" else src
        for line in stream_lines(state, (text for _, text in lines), input_format, flush_on_final, source):
            sys.stdout.write(line + "\n")
            sys.stdout.flush()
    return state.committed
