"""Rev's NLP format (`nlp`): a header line, then one token a line, `|`-separated.

    token|speaker|ts|endTs|punctuation|prepunctuation|case|tags|oldTs|oldEndTs|ali_comment
    Good|0|0.0800|1.4000|||UC|[]|||
    morning|0|1.4000|1.9000|,||LC|[]|||

The header names the columns (Rev's files differ: some add `wer_tags`); `token`, `speaker`,
`ts`, `endTs`, `punctuation` and `case` are the ones punctkit reads or writes, every other column
is kept as it came. `case` is Rev's class of the token: LC lower, UC first letter upper, CA all
capitals, MC mixed, N/A no letters. Times may be empty (tokens the aligner dropped).

Tokens in angle brackets (`<inaudible>`, `<crosstalk>`, `<laugh>`, ...) are not speech: they never
become words (prepare counts them in its report), and punctuate writes their rows back unchanged.

Read two ways, as every text format:
- as a corpus (`read_nlp`: prepare, score): one utterance a file (a call is one stream), each
  token one word (the word `tokenize.tokens` finds in it, or the token itself when it finds none or
  several: `Q&A`), labelled with its `punctuation` (and `prepunctuation` for the word before) and
  its case; `…` is no mark unless the inventory has DOTS;
- for punctuate (`nlp_units`): one unit per speaker turn, the lines one stream; each word's record
  keeps its row, so that `nlp_lines` writes the same format back with the token re-cased and the
  `punctuation` and `case` columns filled.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Iterator

from punctkit.data.formats.asr import add_token
from punctkit.data.formats.base import (
    AsrUtterance,
    OutputOptions,
    Punctuated,
    Report,
    Source,
    Utterance,
    as_source,
    given_words,
    input_lines,
    source_name,
)
from punctkit.data.labels import LabelSet, O, Substitution, mark_of
from punctkit.data.tokenize import label_tokens, split_contraction, tokens
from punctkit.files import PunctkitError, where

REQUIRED = ("token", "speaker", "ts", "endTs", "punctuation", "case")
ELLIPSIS = "…"


def is_header(line: str) -> bool:
    """Whether `line` is an NLP header (its first columns `token|speaker|`)."""
    return line.strip().startswith("token|speaker|")


def nlp_kind(line: str) -> str:
    """`nlp` for an NLP header or token line (6+ `|`-separated fields, an integer speaker, times that
    are numbers or empty), else ''."""
    if is_header(line):
        return "nlp"
    f = line.rstrip("\r\n").split("|")
    if len(f) < 7 or not f[0] or not f[1].isdigit():
        return ""
    return "nlp" if all(_time_field(t) for t in f[2:4]) else ""


def _time_field(t: str) -> bool:
    if not t:
        return True
    try:
        float(t)
    except ValueError:
        return False
    return True


def non_speech(token: str) -> bool:
    """Whether a token is a non-speech tag (`<inaudible>`, `<laugh>`) or empty."""
    t = token.strip()
    return not t or (t.startswith("<") and t.endswith(">"))


@dataclass
class Row:
    """One token line: its number, its fields by column name, and the line as it came."""

    lineno: int
    fields: dict[str, str]
    line: str

    @property
    def token(self) -> str:
        return self.fields["token"]


@dataclass
class Turn:
    """What a punctuate unit of an NLP input keeps besides its words: the file's header, the turn's
    speaker, and the non-speech rows before its first word (written back in place)."""

    header: "Header"
    speaker: str
    before: list[Row] = field(default_factory=list)


@dataclass
class Header:
    """The columns of an NLP file, in order."""

    columns: list[str] = field(default_factory=list)

    def row(self, src: Source, i: int, line: str) -> Row:
        f = line.split("|")
        if len(f) != len(self.columns):
            raise PunctkitError(f"{where(src, i)}: {len(f)} fields where the header has {len(self.columns)} "
                                f"({'|'.join(self.columns)}); an NLP token line has one field per column")
        return Row(i, dict(zip(self.columns, f)), line)


def nlp_rows(src: Source, encoding: str | None = None) -> Iterator[tuple[Header, Row]]:
    """The token rows of an NLP file (`-`: stdin), with its header; a missing header or column, or a
    line with another number of fields, is a one-line error naming the line."""
    header: Header | None = None
    for i, line in input_lines(src, encoding):
        if not line.strip():
            continue
        if header is None:
            if not is_header(line):
                raise PunctkitError(f"{where(src, i)}: an NLP file starts with its header line "
                                    f"(token|speaker|ts|endTs|punctuation|...), got {line[:40]!r}")
            cols = line.strip().split("|")
            missing = [c for c in REQUIRED if c not in cols]
            if missing:
                raise PunctkitError(f"{where(src, i)}: the NLP header lacks the column(s) {', '.join(missing)}")
            header = Header(cols)
            continue
        yield header, header.row(src, i, line)
    if header is None:
        raise PunctkitError(f"{src}: empty NLP file (no header line)")


def token_word(token: str) -> str:
    """The one word of a token (`tokens`' single word: `$5` -> `5`, `Good` -> `Good`), or the token
    itself when it holds none or several (`Q&A`, `U.S.-based`): a token is one word."""
    words = [w for kind, w in tokens(token) if kind == "w"]
    return words[0] if len(words) == 1 else token.replace("’", "'")


def mark_text(mark: str, inventory: LabelSet) -> str:
    """A `punctuation` field as the tokenizer reads it: `…` only where the inventory has DOTS."""
    mark = mark.strip()
    if ELLIPSIS in mark and "DOTS" not in inventory.marks:
        return ""
    return mark


def read_nlp(path: Source, inventory: LabelSet, rules: Substitution, report: Report, lowercase: bool = False,
             lines: tuple[int, int] | None = None, encoding: str | None = None,
             split_contractions: bool = False) -> list[Utterance]:
    """An NLP file as a corpus: one utterance (the file's name), its words and labels; non-speech
    tokens are counted in `report`, never words. `lines` is not supported (a call is one stream)."""
    p = as_source(path)
    if lines is not None:
        raise PunctkitError(f"{p}: --lines is for line-per-utterance text; an NLP file is one stream")
    toks: list[tuple[str, str]] = []
    for _, row in nlp_rows(p, encoding):
        tok = row.token.strip()
        pre = row.fields.get("prepunctuation", "").strip()
        if pre:
            toks.append(("m", pre))
        if non_speech(tok):
            if tok:
                report.note(f"non-speech tokens skipped ({tok})")
        else:
            word = token_word(tok)
            pieces = split_contraction(word) if split_contractions else [word]
            if len(pieces) > 1:
                report.note("contractions split (--split-contractions)")
            toks += [("w", piece) for piece in pieces]
        punct = row.fields["punctuation"].strip()
        if punct and not mark_text(punct, inventory):
            report.note(f"marks without a class in {inventory.name} dropped ({punct})")
        elif punct:
            toks += [kind_tok for kind_tok in tokens(f" {mark_text(punct, inventory)} ") if kind_tok[0] == "m"]
    seg = label_tokens(toks, inventory, rules, lowercase)
    report.note("marks dropped (rules, or not the first after a word)", seg.dropped_marks)
    if not seg.words:
        report.repair("input without any word skipped", str(p))
        return []
    return [Utterance(p.name, seg.words, seg.marks)]


# ---------------------------------------------------------------- punctuate: in and out

def nlp_units(src: Source, inventory: LabelSet, rules: Substitution, encoding: str | None = None,
              dropped: list[int] | None = None) -> Iterator[AsrUtterance]:
    """NLP tokens for punctuate, one unit per speaker turn; each word's record holds its row (and
    the non-speech rows after it, which pass through); rows before a turn's first word go in the
    unit's `source` (a `Turn`). Times are read where given (`start_s`, `end_s`; None where empty)."""
    name = source_name(src)
    utt: AsrUtterance | None = None
    header: Header | None = None
    turn = 0
    for header, row in nlp_rows(src, encoding):
        speaker = row.fields["speaker"]
        if utt is None or speaker != utt.source.speaker:
            if utt is not None:
                yield utt
            turn += 1
            utt = AsrUtterance(f"{name}-{turn:06d}", source=Turn(header, speaker), lineno=row.lineno, has_id=False)
        if non_speech(row.token):
            (utt.records[-1]["after"] if utt.records else utt.source.before).append(row)
            continue
        token = row.token.strip() + row.fields["punctuation"].strip()
        record = {"row": row, "after": [], "start_s": _time(src, row, "ts"), "end_s": _time(src, row, "endTs")}
        if not add_token(utt, token, record, inventory, rules):
            if dropped is not None:
                dropped[0] += 1
            (utt.records[-1]["after"] if utt.records else utt.source.before).append(row)
    if utt is not None:
        yield utt


def _time(src: Source, row: Row, col: str) -> float | None:
    t = row.fields[col].strip()
    if not t:
        return None
    try:
        v = float(t)
    except ValueError:
        raise PunctkitError(f"{where(src, row.lineno)}: {col} must be a number of seconds, got {t[:20]!r}") from None
    if not (v >= 0 and v != float("inf")):
        raise PunctkitError(f"{where(src, row.lineno)}: {col} must be finite and not negative, got {t[:20]!r}")
    return v


def rev_case(token: str) -> str:
    """Rev's case class of a token: N/A (no letters), LC, CA (every letter upper: `I`, `A`, `NASA`),
    UC (the first letter upper, no other), MC (any other mix)."""
    letters = [c for c in token if c.isalpha()]
    if not letters:
        return "N/A"
    if all(c.islower() for c in letters):
        return "LC"
    if all(c.isupper() for c in letters):
        return "CA"
    if letters[0].isupper() and all(c.islower() for c in letters[1:]):
        return "UC"
    return "MC"


def split_shown(given: str, shown: str, label: str) -> tuple[str, str]:
    """(token, punctuation) of a shown word: the given token re-cased, and the mark text after it."""
    core = given
    if shown.lower().startswith(core.lower()) and len(shown) >= len(core):
        return shown[:len(core)], shown[len(core):]
    return core, "" if mark_of(label) == O else shown[len(shown.rstrip(",.?!;:…")):]


COLUMNS = ("token", "speaker", "ts", "endTs", "punctuation", "prepunctuation", "case", "tags", "oldTs", "oldEndTs",
           "ali_comment")  # Rev's columns, for inputs of other formats


def nlp_lines(units: Iterable[Punctuated], src: Source, opts: OutputOptions) -> Iterator[str]:
    """The NLP format: an NLP input written back (its header, then each row with its `token` re-cased
    and its `punctuation` and `case` filled; non-speech rows and every other column as they came);
    an input of another format as new rows (Rev's columns: speaker 0, times where the input had them)."""
    header_done = False
    for utt, labels, shown, _ in units:
        turn = utt.source if isinstance(utt.source, Turn) else None
        header = turn.header if turn is not None else None
        if not header_done:
            yield "|".join(header.columns if header is not None else COLUMNS)
            header_done = True
        yield from (r.line for r in (turn.before if turn is not None else []))
        given = given_words(utt)
        for k, (lab, text) in enumerate(zip(labels, shown)):
            rec = utt.records[k] if k < len(utt.records) and isinstance(utt.records[k], dict) else {}
            row: Row | None = rec.get("row") if header is not None else None
            token, punct = split_shown(row.token.strip() if row is not None else _bare(given[k]), text, lab)
            if row is not None:
                fields = dict(row.fields, token=token, punctuation=punct, case=rev_case(token))
                yield "|".join(fields[c] for c in header.columns)
                yield from (r.line for r in rec["after"])
            else:
                yield "|".join([token.replace("|", "/"), "0", _stamp(rec.get("start_s")), _stamp(rec.get("end_s")),
                                punct, "", rev_case(token), "[]", "", "", ""])


def _bare(word: str) -> str:
    """A word as given without the marks at its end (they go to the `punctuation` column)."""
    return word.rstrip(",.?!;:…") or word


def _stamp(t: float | None) -> str:
    return "" if t is None else f"{t:.4f}"
