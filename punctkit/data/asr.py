"""Inputs of `punctkit punctuate`: plain text, Kaldi `text`, CTM and JSON lines from ASR services.

Every reader is a generator (inputs of any size are read lazily). Words are the
input's whitespace-separated tokens (a CTM/JSON word is one token), split by
punctkit.data.tokenize.read_passage: each comes with the word the model reads
(lower-cased), the mark that followed it (O for none) and how it was written,
so that the output gives back every word as it came (only marks and case change).

- text: one stream; yields one `Line` per input line.
- kaldi_text: `uttid word word ...`, one `AsrUtterance` per line.
- ctm: `uttid channel start duration word [confidence ...]`; consecutive lines
  with the same id form an utterance (`;;` comment lines are skipped). A token
  that is only a mark (`,`) gives its mark to the word before and is dropped.
- jsonl: one JSON object per line, the shape ASR services emit:
  `{"id": "utt1", "words": [{"word": "hello", "start": 0.1, "end": 0.4}, ...]}`.
  Accepted keys: id from `id`, `uttid`, `utt_id` or `key` (default: FILE-LINENO);
  words from `words` (items are strings, or objects with the word in `word`,
  `text`, `token` or `punctuated_word`, and times in `start`/`start_time` and
  `end`/`end_time`, or `start` + `duration`), or else from a `text` string.

The format is detected from the content (punctkit.data.formats.detect_format, the
detector of every command; for stdin from its first 64 KiB, which are then read again)
unless given. Input bytes are decoded as punctkit.files.decode_lines does for files:
UTF-8 or UTF-16/32 by BOM, or the `encoding` given; bytes that do not decode are an
error naming `stdin:LINE` and the byte offset.

Word times are read and kept (for the CTM output); no model uses pauses yet.
This reader streams (stdin, any size) and keeps every CTM column for the CTM
output; punctkit.feats.ctm, which loads a data dir's whole CTM for the acoustic
models, shares its line parser `ctm_fields` (data/ does not import feats/).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from punctkit.data.formats import detect_format
from punctkit.data.labels import O, LabelSet, Substitution
from punctkit.data.tokenize import Passage, Written, is_mark_token, mark_after, read_passage
from punctkit.files import PunctkitError, iter_lines, stdin_lines, where

INPUT_FORMATS = ("text", "kaldi_text", "ctm", "jsonl")
ID_KEYS = ("id", "uttid", "utt_id", "key")
WORD_KEYS = ("word", "text", "token", "punctuated_word")
START_KEYS = ("start", "start_time")
END_KEYS = ("end", "end_time")


@dataclass
class Line:
    """One line of plain text: its words (as the model reads them), the marks it already had, and
    each word as written."""

    lineno: int
    words: list[str]
    marks: list[str]
    written: list[Written]


@dataclass
class AsrUtterance:
    """One utterance: words, input marks, words as written, and per word the record it came from
    (CTM fields or JSON item)."""

    uttid: str
    words: list[str] = field(default_factory=list)
    marks: list[str] = field(default_factory=list)
    written: list[Written] = field(default_factory=list)
    records: list[Any] = field(default_factory=list)
    source: Any = None  # the JSON object of a jsonl line
    lineno: int = 0     # the input line it starts on


def input_lines(src: str | Path, encoding: str | None = None) -> Iterator[tuple[int, str]]:
    """(line number, line) of a file, or of standard input for `-` (its bytes, decoded as files are)."""
    if str(src) == "-":
        yield from stdin_lines(encoding)
    else:
        yield from iter_lines(src, None, encoding)


def source_name(src: str | Path) -> str:
    """The name used in utterance ids and messages (`stdin` for `-`)."""
    return "stdin" if str(src) == "-" else Path(src).name


def detect_input_format(src: str | Path, encoding: str | None = None) -> str:
    """The input format from the content (punctkit.data.formats.detect_format, the one detector);
    an error for the formats `punctuate` does not read."""
    fmt = detect_format(src, encoding)
    if fmt not in INPUT_FORMATS:
        raise PunctkitError(f"{src}: looks like {fmt}, which punctuate does not read (it reads "
                            f"{', '.join(INPUT_FORMATS)}); give --input-format to read it as one of those")
    return fmt


def split_text(text: str, inventory: LabelSet, rules: Substitution) -> Passage:
    """The words of `text` (split on whitespace), the mark (label mark, O for none) after each,
    and each as written."""
    return read_passage(text.split(), inventory, rules)


def read_text_lines(src: str | Path, inventory: LabelSet, rules: Substitution,
                    encoding: str | None = None) -> Iterator[Line]:
    """Plain text, one `Line` per input line (lines without words give empty lines)."""
    for i, line in input_lines(src, encoding):
        p = split_text(line, inventory, rules)
        yield Line(i, p.words, p.marks, p.written)


def read_kaldi_text(src: str | Path, inventory: LabelSet, rules: Substitution,
                    encoding: str | None = None) -> Iterator[AsrUtterance]:
    """Kaldi `text`: `uttid words...` per line (an id without words gives an empty utterance)."""
    seen: set[str] = set()
    for i, line in input_lines(src, encoding):
        uttid, *rest = line.split() or [""]
        if not uttid:
            continue
        if uttid in seen:
            raise PunctkitError(f"{where(src, i)}: duplicate utterance id '{uttid}'")
        seen.add(uttid)
        p = read_passage(rest, inventory, rules)
        yield AsrUtterance(uttid, p.words, p.marks, p.written, [None] * len(p.words), lineno=i)


def _add_token(utt: AsrUtterance, token: str, record: Any, inventory: LabelSet, rules: Substitution) -> bool:
    """Add one ASR token (a word, possibly with marks attached) to `utt`; False if it holds no word
    (a bare mark gives its mark to the word before, when that has none)."""
    token = token.strip()
    if not token or is_mark_token(token):
        mk = mark_after(token, inventory, rules)
        if utt.words and mk != O and utt.marks[-1] == O:
            utt.marks[-1] = mk
        return False
    p = read_passage([token], inventory, rules)  # one word, however many `segment` sees in it
    utt.words.append(p.words[0])
    utt.marks.append(p.marks[0])
    utt.written.append(p.written[0])
    utt.records.append(record)
    return True


def ctm_fields(src: str | Path, i: int, line: str) -> tuple[list[str], float, float] | None:
    """One CTM line `uttid channel start duration word [confidence ...]`: its fields, start and
    duration (checked); None for blank and `;;` comment lines. Shared by every CTM reader."""
    if not line.strip() or line.startswith(";;"):
        return None
    f = line.split()
    if len(f) < 5:
        raise PunctkitError(f"{where(src, i)}: expected 'uttid channel start duration word [conf]', "
                            f"got {len(f)} fields")
    try:
        start, dur = float(f[2]), float(f[3])
    except ValueError:
        raise PunctkitError(f"{where(src, i, f[0])}: start and duration must be numbers, "
                            f"got '{f[2]}' '{f[3]}'") from None
    if start < 0 or dur < 0:
        raise PunctkitError(f"{where(src, i, f[0])}: negative start or duration")
    return f, start, dur


def read_ctm(src: str | Path, inventory: LabelSet, rules: Substitution,
             dropped: list[int] | None = None, encoding: str | None = None) -> Iterator[AsrUtterance]:
    """CTM lines grouped into utterances; `dropped[0]` counts tokens without a word."""
    cur: AsrUtterance | None = None
    done: set[str] = set()
    for i, line in input_lines(src, encoding):
        parsed = ctm_fields(src, i, line)
        if parsed is None:
            continue
        f, start, dur = parsed
        if cur is None or f[0] != cur.uttid:
            if cur is not None:
                done.add(cur.uttid)
                yield cur
            if f[0] in done:
                raise PunctkitError(f"{where(src, i)}: utterance '{f[0]}' continues after other utterances "
                                    f"(sort the CTM by utterance and time)")
            cur = AsrUtterance(f[0], lineno=i)
        record = {"channel": f[1], "start": f[2], "duration": f[3], "rest": f[5:], "start_s": start,
                  "end_s": start + dur}
        if not _add_token(cur, f[4], record, inventory, rules) and dropped is not None:
            dropped[0] += 1
    if cur is not None:
        yield cur


def _first(d: dict[str, Any], keys: tuple[str, ...]) -> Any:
    return next((d[k] for k in keys if k in d), None)


def _times(item: dict[str, Any], loc: str) -> tuple[float | None, float | None]:
    start, end = _first(item, START_KEYS), _first(item, END_KEYS)
    try:
        if end is None and start is not None and "duration" in item:
            end = float(start) + float(item["duration"])
        return (None if start is None else float(start)), (None if end is None else float(end))
    except (TypeError, ValueError, OverflowError):
        raise PunctkitError(f"{loc}: word times must be numbers, got {start!r} "
                            f"{item.get('duration') if end is None else end!r}") from None


def read_jsonl(src: str | Path, inventory: LabelSet, rules: Substitution,
               dropped: list[int] | None = None, encoding: str | None = None) -> Iterator[AsrUtterance]:
    """JSON lines, one utterance each (accepted keys in the module docstring)."""
    name = source_name(src)
    for i, line in input_lines(src, encoding):
        if not line.strip():
            continue
        loc = where(src, i)
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise PunctkitError(f"{loc}: not valid JSON ({e.msg})") from None
        if not isinstance(obj, dict):
            raise PunctkitError(f"{loc}: expected a JSON object per line")
        uttid = _first(obj, ID_KEYS)
        uttid = f"{name}-{i:06d}" if uttid is None or uttid == "" else str(uttid)
        utt = AsrUtterance(uttid, source=obj, lineno=i)
        items = obj.get("words")
        if items is None:
            if not isinstance(obj.get("text"), str):
                raise PunctkitError(f"{loc} (utterance {uttid}): no 'words' list and no 'text' string")
            items = obj["text"].split()
        if not isinstance(items, list):
            raise PunctkitError(f"{loc} (utterance {uttid}): 'words' must be a list")
        for k, item in enumerate(items):
            if isinstance(item, str):
                token, rec = item, {"index": k}
            elif isinstance(item, dict) and isinstance(_first(item, WORD_KEYS), str):
                start, end = _times(item, f"{loc} (utterance {uttid})")
                token, rec = _first(item, WORD_KEYS), {"index": k, "start_s": start, "end_s": end}
            else:
                raise PunctkitError(f"{loc} (utterance {uttid}): word {k + 1} has none of the keys "
                                    f"{', '.join(WORD_KEYS)}")
            if not _add_token(utt, token, rec, inventory, rules) and dropped is not None:
                dropped[0] += 1
        yield utt
