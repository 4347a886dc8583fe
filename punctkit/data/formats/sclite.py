"""NIST sclite's transcripts: `trn` (ESPnet's and sclite's `ref.trn`/`hyp.trn`) and `stm` (segment time
marked references: TED-LIUM's, and what Kaldi's sclite scoring reads).

- trn: an utterance a line, its words, then its id in parentheses: `so what do you think (spk1-utt1)`
  (ESPnet writes a tab before the id). Read as a corpus (score, prepare, convert: the words and marks
  of the text before the id) and by punctuate (an utterance a line, its own stream, as Kaldi text is,
  its readable output a trn again); written as a corpus format, `So, what do you think? (spk1-utt1)`.
  A line without a final `(id)` is a one-line error, as is a repeated id.
- stm: `file channel speaker begin end [<label,...>] transcript` a line, `;;` comment lines between;
  read by punctuate, a segment a unit, and the segments of one recording's channel, in order, are lines
  of one stream (its key `file channel`: protocol.Reader.keyed; sentences run on across segments, as a talk's
  do; each recording ends a sentence). A segment's words share its time in proportion to their length
  (asr.text_shares), so the timed outputs (srt, vtt, timed-json) cut at sentence ends within the segments'
  times. The readable output is the stm again: each line's fields as they came, its transcript
  punctuated, comment lines kept; `ignore_time_segment_in_scoring` and an empty transcript have no words
  and come back as they were. `--format stm` writes other timed inputs as stm lines (the id as file and
  speaker, channel 1, the words' times).
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Iterator

from punctkit.data.formats.asr import NUMBER, check_one_word_id, text_shares
from punctkit.data.formats.base import (
    MAX_HELD,
    AsrUtterance,
    Frame,
    OutputOptions,
    Source,
    input_lines,
    lines_only,
    placed,
    word_spans,
)
from punctkit.data.formats.protocol import ReadContext, Reader
from punctkit.data.formats.times import Timeline, seconds
from punctkit.data.tokenize import join_marked, read_passage, split_words
from punctkit.data.utterance import Utterance
from punctkit.files import PunctkitError, where

if TYPE_CHECKING:
    from punctkit.data.labelled import Labelled

# ---------------------------------------------------------------- trn

# the id at the end of a trn line: no white space and no parentheses inside
TRN_ID = re.compile(r"\(([^\s()]+)\)\s*$")
# an id as recognizers write them: letters, digits and `_-.:/`, with a digit (`spk1-utt1`, `1272-128104-0000`)
_LIKELY_ID = re.compile(r"[\w.:/-]*\d[\w.:/-]*")


def trn_id(line: str) -> re.Match[str] | None:
    """The id at the end of a trn line (its own token: after white space, or the whole line), else None."""
    m = TRN_ID.search(line)
    return m if m is not None and (m.start() == 0 or line[m.start() - 1].isspace()) else None


def trn_kind(line: str) -> str:
    """The line classifier (detection): `trn?` for a line whose last token is an id in parentheses with a
    digit in it (`(utt1)`; TED's `(Laughter)` is not one), else ''. Never sure of itself: a trn needs half
    the lines, so text with a few such lines is never asked about."""
    m = trn_id(line)
    return "trn?" if m is not None and _LIKELY_ID.fullmatch(m.group(1)) else ""


def trn_lines(src: Source, encoding: str | None = None,
              lines: tuple[int, int] | None = None) -> Iterator[tuple[int, str, str]]:
    """(line number, utterance id, the words before it) of each non-blank line; a line without a final
    `(id)`, or a repeated id, is a one-line error."""
    seen: set[str] = set()
    for i, line in input_lines(src, encoding, lines):
        if not line.strip():
            continue
        m = trn_id(line)
        if m is None:
            raise PunctkitError(f"{where(src, i)}: expected a trn line, the words and then the utterance id in "
                                f"parentheses (`so what (utt1)`), got {line.strip()[-40:]!r}; give the format "
                                f"(--input-format, --from) to read it as another")
        uttid = m.group(1)
        if uttid in seen:
            raise PunctkitError(f"{where(src, i)}: duplicate utterance id '{uttid}'")
        seen.add(uttid)
        yield i, uttid, line[:m.start()]


@Reader
def trn_units(src: Source, ctx: ReadContext) -> Iterator[AsrUtterance]:
    """A trn for punctuate: an utterance a line, its id after its words (the readable output keeps it there)."""
    for i, uttid, text in trn_lines(src, ctx.encoding):
        p = read_passage(split_words(text), ctx.inventory, ctx.rules)
        yield AsrUtterance(uttid, p.words, p.marks, p.written, [None] * len(p.words), lineno=i,
                           frame=Frame(after=f" ({uttid})", fmt="trn"), tags=p.tags)


def _writable_id(uttid: str) -> str:
    if not uttid or any(c.isspace() or c in "()" for c in uttid):
        raise PunctkitError(f"utterance id {uttid!r} holds white space or a parenthesis, which a trn line cannot "
                            "hold: use --format jsonl (or ids of one word)")
    return uttid


def trn_out(utts: list[Utterance]) -> Iterator[str]:
    """`punctuated text (uttid)`, an utterance a line (the corpus writer)."""
    for u in utts:
        yield f"{join_marked(u.words, u.labels)} ({_writable_id(u.uttid)})".lstrip()


# ---------------------------------------------------------------- stm

SKIPPED = "ignore_time_segment_in_scoring"  # a segment sclite leaves out: no words
# the fields before the transcript: file, channel, speaker, begin, end and an optional <label>, as written
_STM_HEAD = re.compile(r"\s*(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)(\s+<[^<>\s]*>)?(\s+|$)")


def stm_kind(line: str) -> str:
    """The line classifier (detection): `stm` for 5+ fields with numbers as the 4th and 5th where the 3rd (the
    speaker) is not a number or a `<label>` follows them (a CTM line has numbers as its 3rd and 4th), else ''."""
    if line.startswith(";;"):
        return ""
    f = line.split()
    if len(f) < 5 or not (NUMBER.fullmatch(f[3]) and NUMBER.fullmatch(f[4])):
        return ""
    label = len(f) > 5 and f[5].startswith("<") and f[5].endswith(">")
    return "stm" if label or not NUMBER.fullmatch(f[2]) else ""


@Reader.keyed
def stm_units(src: Source, ctx: ReadContext) -> Iterator[tuple[str | None, AsrUtterance]]:
    """An stm for punctuate: a segment a unit, each with its stream's key, its recording's `file channel` (module
    docstring)."""
    comments: list[str] = []
    held = 0  # characters of the comments held for the next segment's line (bounded: MAX_HELD)
    seen: set[str] = set()
    i = 0
    key: str | None = None  # the stream of the last segment
    for i, line in input_lines(src, ctx.encoding):
        if line.startswith(";;") or not line.strip():
            comments.append(line)
            held += len(line) + 1
            if held > MAX_HELD:  # a long run of comments: given back as a unit of its own, without words, in the
                # stream it stands in (it ends no recording)
                yield key, AsrUtterance(ctx.line_id(i), lineno=i, has_id=False,
                                        frame=Frame("\n".join(comments), fmt="stm", lines_only=True))
                comments, held = [], 0
            continue
        m = _STM_HEAD.match(line)
        if m is None:
            raise PunctkitError(f"{where(src, i)}: expected an stm line, `file channel speaker begin end "
                                f"[<label>] words`, got {line.strip()[:40]!r}")
        file, chan, spk, begin, end = m.groups()[:5]
        start_s, end_s = _time(src, i, begin, "begin"), _time(src, i, end, "end")
        if end_s < start_s:
            raise PunctkitError(f"{where(src, i)}: the segment ends ({end}) before it begins ({begin})")
        uttid = f"{file}-{round(start_s * 100):07d}-{round(end_s * 100):07d}"
        if uttid in seen:
            uttid = f"{file}-{chan}-{round(start_s * 100):07d}-{round(end_s * 100):07d}"
        seen.add(uttid)
        head, text = line[:m.end()], line[m.end():]
        tokens = [] if text.strip() == SKIPPED else split_words(text)
        key = f"{file} {chan}"
        utt = ctx.start(uttid, lineno=i, speaker=spk,
                        source={"id": uttid, "file": file, "channel": chan, "speaker": spk, "start": start_s,
                                "end": end_s},
                        frame=Frame("".join(c + "\n" for c in comments) + head + ("" if tokens else text),
                                    fmt="stm"))
        comments, held = [], 0
        ctx.add_words(tokens, text_shares(tokens, start_s, end_s))
        yield key, utt
    if comments:  # comments after the last segment: given back, a unit without words
        yield None, AsrUtterance(ctx.line_id(i), lineno=i, has_id=False,
                                 frame=Frame("\n".join(comments), fmt="stm", lines_only=True))


def _time(src: Source, i: int, value: str, what: str) -> float:
    return seconds(value, where(src, i), f"the segment's {what} time")


def stm_emit(d: Labelled, opts: OutputOptions) -> Iterator[str]:
    """punctuate's stm output: an stm input's lines as they came, transcripts punctuated (the readable
    output; and a unit of another input's own lines alone); another timed input's unit as
    `id 1 id start end words`, its words' times (monotone: base.word_spans, counted in `opts.time_repairs`)."""
    utt, shown, src = d.utt, d.shown, opts.src
    if utt.frame is not None and (utt.frame.fmt == "stm" or lines_only(utt)):  # read from an stm
        yield utt.frame.before + " ".join(placed(utt, shown)) + utt.frame.after
        return
    if not utt.words:
        return
    check_one_word_id(utt, src, "an stm")
    spans = word_spans(utt, Timeline(opts.time_repairs))
    if spans is None:
        raise PunctkitError(f"{where(src, utt.lineno, utt.uttid)}: no word has a start time (--format stm "
                            "needs word times)")
    start, end = min(a for a, _ in spans), max(b for _, b in spans)
    yield f"{utt.uttid} 1 {utt.uttid} {start:.2f} {end:.2f} {' '.join(placed(utt, shown))}"
