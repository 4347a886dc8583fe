"""Transcripts of ASR services, read by punctuate: each is one JSON document for one recording, read whole
as one stream (sentences run across its units), a unit a speaker turn or a result as the service gives it.

- rev: Rev.ai (`{"monologues": [{"speaker", "elements": [{"type": "text", "value", "ts", "end_ts"},
  {"type": "punct", "value"}]}]}`): a unit a monologue; other element types (tags) are not words.
- aws: Amazon Transcribe (`{"jobName", "results": {"transcripts", "items": [{"type": "pronunciation",
  "alternatives": [{"content"}], "start_time": "0.5", "end_time": "0.9", "speaker_label"}]}}`, times as
  strings): a unit a speaker turn (an item's `speaker_label`, else `speaker_labels.segments`), else the
  whole recording; `transcripts[0].transcript` when there are no items.
- speechmatics: Speechmatics JSON v2 (`{"format", "results": [{"type": "word", "start_time", "end_time",
  "alternatives": [{"content", "speaker"}]}]}`): as aws, items of type `word`.
- google: Google Cloud Speech-to-Text (`{"results": [{"alternatives": [{"transcript", "words": [{"word",
  "startTime": "1.400s", "endTime"}]}]}]}`; `startOffset`/`endOffset` (v2), snake case, or
  `{"seconds", "nanos"}` too): a unit a result; with diarization, whose last result repeats every word with
  its `speakerTag`, that result alone, a unit a speaker turn.
- watson: IBM Watson (`{"result_index", "results": [{"alternatives": [{"transcript", "timestamps":
  [["word", start, end], ...]}]}]}`): a unit a result.
- deepgram: Deepgram (`{"metadata", "results": {"channels": [{"alternatives": [{"words": [{"word",
  "start", "end", "speaker"}]}]}], "utterances"}}`): a unit an utterance where there are utterances, else
  a speaker turn of each channel; the raw `word`, not Deepgram's `punctuated_word`.
- assemblyai: AssemblyAI (`{"audio_url", "text", "words": [{"text", "start", "end", "speaker"}],
  "utterances"}`, times in milliseconds): a unit an utterance, else a speaker turn, else the whole text.
- huggingface: a Hugging Face `transformers` ASR pipeline's output with `return_timestamps` (`{"text",
  "chunks": [{"text", "timestamp": [start, end]}]}`; Whisper, wav2vec 2.0): one unit, a one-word chunk's word
  with its times (`"word"` timestamps), a longer chunk's words without.
- azure: Azure batch transcription (`{"recognizedPhrases": [{"speaker", "nBest": [{"lexical", "words":
  [{"word", "offsetInTicks", "durationInTicks"}]}]}]}`, 10^7 ticks a second; `offset`/`duration` as
  `PT1.5S` too): a unit a phrase (the first of `nBest`).

Words are the services' own tokens, each one word as given (asr.add_token); a token that is only a
mark gives its mark to the word before (`--keep-input-marks`). Times are seconds, checked finite and not
negative. Each unit becomes a JSON object of its own (`source`: id, speaker, words with start and end) that
`--format jsonl` writes back. A document of the wrong shape is one line naming the file, its line and
where in the document (`monologue 2, element 5`).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from punctkit.data.formats.base import AsrUtterance, Source
from punctkit.data.formats.json_docs import one_document
from punctkit.data.formats.protocol import ReadContext, Reader
from punctkit.data.formats.times import checked
from punctkit.data.tokenize import split_words
from punctkit.files import PunctkitError, where

# ---------------------------------------------------------------- what a document holds


@dataclass(frozen=True)
class Word:
    """One token of a service's transcript: as given, with its times in seconds (None where absent)."""

    token: str
    start: float | None = None
    end: float | None = None


@dataclass
class Turn:
    """One unit: its words (or, from a document without words, its text) and its speaker."""

    speaker: str | None = None
    words: list[Word] = field(default_factory=list)
    text: str = ""


class Shape(PunctkitError):
    """A document that is not of its service's shape (a one-line error once the file is named)."""


def inner(loc: str, what: str) -> str:
    """`loc` with `what` added inside its last parenthesis (`f:1 (result 2, word 3)`), or a new one."""
    return f"{loc[:-1]}, {what})" if loc.endswith(")") else f"{loc} ({what})"


def need(value: Any, kind: type | tuple[type, ...], loc: str, what: str) -> Any:
    """`value` if it is a `kind`, else a Shape error naming `what` was expected at `loc`."""
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise Shape(f"{loc}: {what}")
    return value


def items_of(obj: dict[str, Any], key: str, loc: str) -> list[Any]:
    """obj[key] as a list (absent or null: empty)."""
    value = obj.get(key)
    return [] if value is None else need(value, list, loc, f"'{key}' must be a list")


def first(items: Any, loc: str, what: str) -> dict[str, Any] | None:
    """The first object of a list (`alternatives`, `nBest`), None for an empty or absent one."""
    if items is None or items == []:
        return None
    return need(need(items, list, loc, f"{what} must be a list")[0], dict, loc, f"{what}: an object each")


_DURATION = re.compile(r"PT(?:(\d+(?:\.\d*)?)H)?(?:(\d+(?:\.\d*)?)M)?(?:(\d+(?:\.\d*)?)S)?", re.I)


def seconds(value: Any, loc: str, scale: float = 1.0) -> float | None:
    """A time in seconds: a number (times `scale`: 0.001 for milliseconds, 1e-7 for ticks), a number as a
    string, Google's `"1.400s"` or `{"seconds", "nanos"}`, or an ISO 8601 duration (`PT1.5S`); None for
    none. Anything else is a Shape error; a time not finite, negative or too late, times.checked's one-line error."""
    if value is None or value == "":
        return None
    t: float | None = None
    try:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            t = float(value) * scale
        elif isinstance(value, str):
            s = value.strip()
            m = _DURATION.fullmatch(s)
            if m and s.upper() != "PT":
                h, mi, se = (float(g) if g else 0.0 for g in m.groups())
                t = h * 3600 + mi * 60 + se
            else:
                t = float(s[:-1]) if s.endswith("s") else float(s) * scale
        elif isinstance(value, dict) and set(value) <= {"seconds", "nanos"}:
            t = float(value.get("seconds") or 0) + float(value.get("nanos") or 0) / 1e9
    except OverflowError:  # an integer beyond a float (10**400): a time too late
        t = math.inf
    except (TypeError, ValueError):
        t = None
    if t is None:
        raise Shape(f"{loc}: a time must be a number of seconds; got {str(value)[:40]!r}")
    try:
        return checked(t, loc, "the time", value)
    except PunctkitError as e:  # named as the document's other errors are (read as which service)
        raise Shape(str(e)) from None


def turns_by_speaker(words: list[tuple[Word, str | None]]) -> Iterator[Turn]:
    """Runs of words with one speaker, each a Turn (no speakers: one Turn of them all)."""
    turn: Turn | None = None
    for w, spk in words:
        if turn is None or spk != turn.speaker:
            if turn is not None:
                yield turn
            turn = Turn(speaker=spk)
        turn.words.append(w)
    if turn is not None:
        yield turn


def speaker(value: Any) -> str | None:
    """A speaker label as text (None, '' and Google's tag 0, no speaker, are None)."""
    return None if value in (None, "", 0) or isinstance(value, (dict, list)) else str(value)


# ---------------------------------------------------------------- the services


def rev_turns(doc: dict[str, Any], loc: str) -> Iterator[Turn]:
    """Rev.ai: a Turn a monologue; `text` elements are words, `punct` ones marks (spaces skipped)."""
    for m, mono in enumerate(items_of(doc, "monologues", loc), 1):
        mloc = f"{loc} (monologue {m})"
        mono = need(mono, dict, mloc, "a monologue must be an object")
        turn = Turn(speaker=speaker(mono.get("speaker_name", mono.get("speaker"))))
        for e, el in enumerate(items_of(mono, "elements", mloc), 1):
            eloc = f"{loc} (monologue {m}, element {e})"
            el = need(el, dict, eloc, "an element must be an object")
            value = need(el.get("value", ""), str, eloc, "'value' must be a string")
            if el.get("type") == "text":
                turn.words.append(Word(value, seconds(el.get("ts"), eloc), seconds(el.get("end_ts"), eloc)))
            elif el.get("type") == "punct" and value.strip():
                turn.words.append(Word(value.strip()))
        yield turn


def item_turns(items: list[Any], loc: str, word_type: str, speakers: dict[str, str] | None = None) -> Iterator[Turn]:
    """Amazon Transcribe's and Speechmatics' items (`type`, `alternatives[0].content`, `start_time`,
    `end_time`; a speaker on the item or its alternative): words of `word_type`, marks of `punctuation`,
    a Turn a speaker's run. `speakers`: a start time (as written) to speaker, for older AWS files."""
    words: list[tuple[Word, str | None]] = []
    for k, item in enumerate(items, 1):
        iloc = inner(loc, f"item {k}")
        item = need(item, dict, iloc, "an item must be an object")
        if item.get("type") not in (word_type, "punctuation"):
            continue  # Speechmatics' entities repeat the words they cover
        alt = first(item.get("alternatives"), iloc, "'alternatives'")
        content = need((alt or {}).get("content"), str, iloc, "an item needs 'alternatives' with a 'content' string")
        if item["type"] == "punctuation":
            words.append((Word(content.strip()), words[-1][1] if words else None))
            continue
        spk = item.get("speaker_label", (alt or {}).get("speaker"))
        if spk is None and speakers:
            spk = speakers.get(str(item.get("start_time")))
        words.append((Word(content, seconds(item.get("start_time"), iloc), seconds(item.get("end_time"), iloc)),
                      speaker(spk)))
    yield from turns_by_speaker(words)


def aws_turns(doc: dict[str, Any], loc: str) -> Iterator[Turn]:
    """Amazon Transcribe: the items by speaker; without items, the first transcript's text."""
    results = need(doc.get("results"), dict, loc, "'results' must be an object")
    items = items_of(results, "items", f"{loc} (results)")
    if not items:
        for t in items_of(results, "transcripts", f"{loc} (results)")[:1]:
            text = need(need(t, dict, loc, "a transcript must be an object").get("transcript", ""), str, loc,
                        "'transcript' must be a string")
            yield Turn(text=text)
        return
    speakers: dict[str, str] = {}
    labels = results.get("speaker_labels")
    if isinstance(labels, dict):
        for seg in items_of(labels, "segments", f"{loc} (speaker_labels)"):
            for it in (seg.get("items") or []) if isinstance(seg, dict) else []:
                if isinstance(it, dict) and it.get("speaker_label") is not None:
                    speakers[str(it.get("start_time"))] = str(it["speaker_label"])
    yield from item_turns(items, loc, "pronunciation", speakers)


def speechmatics_turns(doc: dict[str, Any], loc: str) -> Iterator[Turn]:
    """Speechmatics: the items of type `word` by speaker."""
    yield from item_turns(items_of(doc, "results", loc), loc, "word")


GOOGLE_TIMES = (("startTime", "endTime"), ("startOffset", "endOffset"), ("start_time", "end_time"),
                ("start_offset", "end_offset"))


def google_words(alt: dict[str, Any], loc: str) -> list[tuple[Word, str | None]]:
    """A Google alternative's words, each with its speaker (`speakerTag`, `speakerLabel`; None for none)."""
    out = []
    for k, w in enumerate(items_of(alt, "words", loc), 1):
        wloc = inner(loc, f"word {k}")
        w = need(w, dict, wloc, "a word must be an object")
        token = need(w.get("word"), str, wloc, "a word needs a 'word' string")
        start_key, end_key = next((p for p in GOOGLE_TIMES if p[0] in w or p[1] in w), GOOGLE_TIMES[0])
        spk = w.get("speakerLabel", w.get("speaker_label", w.get("speakerTag", w.get("speaker_tag"))))
        out.append((Word(token, seconds(w.get(start_key), wloc), seconds(w.get(end_key), wloc)), speaker(spk)))
    return out


def google_turns(doc: dict[str, Any], loc: str) -> Iterator[Turn]:
    """Google: a Turn a result (its first alternative's words, else its transcript); a diarized
    response's last result, which repeats every word with its speaker, alone, by speaker."""
    results = []
    for r, res in enumerate(items_of(doc, "results", loc), 1):
        rloc = f"{loc} (result {r})"
        alt = first(need(res, dict, rloc, "a result must be an object").get("alternatives"), rloc, "'alternatives'")
        if alt is not None:
            results.append((rloc, alt, google_words(alt, rloc)))
    if len(results) > 1:
        last = results[-1][2]
        earlier = sum(len(ws) for _, _, ws in results[:-1])
        if last and all(spk is not None for _, spk in last) and len(last) >= earlier > 0:
            yield from turns_by_speaker(last)
            return
    for rloc, alt, words in results:
        if words:
            yield from turns_by_speaker(words)
        else:
            yield Turn(text=need(alt.get("transcript", ""), str, rloc, "'transcript' must be a string"))


def watson_turns(doc: dict[str, Any], loc: str) -> Iterator[Turn]:
    """IBM Watson: a Turn a result, its words from `timestamps` ([word, start, end]), else `transcript`."""
    for r, res in enumerate(items_of(doc, "results", loc), 1):
        rloc = f"{loc} (result {r})"
        alt = first(need(res, dict, rloc, "a result must be an object").get("alternatives"), rloc, "'alternatives'")
        if alt is None:
            continue
        stamps = items_of(alt, "timestamps", rloc)
        turn = Turn(text="" if stamps else need(alt.get("transcript", ""), str, rloc,
                                                      "'transcript' must be a string"))
        for k, st in enumerate(stamps, 1):
            sloc = f"{loc} (result {r}, timestamp {k})"
            if not (isinstance(st, list) and len(st) == 3 and isinstance(st[0], str)):
                raise Shape(f"{sloc}: a timestamp must be [word, start, end]")
            turn.words.append(Word(st[0], seconds(st[1], sloc), seconds(st[2], sloc)))
        yield turn


def timed_list(items: list[Any], loc: str, word_key: str, scale: float = 1.0) -> list[tuple[Word, str | None]]:
    """Word objects with `word_key`, `start`, `end` (times `scale`) and `speaker`."""
    out = []
    for k, w in enumerate(items, 1):
        wloc = inner(loc, f"word {k}")
        w = need(w, dict, wloc, "a word must be an object")
        token = need(w.get(word_key), str, wloc, f"a word needs a '{word_key}' string")
        out.append((Word(token, seconds(w.get("start"), wloc, scale), seconds(w.get("end"), wloc, scale)),
                    speaker(w.get("speaker"))))
    return out


def deepgram_turns(doc: dict[str, Any], loc: str) -> Iterator[Turn]:
    """Deepgram: a Turn an utterance (`results.utterances`), else a speaker's run in each channel."""
    results = need(doc.get("results"), dict, loc, "'results' must be an object")
    utterances = items_of(results, "utterances", f"{loc} (results)")
    for u, utt in enumerate(utterances, 1):
        uloc = f"{loc} (utterance {u})"
        utt = need(utt, dict, uloc, "an utterance must be an object")
        words = timed_list(items_of(utt, "words", uloc), uloc, "word")
        yield Turn(speaker=speaker(utt.get("speaker")), words=[w for w, _ in words],
                   text="" if words else need(utt.get("transcript", ""), str, uloc, "'transcript' must be a string"))
    if utterances:
        return
    for c, chan in enumerate(items_of(results, "channels", f"{loc} (results)"), 1):
        cloc = f"{loc} (channel {c})"
        alt = first(need(chan, dict, cloc, "a channel must be an object").get("alternatives"), cloc, "'alternatives'")
        if alt is None:
            continue
        words = timed_list(items_of(alt, "words", cloc), cloc, "word")
        if words:
            yield from turns_by_speaker(words)
        else:
            yield Turn(text=need(alt.get("transcript", ""), str, cloc, "'transcript' must be a string"))


def assemblyai_turns(doc: dict[str, Any], loc: str) -> Iterator[Turn]:
    """AssemblyAI: a Turn an utterance, else a speaker's run of `words`, else the text (milliseconds)."""
    utterances = items_of(doc, "utterances", loc)
    for u, utt in enumerate(utterances, 1):
        uloc = f"{loc} (utterance {u})"
        utt = need(utt, dict, uloc, "an utterance must be an object")
        words = timed_list(items_of(utt, "words", uloc), uloc, "text", 0.001)
        yield Turn(speaker=speaker(utt.get("speaker")), words=[w for w, _ in words],
                   text="" if words else need(utt.get("text", ""), str, uloc, "'text' must be a string"))
    if utterances:
        return
    words = timed_list(items_of(doc, "words", loc), loc, "text", 0.001)
    if words:
        yield from turns_by_speaker(words)
    elif isinstance(doc.get("text"), str):
        yield Turn(text=doc["text"])


def azure_turns(doc: dict[str, Any], loc: str) -> Iterator[Turn]:
    """Azure: a Turn a recognized phrase, its best alternative's words (ticks or ISO durations), else its
    lexical text."""
    for p, phrase in enumerate(items_of(doc, "recognizedPhrases", loc), 1):
        ploc = f"{loc} (phrase {p})"
        phrase = need(phrase, dict, ploc, "a phrase must be an object")
        best = first(phrase.get("nBest"), ploc, "'nBest'")
        if best is None:
            continue
        turn = Turn(speaker=speaker(phrase.get("speaker")))
        for k, w in enumerate(items_of(best, "words", ploc), 1):
            wloc = f"{loc} (phrase {p}, word {k})"
            w = need(w, dict, wloc, "a word must be an object")
            token = need(w.get("word"), str, wloc, "a word needs a 'word' string")
            if "offsetInTicks" in w:
                start = seconds(w.get("offsetInTicks"), wloc, 1e-7)
                dur = seconds(w.get("durationInTicks"), wloc, 1e-7)
            else:
                start, dur = seconds(w.get("offset"), wloc, 1e-7), seconds(w.get("duration"), wloc, 1e-7)
            end = None if start is None or dur is None else seconds(start + dur, wloc)
            turn.words.append(Word(token, start, end))
        if not turn.words:
            turn.text = need(best.get("lexical", best.get("display", "")), str, ploc, "'lexical' must be a string")
        yield turn


def huggingface_turns(doc: dict[str, Any], loc: str) -> Iterator[Turn]:
    """A Hugging Face ASR pipeline's output with timestamps: one Turn of its chunks' words, a chunk of one word
    with the chunk's times, a longer chunk's words (segment timestamps) without; no chunks: its text."""
    turn = Turn()
    for c, chunk in enumerate(items_of(doc, "chunks", loc), 1):
        cloc = f"{loc} (chunk {c})"
        chunk = need(chunk, dict, cloc, "a chunk must be an object")
        text = need(chunk.get("text"), str, cloc, "a chunk needs a 'text' string")
        stamp = chunk.get("timestamp")
        if stamp is None:
            stamp = [None, None]
        if not (isinstance(stamp, (list, tuple)) and len(stamp) == 2):
            raise Shape(f"{cloc}: 'timestamp' must be [start, end]")
        words = split_words(text)
        if len(words) == 1:
            turn.words.append(Word(words[0], seconds(stamp[0], cloc), seconds(stamp[1], cloc)))
        else:
            turn.words.extend(Word(w) for w in words)
    if not turn.words:
        turn.text = need(doc.get("text", ""), str, loc, "'text' must be a string")
    yield turn


@dataclass(frozen=True)
class Service:
    """One service's document: what it is (`title`, for messages; `summary`, with what a unit is, `unit`, for the
    listing), how it is told apart (`claims`: by its top-level object), the keys an error names, the markers that
    tell it from a document's head, and its turns. Its entry of the JSON formats' table is json_shapes.py's."""

    name: str
    title: str
    summary: str
    unit: str
    keys: tuple[str, ...]
    claims: Callable[[dict[str, Any]], bool]
    turns: Callable[[dict[str, Any], str], Iterator[Turn]]
    markers: tuple[str, ...] = ()


def _results(obj: dict[str, Any], kind: type) -> Any:
    r = obj.get("results")
    return r if isinstance(r, kind) else None


def _first_result(obj: dict[str, Any]) -> dict[str, Any]:
    r = _results(obj, list)
    return r[0] if r and isinstance(r[0], dict) else {}


def _first_alternative(obj: dict[str, Any]) -> dict[str, Any]:
    alts = _first_result(obj).get("alternatives")
    return alts[0] if isinstance(alts, list) and alts and isinstance(alts[0], dict) else {}


SERVICES = {s.name: s for s in [
    Service("rev", "Rev.ai", "Rev.ai JSON (`monologues[].elements[]`)", "monologue", ("monologues",),
            lambda o: "monologues" in o, rev_turns, ('"monologues"',)),
    Service("aws", "Amazon Transcribe", "Amazon Transcribe JSON (`results.items[]`)", "speaker turn",
            ("results.items", "results.transcripts"),
            lambda o: bool(_results(o, dict)) and ("items" in o["results"] or "transcripts" in o["results"]),
            aws_turns, ('"jobName"', '"transcripts"', '"pronunciation"')),
    Service("speechmatics", "Speechmatics", "Speechmatics JSON v2 (`results[]` of type word)", "speaker turn",
            ("results[].type",), lambda o: "type" in _first_result(o) or "format" in o and "job" in o,
            speechmatics_turns, ('"attaches_to"', '"is_eos"')),
    Service("google", "Google Speech-to-Text",
            "Google Cloud Speech-to-Text JSON (`results[].alternatives[].words[]`)", "result",
            ("results[].alternatives",),
            lambda o: "alternatives" in _first_result(o) and "timestamps" not in _first_alternative(o)
            and "result_index" not in o and "type" not in _first_result(o), google_turns,
            ('"resultEndTime"', '"startOffset"', '"startTime"', '"languageCode"')),
    Service("watson", "IBM Watson", "IBM Watson JSON (`results[].alternatives[].timestamps`)", "result",
            ("results[].alternatives[].timestamps",),
            lambda o: "result_index" in o or "timestamps" in _first_alternative(o), watson_turns,
            ('"result_index"', '"timestamps"')),
    Service("deepgram", "Deepgram", "Deepgram JSON (`results.channels[].alternatives[].words[]`)",
            "utterance or speaker turn", ("results.channels",),
            lambda o: bool(_results(o, dict)) and "channels" in o["results"], deepgram_turns, ('"channels"',)),
    Service("assemblyai", "AssemblyAI", "AssemblyAI JSON (`words[]`, milliseconds)", "utterance or speaker turn",
            ("audio_url", "audio_duration"),
            lambda o: ("audio_url" in o or "audio_duration" in o) and ("words" in o or "text" in o),
            assemblyai_turns, ('"audio_url"', '"audio_duration"')),
    Service("huggingface", "a Hugging Face ASR pipeline",
            "a Hugging Face ASR pipeline's JSON (`chunks[]` of text and timestamp)", "recording", ("chunks",),
            lambda o: isinstance(o.get("chunks"), list) and "text" in o, huggingface_turns, ('"chunks"',)),
    Service("azure", "Azure", "Azure batch transcription JSON (`recognizedPhrases[]`)", "phrase",
            ("recognizedPhrases",), lambda o: "recognizedPhrases" in o or "combinedRecognizedPhrases" in o,
            azure_turns, ('"recognizedPhrases"', '"combinedRecognizedPhrases"')),
]}


# ---------------------------------------------------------------- the reader


def service_units(kind: str) -> Reader:
    """The units reader of service `kind` (the registry's `units`): the document's turns in order, one
    unit each, as one stream."""
    service = SERVICES[kind]

    def units(src: Source, ctx: ReadContext) -> Iterator[AsrUtterance]:
        lineno, doc = one_document(src, ctx.encoding, f"one {service.title} JSON object")
        loc = where(src, lineno)
        if not isinstance(doc, dict) or not service.claims(doc):
            raise PunctkitError(f"{loc}: expected a JSON object as {service.title} writes it (with "
                                f"{' or '.join(service.keys)}); give --input-format if it is another format")
        try:
            for turn in service.turns(doc, loc):
                yield unit(turn, ctx, lineno)
        except Shape as e:
            raise PunctkitError(f"{e} (read as {service.title}: give --input-format if it is another format)") \
                from None

    units.__doc__ = f"The turns of a {kind} JSON document, in order, as units of one stream."
    return Reader(units)


def unit(turn: Turn, ctx: ReadContext, lineno: int) -> AsrUtterance:
    """A Turn as the context's next unit, whose source is a JSON object of its own (id, speaker, words)."""
    uttid = ctx.next_id()
    tokens = [Word(t) for t in split_words(turn.text)] if not turn.words else turn.words
    source: dict[str, Any] = {"id": uttid}
    if turn.speaker is not None:
        source["speaker"] = turn.speaker
    source["words"] = [{"word": w.token, "start": w.start, "end": w.end} for w in tokens]
    utt = ctx.start(uttid, source=source, lineno=lineno, has_id=False, speaker=turn.speaker)
    for k, w in enumerate(tokens):
        ctx.add_word(w.token, start=w.start, end=w.end, speaker=turn.speaker, keep={"index": k})
    return utt
