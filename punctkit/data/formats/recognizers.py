"""Recognizer outputs read by punctuate: Whisper JSON (`whisper`), NeMo manifests (`nemo`), Vosk results (`vosk`)
and the others below, each a reader `(src, ctx)` (protocol.Reader); how a JSON input is told apart from the
others (by these formats' keys, the ASR services' transcripts by their shapes) is json_shapes.py's table.

- whisper: ONE JSON document, as openai-whisper (`--output_format json`), faster-whisper
  (segments dumped), WhisperX and whisper-timestamped write it, with word timestamps:
  `{"text": ..., "segments": [{"start", "end", "text", "words": [{"word", "start", "end",
  "probability"}]}]}` (WhisperX: `score`, its numerals may lack times; whisper-timestamped: the
  word in `text`); or the list of segments alone (`[{"start", "end", "text"}, ...]`, as scripts
  dump them); or whisper.cpp's `-oj`/`-ojf` (`{"transcription": [{"offsets": {"from", "to"}
  (milliseconds), "text"}]}`). A Whisper file is one stream (a talk): its segments are the
  recognizer's windows, not sentences, so sentences run across segments; each segment is one
  unit of the output (a line of readable text, a JSON line). Whisper's leading spaces are
  stripped from each word. A segment without `words` (no word timestamps) gets its words from
  its `text`, each word a share of the segment's time in proportion to its length (asr.text_shares).
- nemo: a NeMo JSON-lines manifest, one utterance (audio file) a line; the words are
  `pred_text`, else (absent or null) `text`. Every other field is kept, and `--format nemo` writes each line
  back with the punctuated text added as `pred_text_punctuated`.
- vosk: Vosk results as its API prints them: one result object, or several (one a line,
  or each pretty-printed over several lines, as `rec.Result()` returns them), or a JSON list
  of them. Final results (`result[]` of `word`, `start`, `end`, `conf`; else `text`; else the
  first of `alternatives`) are read in order as one stream (results end at pauses, not
  sentences); partial results (`partial`) repeat words of the next final one and are
  skipped, as are results without words.
- deepspeech: Mozilla DeepSpeech's and Coqui STT's `--json` (`{"transcripts": [{"confidence", "words":
  [{"word", "start_time", "duration"}]}]}`, seconds; several with `--candidate_transcripts`): the most
  confident transcript, one unit.
- azure-speech: the Azure Speech SDK's and short-audio REST API's results (`spx recognize`, a
  `SpeechRecognitionResult`'s JSON with detailed output): one object a recognized phrase, a line each,
  pretty-printed or in a list, `{"RecognitionStatus", "Offset", "Duration", "DisplayText", "NBest": [{"Lexical",
  "Words": [{"Word", "Offset", "Duration"}]}]}` in ticks (10^7 a second): a unit a phrase, one stream, the
  first alternative's words; without them its `Lexical`, else `DisplayText`, sharing the phrase's time;
  a result that recognized nothing (`NoMatch`, `InitialSilenceTimeout`) is skipped.
- pocketsphinx: PocketSphinx's JSON (`pocketsphinx single|live FILE`, `align`), one utterance a line:
  `{"b": begin, "d": duration, "p": probability, "t": "text", "w": [{"b", "d", "p", "t"}, ...]}`, seconds.
  The lines are one stream (`live` cuts at pauses, not sentences); a word's time is its `b` to `b + d`;
  fillers (`<sil>`, `<s>`, `</s>`, `[NOISE]`, `++NOISE++`) are not words (tokenize.passes_through: they
  pass through in place, docs/formats.md "Tokens that are not words"), and a pronunciation variant's
  number goes (`are(2)` is `are`, as the utterance's `t` writes it); without `w`, the words of `t` share
  the utterance's time.

Whisper and Vosk files are read whole (they are JSON documents); NeMo manifests line by line.
Errors name the file and line (for JSON syntax errors json's line and column).
"""
from __future__ import annotations

import json
import math
import re
from typing import TYPE_CHECKING, Any, Iterator

from punctkit.data.formats.asr import ID_KEYS, first_key, json_objects, speaker_of, text_shares, word_times
from punctkit.data.formats.base import AsrUtterance, OutputOptions, Source, given_words, lines_only, placed
from punctkit.data.formats.json_docs import (  # noqa: F401 (MAX_DOCUMENT_CHARS, read_json_text: re-exported)
    MAX_DOCUMENT_CHARS,
    json_error,
    json_values,
    line_of,
    one_document,
    read_json_text,
)
from punctkit.data.formats.protocol import ReadContext, Reader
from punctkit.data.formats.times import checked, seconds
from punctkit.data.tokenize import split_words
from punctkit.files import PunctkitError, where

if TYPE_CHECKING:
    from punctkit.data.labelled import Labelled

# ---------------------------------------------------------------- detection (the rest: json_shapes.py)

def pocketsphinx_shape(obj: dict[str, Any]) -> bool:
    """Whether a JSON object is a PocketSphinx utterance: `t` a string, `b` and `d` numbers, `w` (if any) a list."""
    return isinstance(obj.get("t"), str) and all(isinstance(obj.get(k), (int, float)) and
                                                 not isinstance(obj.get(k), bool) for k in ("b", "d")) \
        and isinstance(obj.get("w", []), list)


def segment_like(value: Any) -> bool:
    """Whether a JSON value is a list of Whisper segments: objects with a `text` and a `start` or `end` (detection
    also asks that none has another format's keys: json_shapes.segment_list)."""
    return isinstance(value, list) and bool(value) and all(
        isinstance(v, dict) and isinstance(v.get("text"), str) and ("start" in v or "end" in v) for v in value[:200])


# ---------------------------------------------------------------- shared

def timed_words(ctx: ReadContext, items: Any, loc: str, keys: tuple[str, ...] = ("word",)) -> None:
    """Add the word objects of `items` (the word in the first of `keys` it has; `start`, `end`, optional) to
    the context's unit."""
    if not isinstance(items, list):
        raise PunctkitError(f"{loc}: the words must be a list")
    for k, item in enumerate(items):
        key = next((c for c in keys if isinstance(item, dict) and isinstance(item.get(c), str)), None)
        if key is None:
            raise PunctkitError(f"{loc}: word {k + 1} is not an object with a {' or a '.join(map(repr, keys))} "
                                f"string")
        start, end = word_times(item, f"{loc}, word {k + 1}")
        ctx.add_word(item[key], start=start, end=end, keep={"index": k})


def text_words(ctx: ReadContext, text: str, span: tuple[float | None, float | None] = (None, None)) -> None:
    """Add the words of `text` (split on white space, never at a no-break space) to the context's unit: without
    times, or with a `span` of (start, end) seconds, each word a share of it in proportion to its length."""
    tokens = split_words(text)
    start, end = span
    timed = start is not None and end is not None and end >= start
    ctx.add_words(tokens, text_shares(tokens, start, end) if timed else None)  # type: ignore[arg-type]


# ---------------------------------------------------------------- Whisper

@Reader
def whisper_units(src: Source, ctx: ReadContext) -> Iterator[AsrUtterance]:
    """The segments of a Whisper JSON file, in order, as units of one stream (module docstring)."""
    lineno, doc = one_document(src, ctx.encoding, "a Whisper JSON object")
    cpp = isinstance(doc, dict) and isinstance(doc.get("transcription"), list) and "segments" not in doc
    segments = doc if segment_like(doc) else doc.get("transcription" if cpp else "segments") \
        if isinstance(doc, dict) else None
    if not isinstance(segments, list):
        raise PunctkitError(f"{where(src, lineno)}: expected a Whisper JSON object with a 'segments' list (or "
                            f"whisper.cpp's 'transcription', or a list of segments)")
    for k, seg in enumerate(segments):
        loc = f"{where(src, lineno)} (segment {k + 1})"
        if not isinstance(seg, dict):
            raise PunctkitError(f"{loc}: a segment must be a JSON object")
        words, said = seg.get("words"), seg.get("text")
        if not isinstance(words, (list, type(None))) or not isinstance(said, (str, type(None))):
            raise PunctkitError(f"{loc}: 'words' must be a list and 'text' a string")
        utt = ctx.start(ctx.next_id(), source=seg, lineno=lineno, has_id=False,
                        speaker=speaker_of(seg.get("speaker")))  # WhisperX's diarized segments
        if words:
            timed_words(ctx, words, loc, ("word", "text"))
        elif said:
            text_words(ctx, said, _segment_span(seg, loc, cpp))
        yield utt


def _segment_span(seg: dict[str, Any], loc: str, cpp: bool) -> tuple[float | None, float | None]:
    """A segment's (start, end) in seconds (None where it has none): `start`, `end`; whisper.cpp's `offsets`
    in milliseconds."""
    if not cpp:
        return word_times(seg, loc)
    off = seg.get("offsets")
    if not isinstance(off, dict):
        raise PunctkitError(f"{loc}: a whisper.cpp segment needs 'offsets' ({{\"from\", \"to\"}}, milliseconds)")
    start, end = (None if off.get(k) is None else seconds(off[k], loc, f"'offsets.{k}' (in milliseconds)", 1000)
                  for k in ("from", "to"))
    return start, end


# ---------------------------------------------------------------- NeMo

@Reader
def nemo_units(src: Source, ctx: ReadContext) -> Iterator[AsrUtterance]:
    """NeMo manifest lines, one utterance each (words from `nemo_text`)."""
    for i, loc, obj in json_objects(src, ctx.encoding, "a NeMo manifest"):
        text = nemo_text(obj, loc)
        uttid = first_key(obj, ID_KEYS)
        utt = ctx.start(ctx.line_id(i) if uttid in (None, "") else str(uttid), source=obj, lineno=i, has_id=False)
        text_words(ctx, text)
        yield utt


def nemo_text(obj: dict[str, Any], loc: str) -> str:
    """The words of a manifest line: `pred_text`, else (absent or null) `text`; else a one-line error
    naming the field that should hold them."""
    pred = obj.get("pred_text")
    if isinstance(pred, str):
        return pred
    if pred is None and isinstance(obj.get("text"), str):
        return obj["text"]
    if pred is not None:
        raise PunctkitError(f"{loc}: 'pred_text' must be a string, got {json.dumps(pred)[:40]}")
    if "pred_text" in obj:
        raise PunctkitError(f"{loc}: 'pred_text' is null and there is no 'text' string; give the words in "
                            f"'pred_text'")
    raise PunctkitError(f"{loc}: no 'pred_text' or 'text' string")


def nemo_out(d: Labelled, opts: OutputOptions) -> Iterator[str]:
    """The manifest line with `pred_text_punctuated` added, every other field kept (an input that
    was not a manifest: `pred_text` holds its words as given; a unit of the input's own lines alone,
    `lines_only`, none)."""
    utt, shown = d.utt, d.shown
    if lines_only(utt):
        return
    obj = dict(utt.source) if isinstance(utt.source, dict) else {}
    if "pred_text" not in obj and "text" not in obj:
        obj["pred_text"] = " ".join(placed(utt, given_words(utt)))
    obj["pred_text_punctuated"] = " ".join(placed(utt, shown))
    yield json.dumps(obj, ensure_ascii=False)


# ---------------------------------------------------------------- Vosk

def result_objects(src: Source, encoding: str | None, what: str = "a Vosk result object") -> Iterator[tuple[int, Any]]:
    """(line, result object) of a file of results (Vosk's, Azure Speech's): objects one after another (a line
    each or pretty-printed), or a JSON list of them."""
    text = read_json_text(src, encoding)
    values, err = json_values(text)
    if err is not None:
        raise json_error(src, err)
    if len(values) == 1 and isinstance(values[0][2], list):
        pos, end, items = values[0]
        values = [(pos, end, v) for v in items]
    for pos, _, obj in values:
        if not isinstance(obj, dict):
            raise PunctkitError(f"{where(src, line_of(text, pos))}: expected {what}")
        yield line_of(text, pos), obj


@Reader
def vosk_units(src: Source, ctx: ReadContext) -> Iterator[AsrUtterance]:
    """The final results of a Vosk file with words, in order, as units of one stream (module docstring)."""
    for i, obj in result_objects(src, ctx.encoding):
        loc = where(src, i)
        if "partial" in obj:
            continue
        if isinstance(obj.get("alternatives"), list) and obj["alternatives"]:
            obj = obj["alternatives"][0]
            if not isinstance(obj, dict):
                raise PunctkitError(f"{loc}: an alternative must be a JSON object")
        utt = ctx.start(source=obj, lineno=i, has_id=False)
        if "result" in obj:
            timed_words(ctx, obj["result"], loc)
        elif isinstance(obj.get("text"), str):
            text_words(ctx, obj["text"])
        else:
            raise PunctkitError(f"{loc}: a Vosk result needs 'result' (a list of words) or 'text' (a string)")
        if utt.words:
            utt.uttid = ctx.next_id()
            yield utt


# ---------------------------------------------------------------- DeepSpeech, Coqui STT

@Reader
def deepspeech_units(src: Source, ctx: ReadContext) -> Iterator[AsrUtterance]:
    """The most confident of a DeepSpeech (Coqui STT) file's transcripts, one unit (module docstring)."""
    lineno, doc = one_document(src, ctx.encoding, "a DeepSpeech JSON object")
    loc = where(src, lineno)
    found = doc.get("transcripts") if isinstance(doc, dict) else None
    if not isinstance(found, list) or not all(isinstance(t, dict) for t in found):
        raise PunctkitError(f"{loc}: expected a DeepSpeech JSON object, 'transcripts' a list of objects")
    if not found:
        return
    conf = [t.get("confidence") if isinstance(t.get("confidence"), (int, float)) else -math.inf for t in found]
    k = max(range(len(found)), key=lambda i: (conf[i], -i))  # the most confident; the first of equals
    best = found[k]
    utt = ctx.start(ctx.next_id(), source=best, lineno=lineno, has_id=False)
    if isinstance(best.get("words"), list):
        timed_words(ctx, best["words"], f"{loc} (transcript {k + 1})")
    elif isinstance(best.get("text"), str):
        text_words(ctx, best["text"])
    else:
        raise PunctkitError(f"{loc} (transcript {k + 1}): needs 'words' (a list) or 'text' (a string)")
    yield utt


# ---------------------------------------------------------------- Azure Speech (SDK, short-audio REST)

TICKS = 10_000_000  # Azure's ticks a second


@Reader
def azure_speech_units(src: Source, ctx: ReadContext) -> Iterator[AsrUtterance]:
    """Azure Speech results, a recognized phrase a unit of one stream (module docstring)."""
    for i, obj in result_objects(src, ctx.encoding, "an Azure Speech result object"):
        loc = where(src, i)
        if obj.get("RecognitionStatus", "Success") != "Success":
            continue
        best = obj.get("NBest")
        best = best[0] if isinstance(best, list) and best else {}
        if not isinstance(best, dict):
            raise PunctkitError(f"{loc}: 'NBest' must be a list of objects")
        utt = ctx.start(source=obj, lineno=i, has_id=False)
        words = best.get("Words")
        if isinstance(words, list) and words:
            for k, w in enumerate(words):
                wloc = f"{loc}, word {k + 1}"
                if not (isinstance(w, dict) and isinstance(w.get("Word"), str)):
                    raise PunctkitError(f"{wloc}: expected an object with a 'Word' string")
                start, end = _ticks(w, wloc)
                ctx.add_word(w["Word"], start=start, end=end, keep={"index": k})
        else:
            said = best.get("Lexical", obj.get("DisplayText", ""))
            if not isinstance(said, str):
                raise PunctkitError(f"{loc}: 'Lexical' and 'DisplayText' must be strings")
            text_words(ctx, said, _ticks(obj, loc))
        if utt.words:
            utt.uttid = ctx.next_id()
            yield utt


def _ticks(obj: dict[str, Any], loc: str) -> tuple[float | None, float | None]:
    """(start, end) seconds of an Azure object's `Offset` and `Duration` (ticks), None where absent."""
    start, dur = obj.get("Offset"), obj.get("Duration")
    if start is None:
        return None, None
    a = seconds(start, loc, "'Offset' (in ticks)", TICKS)
    if dur is None:
        return a, a
    seconds(dur, loc, "'Duration' (in ticks)", TICKS)
    return a, checked((float(start) + float(dur)) / TICKS, loc, "the end ('Offset' + 'Duration')", f"{start} + {dur}")


# ---------------------------------------------------------------- PocketSphinx

VARIANT = re.compile(r"\(\d+\)$")  # are(2): a dictionary's second pronunciation of `are`


@Reader
def pocketsphinx_units(src: Source, ctx: ReadContext) -> Iterator[AsrUtterance]:
    """PocketSphinx's JSON lines, an utterance a unit of one stream (module docstring)."""
    for i, loc, obj in json_objects(src, ctx.encoding, "PocketSphinx's JSON"):
        if not pocketsphinx_shape(obj):
            raise PunctkitError(f"{loc}: expected a PocketSphinx utterance, {{\"b\": begin, \"d\": duration, "
                                f"\"t\": text, \"w\": [words]}}")
        begin, end = _span(obj, loc)
        utt = ctx.start(source=obj, lineno=i, has_id=False)
        if obj.get("w"):
            for k, item in enumerate(obj["w"]):
                wloc = f"{loc}, word {k + 1}"
                if not (isinstance(item, dict) and isinstance(item.get("t"), str)):
                    raise PunctkitError(f"{wloc}: expected an object with a 't' string (the word)")
                start, stop = _span(item, wloc)
                ctx.add_word(VARIANT.sub("", item["t"]), start=start, end=stop, keep={"index": k})
        else:
            text_words(ctx, obj["t"], (begin, end))
        if utt.words:
            utt.uttid = ctx.next_id()
            yield utt


def _span(obj: dict[str, Any], loc: str) -> tuple[float, float]:
    """(begin, end) seconds of a PocketSphinx utterance or word (`b`, `b + d`)."""
    start, end = word_times({"start": obj.get("b"), "duration": obj.get("d")}, loc)
    if start is None or end is None:
        raise PunctkitError(f"{loc}: 'b' and 'd' must be numbers of seconds")
    return start, end
