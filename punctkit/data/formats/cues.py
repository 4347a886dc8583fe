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
whose timing line does not parse is a one-line error naming the file and line.
"""
from __future__ import annotations

import html
import re
from typing import Iterator

from punctkit.data.formats.asr import add_token, text_shares
from punctkit.data.formats.base import MAX_HELD, AsrUtterance, Source, input_lines, source_name
from punctkit.data.labels import LabelSet, Substitution
from punctkit.data.tokenize import split_words
from punctkit.files import PunctkitError, where

_TIME = r"(?:(\d+):)?(\d{1,2}):(\d{2})[,.](\d{1,3})"
TIMING = re.compile(rf"^\s*{_TIME}\s*-->\s*{_TIME}(?:\s.*)?$")
_TAG = re.compile(r"<[^>]*>")


def timing_line(line: str) -> tuple[float, float] | None:
    """(start, end) in seconds of a cue's timing line, else None."""
    m = TIMING.match(line)
    if m is None:
        return None
    g = m.groups()
    return _seconds(*g[:4]), _seconds(*g[4:])


def _seconds(h: str | None, m: str, s: str, ms: str) -> float:
    return int(h or 0) * 3600 + int(m) * 60 + int(s) + int(ms.ljust(3, "0")) / 1000


def timing_kind(line: str) -> str:
    """The line classifier (detection): `srt` for a cue's timing line with `,` before the milliseconds, `vtt`
    with `.`, else ''."""
    m = TIMING.match(line)
    if m is None:
        return ""
    return "srt" if "," in line.split("-->", 1)[0] else "vtt"


def cues_kind(head: str) -> str | None:
    """`vtt` for a text that starts with a WEBVTT header, `srt` for one whose first block is a number and a
    timing line (or a timing line alone), else None."""
    lines = [ln.strip() for ln in head.lstrip("\ufeff").splitlines()[:4]]
    if lines and (lines[0] == "WEBVTT" or lines[0].startswith(("WEBVTT ", "WEBVTT\t"))):
        return "vtt"
    first = [ln for ln in lines if ln][:2]
    if first and timing_line(first[0]) or len(first) == 2 and first[0].isdigit() and timing_line(first[1]):
        return "srt"
    return None


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


def cue_units(kind: str):
    """The units reader of `srt` or `vtt` (the registry's `units`): a cue a unit, one stream."""

    def units(src: Source, inventory: LabelSet, rules: Substitution, encoding: str | None = None,
              dropped: list[int] | None = None) -> Iterator[AsrUtterance]:
        name = source_name(src)
        n = 0
        for k, (i, lines) in enumerate(blocks(src, encoding)):
            if kind == "vtt" and k == 0 and lines[0].startswith("WEBVTT"):
                continue  # the header block
            if kind == "vtt" and lines[0].split(" ", 1)[0] in ("NOTE", "STYLE", "REGION"):
                continue
            at = next((j for j, ln in enumerate(lines[:2]) if "-->" in ln), None)
            times = timing_line(lines[at]) if at is not None else None
            if times is None:  # the line that should be it: the one with `-->`, else the one after a number
                j = at if at is not None else int(lines[0].strip().isdigit() and len(lines) > 1)
                raise PunctkitError(f"{where(src, i + j)}: expected a cue's timing line (`00:00:01,500 --> "
                                    f"00:00:03,000`), got {lines[j][:60]!r}; give --input-format for another "
                                    f"format")
            n += 1
            utt = AsrUtterance(f"{name}-{n:06d}", source={"cue": n, "start": times[0], "end": times[1]},
                               lineno=i, has_id=False)
            tokens = split_words(cue_text(lines[at + 1:]))
            for tok, (s, e) in zip(tokens, text_shares(tokens, *times)):
                if not add_token(utt, tok, {"index": None, "start_s": s, "end_s": e}, inventory, rules) \
                        and dropped is not None:
                    dropped[0] += 1
            yield utt

    units.__doc__ = f"The cues of a {kind} file, in order, as units of one stream (module docstring)."
    return units


# ---------------------------------------------------------------- Whisper's segment table

TSV_HEAD = "start\tend\ttext"
_TSV_ROW = re.compile(r"^(\d+)\t(\d+)\t(.*)$")


def tsv_kind(line: str) -> str:
    """The line classifier (detection): `whisper-tsv` for its header, `whisper-tsv?` for a row (two whole numbers
    and a text, tab-separated: not sure by itself), else ''."""
    if line.strip() == TSV_HEAD:
        return "whisper-tsv"
    return "whisper-tsv?" if _TSV_ROW.match(line) else ""


def tsv_units(src: Source, inventory: LabelSet, rules: Substitution, encoding: str | None = None,
              dropped: list[int] | None = None) -> Iterator[AsrUtterance]:
    """Whisper's TSV, a segment a unit of one stream, its words sharing its time; a row that is not two whole
    numbers of milliseconds and a text is a one-line error naming it."""
    name = source_name(src)
    head = ""
    n = 0
    for i, line in input_lines(src, encoding):
        row = line.lstrip("\ufeff") if i == 1 else line
        if not row.strip() or (not n and row.strip() == TSV_HEAD):
            head += line + "\n"
            if len(head) > MAX_HELD:  # a long run of blank lines: given back as a unit without words
                yield AsrUtterance(f"{name}-{i:06d}", lineno=i, has_id=False, frame=(head[:-1], ""),
                                   lines_only=True)
                head = ""
            continue
        m = _TSV_ROW.match(row)
        if m is None:
            raise PunctkitError(f"{where(src, i)}: expected a row of Whisper's TSV, `start<TAB>end<TAB>text` with "
                                f"the times in milliseconds, got {row[:40]!r}; give --input-format for another format")
        start, end = int(m.group(1)) / 1000, int(m.group(2)) / 1000
        n += 1
        utt = AsrUtterance(f"{name}-{n:06d}", source={"start": start, "end": end}, lineno=i, has_id=False,
                           frame=(head + f"{m.group(1)}\t{m.group(2)}\t", ""))
        head = ""
        tokens = split_words(m.group(3))
        for tok, (s, e) in zip(tokens, text_shares(tokens, start, end)):
            if not add_token(utt, tok, {"index": None, "start_s": s, "end_s": e}, inventory, rules) \
                    and dropped is not None:
                dropped[0] += 1
        yield utt
