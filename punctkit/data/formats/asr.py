"""ASR outputs: CTM (`ctm`) and JSON lines (`jsonl`), read by punctuate and written back punctuated.

- ctm: `uttid channel start duration word [confidence ...]`; consecutive lines with the same
  id form an utterance (`;;` comment lines are skipped). `read_ctm` is the one CTM reader
  (streaming, one utterance at a time): punctuate reads through it, and so does
  punctkit.feats.ctm, which loads a data dir's whole CTM for the acoustic models.
- jsonl: one JSON object per line, the shape ASR services emit:
  `{"id": "utt1", "words": [{"word": "hello", "start": 0.1, "end": 0.4}, ...]}`.
  Accepted keys: id from `id`, `uttid`, `utt_id` or `key` (default: FILE-LINENO);
  words from `words` (items are strings, or objects with the word in `word`,
  `text`, `token` or `punctuated_word`, and times in `start`/`start_time` and
  `end`/`end_time`, or `start` + `duration`), or else from a `text` string (with the line's own `start`
  and `end`, a segment's, each word a share of them in proportion to its length).

Words are the input's tokens separated by white space other than no-break spaces
(tokenize.split_words; a CTM/JSON word is one token), split
by punctkit.data.tokenize.read_passage: each comes with the word the model reads, the mark
that followed it (O for none) and how it was written, so that the output gives back every
word as it came (only marks and case change). A token that is only a mark (`,`) gives its
mark to the word before and is dropped (counted: protocol.ReadContext.add_word).
Word times are read and kept (for the CTM, subtitle and timed-JSON outputs, and the pause after each word for a
model that reads it: data/boundaries.py); a `text`'s words share their segment's times (index None), which
`prepare` writes as the segment's, not as word times (formats/turns.py).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator

from punctkit.data.formats.base import (
    AsrUtterance,
    OutputOptions,
    Source,
    input_lines,
    label_probs,
    lines_only,
    placed,
    word_spans,
)
from punctkit.data.formats.protocol import ReadContext, Reader
from punctkit.data.formats.times import Timeline, checked, seconds
from punctkit.data.tokenize import NonWord, passes_through, split_words, strip_space
from punctkit.data.utterance import is_one_word
from punctkit.files import PunctkitError, parse_json, where

if TYPE_CHECKING:
    from punctkit.data.labelled import Labelled

ID_KEYS = ("id", "uttid", "utt_id", "key")
WORD_KEYS = ("word", "text", "token", "punctuated_word")
START_KEYS = ("start", "start_time")
END_KEYS = ("end", "end_time")
NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")  # a time as CTM and stm lines write it


# ---------------------------------------------------------------- line classifiers (detection)

def ctm_kind(line: str) -> str:
    """`ctm` for 5+ fields with numbers as fields 3 and 4, else ''."""
    f = split_words(line)
    return "ctm" if len(f) >= 5 and NUMBER.fullmatch(f[2]) and NUMBER.fullmatch(f[3]) else ""


# ---------------------------------------------------------------- CTM

@dataclass(frozen=True)
class CtmLine:
    """One CTM line: its fields as written (for the CTM output) and its times in seconds."""

    lineno: int
    uttid: str
    channel: str
    start: str
    duration: str
    word: str
    rest: list[str]
    start_s: float
    dur_s: float


def ctm_line(src: Source, i: int, line: str) -> CtmLine | None:
    """One CTM line, its times checked; None for blank and `;;` comment lines."""
    if not line.strip() or line.startswith(";;"):
        return None
    f = split_words(line)  # a word's no-break space is the word's
    if len(f) < 5:
        raise PunctkitError(f"{where(src, i)}: expected 'uttid channel start duration word [conf]', "
                            f"got {len(f)} fields")
    loc = where(src, i, f[0])
    start, dur = seconds(f[2], loc, "the start (field 3)"), seconds(f[3], loc, "the duration (field 4)")
    checked(start + dur, loc, "the end (start + duration)", f"{f[2]} + {f[3]}")
    return CtmLine(i, f[0], f[1], f[2], f[3], f[4], f[5:], start, dur)


def read_ctm(src: Source, encoding: str | None = None) -> Iterator[tuple[str, list[CtmLine]]]:
    """(utterance id, its lines) of a CTM (`-`: stdin), one utterance at a time; an utterance
    whose lines are not together is an error."""
    cur: list[CtmLine] = []
    done: set[str] = set()
    for i, line in input_lines(src, encoding):
        rec = ctm_line(src, i, line)
        if rec is None:
            continue
        if cur and rec.uttid != cur[0].uttid:
            done.add(cur[0].uttid)
            yield cur[0].uttid, cur
            cur = []
        if not cur and rec.uttid in done:
            raise PunctkitError(f"{where(src, i)}: utterance '{rec.uttid}' continues after other utterances "
                                f"(sort the CTM by utterance and time)")
        cur.append(rec)
    if cur:
        yield cur[0].uttid, cur


@Reader
def ctm_units(src: Source, ctx: ReadContext) -> Iterator[AsrUtterance]:
    """CTM utterances for punctuate, one at a time."""
    for uttid, recs in read_ctm(src, ctx.encoding):
        utt = ctx.start(uttid, lineno=recs[0].lineno)
        for r in recs:
            ctx.add_word(r.word, start=r.start_s, end=r.start_s + r.dur_s,
                         keep={"channel": r.channel, "start": r.start, "duration": r.duration, "rest": r.rest})
        yield utt


def check_one_word_id(utt: AsrUtterance, src: Source, output: str) -> None:
    """A one-line error when an utterance id (from JSON) holds white space: `output` splits lines on it."""
    if not is_one_word(utt.uttid):
        raise PunctkitError(f"{where(src, utt.lineno)}: utterance id {utt.uttid!r} holds white space, which "
                            f"{output} line cannot hold: use --format jsonl (or ids of one word)")


def ctm_out(d: Labelled, opts: OutputOptions) -> Iterator[str]:
    """CTM lines with each word as written, cased and its mark set (`Hello,`); a CTM input's fields as they
    came, other words channel 1 and their times (monotone in the utterance: base.word_spans, counted in
    `opts.time_repairs`)."""
    utt, shown, src = d.utt, d.shown, opts.src
    check_one_word_id(utt, src, "a CTM")
    from_ctm = bool(utt.records) and isinstance(utt.records[0], dict) and "channel" in utt.records[0]
    timeline = Timeline(opts.time_repairs) if not from_ctm else None
    spans = word_spans(utt, timeline) if utt.words else []
    if spans is None:
        raise PunctkitError(f"{where(src, utt.lineno, utt.uttid)}: no word has a start time "
                            f"(--format ctm needs word times)")
    recs = utt.records + [None] * (len(shown) - len(utt.records))
    tags = iter(utt.tags)
    tag = next(tags, None)
    for k, (w, rec, (start, end)) in enumerate(zip(shown, recs, spans), 1):
        while tag is not None and tag.at < k:  # the tokens that are not words before this one, as they came
            yield _ctm_tag(utt, tag, spans, src)
            tag = next(tags, None)
        if len(split_words(w)) != 1:  # a JSON word with a space: a CTM field cannot hold it unchanged
            raise PunctkitError(f"{where(src, utt.lineno, utt.uttid)}: word {k} ({w!r}) contains a space, "
                                f"which a CTM field cannot hold: use --format jsonl")
        if isinstance(rec, dict) and "channel" in rec:
            yield " ".join([utt.uttid, rec["channel"], rec["start"], rec["duration"], w, *rec["rest"]])
        else:
            yield f"{utt.uttid} 1 {start:.3f} {end - start:.3f} {w}"
    while tag is not None:
        yield _ctm_tag(utt, tag, spans, src)
        tag = next(tags, None)


def _ctm_tag(utt: AsrUtterance, tag: NonWord, spans: list[tuple[float, float]], src: Source) -> str:
    """The CTM line of a token that is not a word: a CTM input's line as it came; else channel 1 at its own
    times, or, without them, at the end of the word before it (else the start of the word after it)."""
    rec = tag.record if isinstance(tag.record, dict) else {}
    if "channel" in rec:
        return " ".join([utt.uttid, rec["channel"], rec["start"], rec["duration"], tag.token, *rec["rest"]])
    start, end = rec.get("start_s"), rec.get("end_s")
    if start is None:
        near = spans[tag.at - 1][1] if 0 < tag.at <= len(spans) else spans[tag.at][0] if tag.at < len(spans) else None
        if near is None:
            raise PunctkitError(f"{where(src, utt.lineno, utt.uttid)}: {tag.token!r} has no time "
                                f"(--format ctm needs word times)")
        start = end = near
    end = start if end is None or end < start else end
    return f"{utt.uttid} 1 {start:.3f} {end - start:.3f} {tag.token}"


# ---------------------------------------------------------------- JSON lines

def first_key(d: dict[str, Any], keys: tuple[str, ...]) -> Any:
    """The value of the first of `keys` that `d` has, else None."""
    return next((d[k] for k in keys if k in d), None)


def word_times(item: dict[str, Any], loc: str) -> tuple[float | None, float | None]:
    """(start, end) in seconds of a JSON word (None where absent; an end from `start` + `duration` where it has
    those), each a time (times.seconds: else a one-line error at `loc`)."""
    start, end = first_key(item, START_KEYS), first_key(item, END_KEYS)
    start_s = None if start is None else seconds(start, loc, "the start")
    if end is None and start_s is not None and item.get("duration") is not None:
        dur = seconds(item["duration"], loc, "the duration")
        return start_s, checked(start_s + dur, loc, "the end (start + duration)", f"{start} + {item['duration']}")
    return start_s, None if end is None else seconds(end, loc, "the end")


def json_objects(src: Source, encoding: str | None = None, what: str = "") -> Iterator[tuple[int, str, dict]]:
    """(line number, "FILE:LINE", object) of each non-blank line of a JSON-lines file; a line that is
    not a JSON object is a one-line error (`what`: the format, for the message)."""
    for i, line in input_lines(src, encoding):
        if not line.strip():
            continue
        loc = where(src, i)
        try:
            obj = parse_json(line)
        except json.JSONDecodeError as e:
            raise PunctkitError(f"{loc}: not valid JSON ({e.msg}, column {e.colno})") from None
        if not isinstance(obj, dict):
            raise PunctkitError(f"{loc}: expected a JSON object per line{f' ({what})' if what else ''}")
        yield i, loc, obj


def text_shares(tokens: list[str], start: float, end: float) -> list[tuple[float, float]]:
    """Each token's share of [start, end] seconds, in proportion to its length (a segment's words, which
    come without times of their own; an end before the start: all at the start); a token that is not a word
    (tokenize.passes_through: `<s>`, `<unk>`) has none, standing where the word before it ends."""
    sizes = [0 if passes_through(strip_space(tok)) else len(tok) for tok in tokens]
    span, total = max(end - start, 0.0), sum(sizes) or 1
    out, t = [], start
    for size in sizes:
        d = span * size / total
        out.append((round(t, 3), round(t + d, 3)))
        t += d
    return out


def speaker_of(value: Any) -> str | None:
    """A speaker label as the readers keep it: text (a number written as text), None for none ('', null, a
    list or an object: no label a turn can be told by)."""
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        return None
    return str(value)


@Reader
def jsonl_units(src: Source, ctx: ReadContext) -> Iterator[AsrUtterance]:
    """JSON lines, one utterance each (accepted keys in the module docstring)."""
    for i, loc, obj in json_objects(src, ctx.encoding):
        uttid = first_key(obj, ID_KEYS)
        uttid = ctx.line_id(i) if uttid is None or uttid == "" else str(uttid)
        utt = ctx.start(uttid, source=obj, lineno=i, speaker=speaker_of(obj.get("speaker")))
        items = obj.get("words")
        if items is None:
            if not isinstance(obj.get("text"), str):
                raise PunctkitError(f"{loc} (utterance {uttid}): no 'words' list and no 'text' string")
            tokens = split_words(obj["text"])
            start, end = word_times(obj, f"{loc} (utterance {uttid})")  # a segment's: its words share them
            timed = start is not None and end is not None and end >= start
            # a text's words (index None): their times are shares of the segment's, not their own
            ctx.add_words(tokens, text_shares(tokens, start, end) if timed else None)  # type: ignore[arg-type]
            yield utt
            continue
        if not isinstance(items, list):
            raise PunctkitError(f"{loc} (utterance {uttid}): 'words' must be a list")
        for k, item in enumerate(items):
            if isinstance(item, str):
                token, start, end = item, None, None
            elif isinstance(item, dict) and isinstance(first_key(item, WORD_KEYS), str):
                start, end = word_times(item, f"{loc} (utterance {uttid})")
                token = first_key(item, WORD_KEYS)
            else:
                raise PunctkitError(f"{loc} (utterance {uttid}): word {k + 1} has none of the keys "
                                    f"{', '.join(WORD_KEYS)}")
            ctx.add_word(token, start=start, end=end, keep={"index": k})
        yield utt


def jsonl_out(d: Labelled, opts: OutputOptions) -> Iterator[str]:
    """The input object (or {"id"}) with `text` (punctuated) and, per word object, `punctuated` and
    `label`; utterances with ids also get `labels` (plain-text lines only `id` and `text`).
    With probability rows (--probs), `probs`: per word, {label: probability}. A unit of the input's
    own lines alone (`lines_only`: an stm's trailing comments) writes no object."""
    utt, labels, shown, rows = d.utt, d.labels, d.shown, d.rows
    if lines_only(utt):
        return
    obj = dict(utt.source) if isinstance(utt.source, dict) else {"id": utt.uttid}
    obj["text"] = " ".join(placed(utt, shown))
    if utt.has_id:
        obj["labels"] = labels
    if rows is not None and opts.inventory is not None:
        obj["probs"] = [label_probs(r, opts.inventory) for r in rows[:len(labels)]]
    items = obj.get("words")
    if isinstance(items, list):
        items = list(items)
        for w, lab, rec in zip(shown, labels, utt.records):
            k = rec["index"] if rec else None
            if k is not None and isinstance(items[k], dict):
                items[k] = dict(items[k], punctuated=w, label=lab)
        obj["words"] = items
    yield json.dumps(obj, ensure_ascii=False)

