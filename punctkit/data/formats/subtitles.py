"""Timed outputs of punctuate: SRT (`srt`), WebVTT (`vtt`) and timed JSON (`timed-json`).

The cue and sentence builders are pure functions of (words as shown, times, labels), testable
without a model:
- `build_cues`: cues that end at sentence ends (a sentence end always closes a cue) and
  within the limits (seconds from the first word's start to the last word's end, characters
  a line, lines a cue); a sentence too long for one cue is split after a clause mark
  (comma, ...) past its first third, else before the word that does not fit, and never right after
  a title (`Mr.`, `Dr.`: its dot is no sentence end, and its name goes with it). Words are never
  split: a word longer than a line stands alone on its line, and a word longer than the
  seconds alone in its cue (the only cues over a limit).
- `wrap`: the lines of a cue (greedy, whole words).
- `sentences`: the sentences of a stream (a sentence end, or the end of an independent
  utterance, closes one).
Cue and sentence times are the recognizer's own: the start of the first word and the end
of the last (a word without an end ends at its start), unchanged, except where they go backwards: every
word's times pass through the output's `times.Timeline` (moved forward, counted), and a cue is written in
whole milliseconds, after the cue before it and ending after it starts (`Timeline.cue`).

Units of one stream (text, Whisper, Vosk) are one flow of sentences; independent
utterances (Kaldi text, CTM, JSON lines, NeMo) each close their last cue and sentence: where a stream ends is
the engine's (`Labelled.ends`), never worked out again here.
The writers stream: a cue or sentence is written as soon as it is complete; timed JSON is
JSON lines, one sentence object a line (`{"text", "start", "end", "words": [...]}`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Iterator

from punctkit.data.formats.base import (
    OutputOptions,
    Source,
    chosen_prob,
    given_words,
    glued,
    label_probs,
    word_spans,
)
from punctkit.data.formats.times import Timeline
from punctkit.data.labels import SENTENCE_END, O, case_class, mark_of
from punctkit.data.tokenize import is_title
from punctkit.files import PunctkitError, where

if TYPE_CHECKING:
    from punctkit.data.labelled import Labelled


@dataclass(frozen=True)
class TimedWord:
    """One punctuated word with its times and where a cue may end after it."""

    text: str                   # the word as shown (mark and case set)
    start: float
    end: float
    sentence_end: bool = False  # its mark ends a sentence: the cue ends here
    clause: bool = False        # it has another mark: a good place to split a long sentence
    hard: bool = False          # an independent utterance ends here: the cue ends here
    title: bool = False         # a title (`Mr.`, `Dr.`): no cue ends after it, unless an utterance ends there


@dataclass(frozen=True)
class Limits:
    """A cue's limits: seconds (first start to last end), characters a line, lines."""

    seconds: float = 7.0
    chars: int = 42
    lines: int = 2


@dataclass(frozen=True)
class Cue:
    """One subtitle: its times and its lines of text."""

    start: float
    end: float
    lines: list[str]


def wrap(words: list[str], chars: int) -> list[str]:
    """Whole words into lines of at most `chars` characters (a longer word alone on its line)."""
    lines: list[str] = []
    for w in words:
        if lines and len(lines[-1]) + 1 + len(w) <= chars:
            lines[-1] += " " + w
        else:
            lines.append(w)
    return lines


def fits(words: list[TimedWord], limits: Limits) -> bool:
    """Whether `words` make one cue within the limits."""
    return (words[-1].end - words[0].start <= limits.seconds
            and len(wrap([w.text for w in words], limits.chars)) <= limits.lines)


def cue_of(words: list[TimedWord], limits: Limits) -> Cue:
    """The cue of `words`: the first word's start, the last word's end, the wrapped lines."""
    return Cue(words[0].start, words[-1].end, wrap([w.text for w in words], limits.chars))


def split_point(words: list[TimedWord]) -> int:
    """Where to split words that overflow a cue: after the last clause mark past their first third
    (not a lone `Well,`), else after all of them; moved back before the titles it would follow (`Mr.`)."""
    k = next((k + 1 for k in range(len(words) - 1, max(len(words) // 3, 1) - 1, -1) if words[k].clause),
             len(words))
    while k > 1 and words[k - 1].title:
        k -= 1
    return k


def build_cues(words: Iterable[TimedWord], limits: Limits = Limits()) -> Iterator[Cue]:
    """The cues of a stream of timed words (rules in the module docstring), streaming."""
    cur: list[TimedWord] = []
    for w in words:
        if cur and not fits(cur + [w], limits):
            k = split_point(cur)
            yield cue_of(cur[:k], limits)
            cur = cur[k:]
            if cur and not fits(cur + [w], limits):
                yield cue_of(cur, limits)
                cur = []
        cur.append(w)
        if w.sentence_end or w.hard:
            yield cue_of(cur, limits)
            cur = []
    if cur:
        yield cue_of(cur, limits)


def sentences(items: Iterable[tuple[Any, bool]]) -> Iterator[list[Any]]:
    """Groups of items, each closed by an item whose flag is set (a sentence end), streaming."""
    cur: list[Any] = []
    for item, ends in items:
        cur.append(item)
        if ends:
            yield cur
            cur = []
    if cur:
        yield cur


# ---------------------------------------------------------------- from punctuated units

def unit_spans(utt: Any, src: Source, fmt: str, timeline: Timeline) -> list[tuple[float, float]]:
    """(start, end) of each word of `utt` (base.word_spans, through the output's `timeline`); a unit without any
    time is a one-line error."""
    spans = word_spans(utt, timeline)
    if spans is None:
        raise PunctkitError(f"{where(src, utt.lineno, utt.uttid)}: no word has a start time "
                            f"(--format {fmt} needs word times)")
    return spans


def cue_words(units: Iterable[Labelled], opts: OutputOptions, fmt: str, timeline: Timeline) -> Iterator[TimedWord]:
    """The words of punctuated units as TimedWords, their times through the output's `timeline` (monotone; the
    last word of a stream, as the engine closed it (`Labelled.ends`: an independent utterance's, the last worded
    line's of a stream), is a hard end). A token that is not a word (`<unk>`, a lone `-`) stands in its place,
    with the word after it (base.glued)."""
    for d in units:
        utt, labels, shown, ends = d.utt, d.labels, d.shown, d.ends
        spans = unit_spans(utt, opts.src, fmt, timeline) if labels else []
        for k, (lab, text) in enumerate(zip(labels, glued(utt, shown))):
            start, end = spans[k]
            mk, title = mark_of(lab), is_title(text)
            yield TimedWord(text, start, end, mk in SENTENCE_END and not title, mk != O and mk not in SENTENCE_END,
                            ends and k == len(labels) - 1, title)


def stamp(ms: int, sep: str) -> str:
    """`HH:MM:SS,mmm` (SRT, sep `,`) or `HH:MM:SS.mmm` (WebVTT, sep `.`) of a time in whole milliseconds (more
    digits of hours past 99: times.MAX_SECONDS is 2777 hours)."""
    h, ms = divmod(ms, 3_600_000)
    m, ms = divmod(ms, 60_000)
    s, ms = divmod(ms, 1000)
    return f"{h:02d}:{m:02d}:{s:02d}{sep}{ms:03d}"


def limits_of(opts: OutputOptions) -> Limits:
    """The cue limits of the writers' options."""
    return Limits(opts.max_cue_seconds, opts.max_line_chars, opts.max_cue_lines)


def srt_lines(units: Iterable[Labelled], opts: OutputOptions) -> Iterator[str]:
    """SubRip: numbered cues, `start --> end`, the lines, a blank line."""
    timeline = Timeline(opts.time_repairs)
    for n, cue in enumerate(build_cues(cue_words(units, opts, "srt", timeline), limits_of(opts)), 1):
        start, end = timeline.cue(cue.start, cue.end)
        yield from (str(n), f"{stamp(start, ',')} --> {stamp(end, ',')}", *cue.lines, "")


def vtt_text(line: str) -> str:
    """A cue line with WebVTT's special characters escaped (`&`, `<`, `>`; so no `-->`)."""
    return line.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def vtt_lines(units: Iterable[Labelled], opts: OutputOptions) -> Iterator[str]:
    """WebVTT: the header, then cues (`start --> end`, the lines, a blank line)."""
    yield from ("WEBVTT", "")
    timeline = Timeline(opts.time_repairs)
    for cue in build_cues(cue_words(units, opts, "vtt", timeline), limits_of(opts)):
        start, end = timeline.cue(cue.start, cue.end)
        yield from (f"{stamp(start, '.')} --> {stamp(end, '.')}", *map(vtt_text, cue.lines), "")


def word_case(shown: str) -> str | None:
    """The true-case class of the shown word (punctkit.data.labels.case_class: L lower, C Capitalized,
    U UPPER, M Mixed), from its letters; None without letters."""
    return case_class(shown) if any(c.isalpha() for c in shown) else None


def json_words(units: Iterable[Labelled], opts: OutputOptions) -> Iterator[tuple[dict[str, Any], bool]]:
    """Each word as a timed-JSON object, with whether a sentence (or a stream, as the engine closed it:
    `Labelled.ends`) ends there (never on a title, `Mr.`); its times (null where it has none) through a Timeline
    of each stream (monotone within it: the utterances of a CTM or JSON lines may each start at 0)."""
    timeline = Timeline(opts.time_repairs)
    for d in units:
        utt, labels, shown, rows, ends = d.utt, d.labels, d.shown, d.rows, d.ends
        given = given_words(utt)
        for k, (lab, text) in enumerate(zip(labels, shown)):
            rec = utt.records[k] if k < len(utt.records) and isinstance(utt.records[k], dict) else {}
            start, end = rec.get("start_s"), rec.get("end_s")
            if start is not None:
                start, moved = timeline.span(start, start if end is None else end)
                end = None if end is None else moved
            mk = mark_of(lab)
            word: dict[str, Any] = {"word": given[k], "punctuated": text, "start": start, "end": end,
                                    "mark": mk, "case": word_case(text)}
            if utt.has_id:
                word["utterance"] = utt.uttid
            if rows is not None and opts.inventory is not None:
                word["p"] = chosen_prob(rows[k], opts.inventory, lab)
                word["probs"] = label_probs(rows[k], opts.inventory)
            yield word, (mk in SENTENCE_END and not is_title(text)) or (ends and k == len(labels) - 1)
        if ends:
            timeline = Timeline(opts.time_repairs)


def sentence_json(words: list[dict[str, Any]]) -> dict[str, Any]:
    """A sentence: its text, the first word's start, the last word's end, its words."""
    out: dict[str, Any] = {"text": " ".join(w["punctuated"] for w in words), "start": words[0]["start"],
                           "end": words[-1]["end"] if words[-1]["end"] is not None else words[-1]["start"]}
    if "utterance" in words[0]:
        out["utterance"] = words[0]["utterance"]
    out["words"] = words
    return out


def timed_json_lines(units: Iterable[Labelled], opts: OutputOptions) -> Iterator[str]:
    """JSON lines, a sentence a line, each written as soon as it is complete (times without values: null)."""
    for group in sentences(json_words(units, opts)):
        yield json.dumps(sentence_json(group), ensure_ascii=False)
