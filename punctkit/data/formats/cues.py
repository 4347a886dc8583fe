"""Subtitles read by punctuate: SubRip (`srt`) and WebVTT (`vtt`), as recognizers write them (Whisper's
`--output_format srt|vtt`, vosk-transcriber, caption services), and Whisper's segment table (`whisper-tsv`), one
stream a file, a unit a cue (a segment).

- srt: blocks of an optional number line, a timing line `00:00:01,500 --> 00:00:03,000` and the cue's text
  lines, blank lines between blocks.
- vtt: a `WEBVTT` header, then blocks of an optional cue id, a timing line (`00:01.500 --> 00:03.000`, hours
  optional, `.` or `,` before the milliseconds, cue settings after it) and text lines; NOTE, STYLE and REGION
  blocks are skipped.

- whisper-tsv: Whisper's `--output_format tsv`, a `start<TAB>end<TAB>text` header, then a segment a line, its
  times in whole milliseconds; its readable output is the table again, the header and times as they came.

A cue's text lines are its words (tags such as `<i>`, `<c.colour>` and inline times `<00:00:01.000>` are not
words; `&amp;` and the other HTML entities are read as the characters they stand for). A subtitle carries
times per cue, not per word: each word gets a share of its cue's time in proportion to its length, so that
`--format srt` and `vtt` (cues re-cut at sentence ends) and timed JSON have times within the cue's. A block
whose timing line does not parse is a one-line error naming the file and line; a line meant as one (`timing_like`:
`-->`, or times around an arrow) starts a cue even without a blank line before it (`cue_blocks`), never words.
"""
from __future__ import annotations

import html
import re
from typing import Iterator

from punctkit.data.formats.asr import text_shares
from punctkit.data.formats.base import MAX_HELD, AsrUtterance, Frame, Source, input_lines
from punctkit.data.formats.protocol import ReadContext, Reader
from punctkit.data.formats.times import checked, seconds
from punctkit.data.tokenize import split_words
from punctkit.files import PunctkitError, where

_TIME = r"(?:(\d+):)?(\d{1,2}):(\d{2})[,.](\d{1,3})"
TIMING = re.compile(rf"^\s*{_TIME}\s*-->\s*{_TIME}(?:\s.*)?$")
# a line meant as a timing line: a time-like number (digits and `:.,;`), an arrow, another (`00:00:02,000 -> 00:00:03`)
_LOOSE_TIME = r"\d+(?:[:.,;]\d+)+"
TIMING_LIKE = re.compile(rf"^\s*{_LOOSE_TIME}\s*-+>\s*{_LOOSE_TIME}")
_TAG = re.compile(r"<[^>]*>")


def timing_line(line: str) -> tuple[float, float] | None:
    """(start, end) in seconds of a cue's timing line, else None."""
    m = TIMING.match(line)
    if m is None:
        return None
    g = m.groups()
    return _seconds(*g[:4]), _seconds(*g[4:])


def _seconds(h: str | None, m: str, s: str, ms: str) -> float:
    return float(h or 0) * 3600 + int(m) * 60 + int(s) + int(ms.ljust(3, "0")) / 1000  # hours of any length


def timing_kind(line: str) -> str:
    """The line classifier (detection): `srt` for a cue's timing line with `,` before the milliseconds, `vtt`
    with `.`, else ''."""
    m = TIMING.match(line)
    if m is None:
        return ""
    return "srt" if "," in line.split("-->", 1)[0] else "vtt"


def timing_like(line: str) -> bool:
    """Whether a line is, or is meant as, a cue's timing line: one with `-->` (WebVTT: cue text never holds
    it), or a time, an arrow and a time (`00:00:02,000 -> 00:00:03,000`). In a subtitle file such a line
    starts a cue, and one that does not parse (`timing_line`) is an error naming it; a line of plain text
    like it is a look-alike (text.looks_like)."""
    return "-->" in line or TIMING_LIKE.match(line) is not None


def cues_kind(head: str) -> str | None:
    """`vtt` for a text that starts with a WEBVTT header (`WEBVTT` alone on its line, or followed by a space or tab
    and text where the head has a cue's `-->`: so a text or two-column file whose first word is `WEBVTT` stays
    one); `srt` for one whose first block starts a cue: a timing line, or a line meant as one (`TIMING_LIKE`)
    alone or after a cue number (`timing_like`; one that does not parse is then the reader's one-line error, not
    words); else None."""
    first = [ln.strip() for ln in head.lstrip("\ufeff").splitlines()[:8] if ln.strip()][:2]
    if first and (first[0] == "WEBVTT" or first[0].startswith(("WEBVTT ", "WEBVTT\t")) and "-->" in head):
        return "vtt"
    if first and (timing_line(first[0]) or TIMING_LIKE.match(first[0])):
        return "srt"
    if len(first) == 2 and first[0].isdigit() and timing_like(first[1]):
        return "srt"
    return None


def cue_shares(tokens: list[str], start: float, end: float) -> list[tuple[float, float]]:
    """The times of a cue's (or a TSV row's) words: each a share of its time (asr.text_shares); a cue that ends
    before it starts gives each word its times as they are, which the writers move forward and count
    (times.Timeline), so that punctuate says so."""
    return text_shares(tokens, start, end) if end >= start else [(start, end)] * len(tokens)


def cue_text(lines: list[str]) -> str:
    """The words of a cue's text lines: tags dropped, entities read."""
    return " ".join(html.unescape(_TAG.sub("", ln)) for ln in lines)


def blocks(src: Source, encoding: str | None) -> Iterator[tuple[int, list[str]]]:
    """(first line number, lines) of each block of non-blank lines."""
    start, cur = 0, []
    for i, line in input_lines(src, encoding):
        if line.strip():
            if not cur:
                start = i
            cur.append(line.lstrip("\ufeff").rstrip())
        elif cur:
            yield start, cur
            cur = []
    if cur:
        yield start, cur


_NOT_IDS = ("WEBVTT", "NOTE", "STYLE", "REGION")


def cue_blocks(src: Source, encoding: str | None) -> Iterator[tuple[int, list[str]]]:
    """(first line number, lines) of each cue of a subtitle file, and of each other block (a WEBVTT header,
    NOTE): the blocks of non-blank lines (`blocks`), split before each line meant as a timing line
    (`timing_like`) after a block's first, so that a cue that follows the one before without a blank line is
    still a cue (its number and timing line are no words). The line before a timing line is the cue's number
    (or id) when it is a block's first line (not WEBVTT, NOTE, ...) or, without a blank line before it, a
    number in a file whose first cue has one (in a file without cue numbers, a line `2020` is the words of
    the cue before)."""
    numbered: bool | None = None  # whether the file's first cue has a number
    for i, lines in blocks(src, encoding):
        starts = []
        for j, line in enumerate(lines):
            if not timing_like(line):
                continue
            if numbered is None:
                numbered = j > 0 and lines[j - 1].strip().isdigit()
            has_id = j == 1 and not lines[0].startswith(_NOT_IDS) or \
                j > 1 and numbered and lines[j - 1].strip().isdigit()
            starts.append(j - 1 if has_id else j)
        starts = [s for s in starts if s > 0]
        for a, b in zip([0, *starts], [*starts, len(lines)]):
            if a < b:
                yield i + a, lines[a:b]


def cue_units(kind: str) -> Reader:
    """The units reader of `srt` or `vtt` (the registry's `units`): a cue a unit, one stream."""

    def units(src: Source, ctx: ReadContext) -> Iterator[AsrUtterance]:
        for k, (i, lines) in enumerate(cue_blocks(src, ctx.encoding)):
            if kind == "vtt" and k == 0 and lines[0].startswith("WEBVTT"):
                continue  # the header block
            if kind == "vtt" and lines[0].split(" ", 1)[0] in ("NOTE", "STYLE", "REGION"):
                continue
            at = next((j for j, ln in enumerate(lines[:2]) if timing_like(ln)), None)
            times = timing_line(lines[at]) if at is not None else None
            if times is None:  # the line that should be it: the one with `-->`, else the one after a number
                j = at if at is not None else int(lines[0].strip().isdigit() and len(lines) > 1)
                raise PunctkitError(f"{where(src, i + j)}: expected a cue's timing line (`00:00:01,500 --> "
                                    f"00:00:03,000`), got {lines[j][:60]!r}; give --input-format for another "
                                    f"format")
            for t, what in zip(times, ("the cue's start", "the cue's end")):
                checked(t, where(src, i + at), what, lines[at].strip()[:40])
            uttid = ctx.next_id()
            utt = ctx.start(uttid, source={"cue": ctx.count, "start": times[0], "end": times[1]}, lineno=i,
                            has_id=False)
            tokens = split_words(cue_text(lines[at + 1:]))
            ctx.add_words(tokens, cue_shares(tokens, *times))
            yield utt

    units.__doc__ = f"The cues of a {kind} file, in order, as units of one stream (module docstring)."
    return Reader(units)


# ---------------------------------------------------------------- Whisper's segment table

TSV_HEAD = "start\tend\ttext"
_TSV_ROW = re.compile(r"^(\d+)\t(\d+)\t(.*)$")


def tsv_kind(line: str) -> str:
    """The line classifier (detection): `whisper-tsv` for its header, `whisper-tsv?` for a row (two whole numbers
    and a text, tab-separated: not sure by itself), else ''."""
    if line.strip() == TSV_HEAD:
        return "whisper-tsv"
    return "whisper-tsv?" if _TSV_ROW.match(line) else ""


@Reader
def tsv_units(src: Source, ctx: ReadContext) -> Iterator[AsrUtterance]:
    """Whisper's TSV, a segment a unit of one stream, its words sharing its time; a row that is not two whole
    numbers of milliseconds and a text is a one-line error naming it."""
    head = ""
    for i, line in input_lines(src, ctx.encoding):
        row = line.lstrip("\ufeff") if i == 1 else line
        if not row.strip() or (not ctx.count and row.strip() == TSV_HEAD):
            head += line + "\n"
            if len(head) > MAX_HELD:  # a long run of blank lines: given back as a unit without words
                yield AsrUtterance(ctx.line_id(i), lineno=i, has_id=False,
                                   frame=Frame(head[:-1], fmt="whisper-tsv", lines_only=True))
                head = ""
            continue
        m = _TSV_ROW.match(row)
        if m is None:
            raise PunctkitError(f"{where(src, i)}: expected a row of Whisper's TSV, `start<TAB>end<TAB>text` with "
                                f"the times in milliseconds, got {row[:40]!r}; give --input-format for another format")
        start = seconds(m.group(1), where(src, i), "the start (in milliseconds)", 1000)
        end = seconds(m.group(2), where(src, i), "the end (in milliseconds)", 1000)
        utt = ctx.start(ctx.next_id(), source={"start": start, "end": end}, lineno=i, has_id=False,
                        frame=Frame(head + f"{m.group(1)}\t{m.group(2)}\t", fmt="whisper-tsv"))
        head = ""
        tokens = split_words(m.group(3))
        ctx.add_words(tokens, cue_shares(tokens, start, end))
        yield utt
