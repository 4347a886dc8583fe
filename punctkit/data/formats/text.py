"""Plain text (`text`: one utterance, or document, a line) and Kaldi text (`kaldi_text`: the
utterance id first, `utt1 So, if we ...`).

Each is read two ways from the same lines: as a corpus (`read_text`: IWSLT-style words and
their marks, via punctkit.data.tokenize.segment, for convert/prepare/score) and for punctuate
(`text_units`, `kaldi_text_units`: whitespace tokens passed through as written, streaming).
`kaldi_text_lines` is the one Kaldi-text line reader under both.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator

from punctkit.data.formats.base import AsrUtterance, Report, Utterance, input_lines, source_name, split_text
from punctkit.data.labels import LabelSet, Substitution
from punctkit.data.tokenize import join_marked, read_passage, segment
from punctkit.data.utterance import is_one_word
from punctkit.files import PunctkitError, where

# an utterance id: letters, digits, `_-.:/` with at least one digit (`utt1`, `1272-128104-0000`)
ID = re.compile(r"[\w.:/-]*\d[\w.:/-]*")


def looks_like_ids(firsts: list[str], name: str) -> bool:
    """Whether the first tokens of sampled lines are Kaldi utterance ids: over 2+ lines, 90% of
    them ids; else, only as a tie-breaker, for a file named `text` or `*.text` whose first
    tokens are unique or mostly ids."""
    n = len(firsts)
    ids = sum(1 for t in firsts if ID.fullmatch(t))
    if n >= 2 and ids >= 0.9 * n:
        return True
    return (name == "text" or name.endswith(".text")) and (len(set(firsts)) == n or ids >= 0.5 * n)


def all_unique_ids(firsts: list[str]) -> bool:
    """Whether every first token is an id and none repeats (`utt1 YES` is Kaldi text, not twocol)."""
    return len(set(firsts)) == len(firsts) and all(ID.fullmatch(t) for t in firsts)


def kaldi_text_lines(src: str | Path, encoding: str | None = None,
                     lines: tuple[int, int] | None = None) -> Iterator[tuple[int, str, str]]:
    """(line number, utterance id, the rest of the line) of Kaldi `text`; lines without an id are
    skipped, a repeated id is an error."""
    seen: set[str] = set()
    for i, line in input_lines(src, encoding, lines):
        uttid, *rest = line.split(None, 1) or [""]
        if not uttid:
            continue
        if uttid in seen:
            raise PunctkitError(f"{where(src, i)}: duplicate utterance id '{uttid}'")
        seen.add(uttid)
        yield i, uttid, rest[0] if rest else ""


def read_text(path: str | Path, inventory: LabelSet, rules: Substitution, report: Report,
              lowercase: bool = False, with_ids: bool = False,
              lines: tuple[int, int] | None = None, encoding: str | None = None) -> list[Utterance]:
    """Read punctuated text as a corpus, one utterance a line (`with_ids`: Kaldi `text`, id first)."""
    p = Path(path)
    if with_ids:
        rows: Iterator[tuple[int, str, str]] = kaldi_text_lines(p, encoding, lines)
    else:
        rows = ((i, f"{p.name}-{i:06d}", line) for i, line in input_lines(p, encoding, lines))
    utts = []
    for i, uttid, line in rows:
        seg = segment(line, inventory, rules, lowercase)
        report.note("marks dropped (rules, or not the first after a word)", seg.dropped_marks)
        report.note("quotes, brackets and other symbols dropped", seg.dropped_symbols)
        if seg.words:
            utts.append(Utterance(uttid, seg.words, seg.marks))
        elif line.strip():
            report.repair("line without any word skipped", where(p, i), line.strip()[:40])
    return utts


def text_units(src: str | Path, inventory: LabelSet, rules: Substitution, encoding: str | None = None,
               dropped: list[int] | None = None) -> Iterator[AsrUtterance]:
    """Plain text for punctuate, one unit per input line (lines without words give empty units);
    the lines are one stream (a sentence may go on to the next line)."""
    name = source_name(src)
    for i, line in input_lines(src, encoding):
        p = split_text(line, inventory, rules)
        yield AsrUtterance(f"{name}-{i:06d}", p.words, p.marks, p.written, [None] * len(p.words),
                           lineno=i, has_id=False)


def kaldi_text_units(src: str | Path, inventory: LabelSet, rules: Substitution, encoding: str | None = None,
                     dropped: list[int] | None = None) -> Iterator[AsrUtterance]:
    """Kaldi `text` for punctuate: `uttid words...` per line (an id without words gives an empty utterance)."""
    for i, uttid, rest in kaldi_text_lines(src, encoding):
        p = read_passage(rest.split(), inventory, rules)
        yield AsrUtterance(uttid, p.words, p.marks, p.written, [None] * len(p.words), lineno=i)


def text_out(utts: list[Utterance]) -> Iterator[str]:
    """Punctuated text, one utterance a line."""
    return (join_marked(u.words, u.labels) for u in utts)


def kaldi_text_out(utts: list[Utterance]) -> Iterator[str]:
    """`uttid punctuated text`, one utterance a line (an id with white space is an error: the line splits on it)."""
    for u in utts:
        if not is_one_word(u.uttid):
            raise PunctkitError(f"utterance id {u.uttid!r} holds white space, which a Kaldi text line cannot "
                                "hold: use --format jsonl (or ids of one word)")
        yield f"{u.uttid} {join_marked(u.words, u.labels)}"
