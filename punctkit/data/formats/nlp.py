"""Rev's NLP format (`nlp`): a header line, then one token a line, `|`-separated.

    token|speaker|ts|endTs|punctuation|prepunctuation|case|tags|oldTs|oldEndTs|ali_comment
    Good|0|0.0800|1.4000|||UC|[]|||
    morning|0|1.4000|1.9000|,||LC|[]|||

The header names the columns (Rev's files differ: some add `wer_tags`); `token`, `speaker`,
`ts`, `endTs`, `punctuation` and `case` are the ones punctkit reads or writes, every other column
is kept as it came. `case` is Rev's class of the token: LC lower, UC first letter upper, CA all
capitals, MC mixed, N/A no letters. Times may be empty (tokens the aligner dropped).
Speakers are any string (Rev's `0`, Speechmatics' `UU` and `S1`, letters, empty: ESPnet's recognizer).
A file without a header line has Rev's columns in their order (`Header.rev`) and is written back
without one; a header that names a column twice, or lacks one punctkit reads, is refused.

Tokens that are not words (tokenize.passes_through: tags in angle or square brackets, `<inaudible>`,
`<crosstalk>`, `<laugh>`, `[noise]`, ..., and a lone dash) never become words (prepare counts them in its
report), and punctuate writes their rows back unchanged.

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

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Iterator

from punctkit.data.formats.base import (
    AsrUtterance,
    OutputOptions,
    Source,
    Utterance,
    as_source,
    input_lines,
    shown_words,
)
from punctkit.data.formats.protocol import CorpusRead, ReadContext, Reader
from punctkit.data.formats.times import seconds
from punctkit.data.labels import LabelSet
from punctkit.data.tokenize import NonWord, column_mark, label_tokens, passes_through, split_contraction, tokens
from punctkit.files import PunctkitError, where

if TYPE_CHECKING:
    from punctkit.data.labelled import Labelled

REQUIRED = ("token", "speaker", "ts", "endTs", "punctuation", "case")
ELLIPSIS = "…"


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def is_header(line: str) -> bool:
    """Whether `line` is an NLP header: `|`-separated column names (letters, digits and `_`), 3 or more of
    them the ones punctkit reads (REQUIRED), in any order (`token|speaker|ts|endTs|...`, `speaker|token|...`).
    A header that names a column twice or lacks one of REQUIRED is still a header, refused by `Header.parse`."""
    cols = line.strip().lstrip("\ufeff").split("|")
    return (len(cols) >= 3 and len(set(cols) & set(REQUIRED)) >= 3
            and all(not c or _NAME.fullmatch(c) for c in cols))


def nlp_kind(line: str) -> str:
    """`nlp` for an NLP header or token line, else ''. A token line has Rev's columns (7+ `|`-separated
    fields: a token, a speaker of any kind, `0`, `UU`, `S1`, `A` or empty, then times that are numbers or
    empty); it is what a file without a header line starts with (`Header.rev`)."""
    if is_header(line):
        return "nlp"
    f = line.rstrip("\r\n").split("|")
    if len(f) < 7 or not f[0].strip():
        return ""
    return "nlp" if all(_time_field(t) for t in f[2:4]) else ""


def nlp_like(line: str) -> bool:
    """Whether a line of what was read as plain text looks like an NLP row (text.looks_like): 5+ `|`-separated
    fields, the first two (token, speaker) without white space, the first not empty. Prose with the odd `|`
    (`Revenue | Q1 | Q2`, a table row `| a | b |`) does not."""
    f = line.strip().split("|")
    return len(f) >= 5 and bool(f[0]) and not any(c.isspace() for c in f[0] + f[1])


def _time_field(t: str) -> bool:
    if not t:
        return True
    try:
        float(t)
    except ValueError:
        return False
    return True


def non_speech(token: str) -> bool:
    """Whether a token is empty or no word (tokenize.passes_through, the one rule of every reader: a tag,
    `<inaudible>`, `<laugh>`, `[noise]`, or a lone dash)."""
    t = token.strip()
    return not t or passes_through(t)


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
    """The columns of an NLP file, in order, and whether the file has a header line naming them (`given`;
    a file without one has Rev's columns, `Header.rev`, and is written back without one)."""

    columns: list[str] = field(default_factory=list)
    given: bool = True

    @classmethod
    def parse(cls, src: Source, i: int, line: str) -> "Header":
        """The header on line `i` (`is_header`); a column named twice (its rows' values would be read as
        another column's) or a missing one of REQUIRED is a one-line error naming the line."""
        cols = line.strip().lstrip("\ufeff").split("|")
        twice = [c for c in dict.fromkeys(cols) if cols.count(c) > 1]
        if twice:
            raise PunctkitError(f"{where(src, i)}: the NLP header names the column(s) "
                                f"{', '.join(repr(c) for c in twice)} more than once; name each column once "
                                f"(token|speaker|ts|endTs|punctuation|prepunctuation|case|...)")
        missing = [c for c in REQUIRED if c not in cols]
        if missing:
            raise PunctkitError(f"{where(src, i)}: the NLP header lacks the column(s) {', '.join(missing)}; "
                                f"it names {', '.join(REQUIRED)} (and any others), each once")
        return cls(cols)

    @classmethod
    def rev(cls, n: int) -> "Header":
        """The columns of a file without a header line whose rows have `n` fields: Rev's (COLUMNS) in
        their order, then `column12`, `column13`, ... for fields past them."""
        return cls([*COLUMNS[:n], *(f"column{k}" for k in range(len(COLUMNS) + 1, n + 1))], given=False)

    def row(self, src: Source, i: int, line: str) -> Row:
        f = line.split("|")
        if len(f) != len(self.columns):
            raise PunctkitError(f"{where(src, i)}: {len(f)} fields where the header has {len(self.columns)} "
                                f"({'|'.join(self.columns)}); an NLP token line has one field per column")
        return Row(i, dict(zip(self.columns, f)), line)


def nlp_rows(src: Source, encoding: str | None = None) -> Iterator[tuple[Header, Row]]:
    """The token rows of an NLP file (`-`: stdin), with its header: the file's header line (`Header.parse`),
    or, for a file that starts with a token line (`nlp_kind`), Rev's columns (`Header.rev`). A header
    that names a column twice or lacks one, a first line that is neither, or a line with another number
    of fields, is a one-line error naming the line."""
    header: Header | None = None
    for i, line in input_lines(src, encoding):
        if not line.strip():
            continue
        if header is None:
            if is_header(line):
                header = Header.parse(src, i, line)
                continue
            if not nlp_kind(line):
                raise PunctkitError(f"{where(src, i)}: an NLP file starts with its header line "
                                    f"(token|speaker|ts|endTs|punctuation|...) or a token line of Rev's columns, "
                                    f"got {line[:40]!r}; give --input-format for another format")
            header = Header.rev(len(line.split("|")))
        yield header, header.row(src, i, line)
    if header is None:
        raise PunctkitError(f"{where(src, 1)}: empty NLP file (no header line, no token line); give an NLP file, "
                            f"or --input-format for another format")


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


@dataclass
class SpokenTurn:
    """One speaker's run of words of an NLP call read as a corpus (`read_nlp_turns`), or a unit of another
    format's reader (turns.unit_turns): who speaks (its rows' `speaker`; None where empty: the file does not say),
    its words and labels, and each word's (start, end) seconds (its row's `ts` and `endTs`; None where empty);
    the recording its times are in (None: the document's) and the turn's own (start, end) where its words share
    it, having none of their own (an stm segment's, a subtitle cue's)."""

    speaker: str | None
    words: list[str]
    labels: list[str]
    times: list[tuple[float | None, float | None]]
    recording: str | None = None
    span: tuple[float, float] | None = None


def read_nlp(path: Source, how: CorpusRead, split_contractions: bool = False) -> list[Utterance]:
    """An NLP file as a corpus: one utterance (the file's name), its words and labels; non-speech
    tokens are counted in the report, never words. `how.lines` is not supported (a call is one stream)."""
    return one_utterance(as_source(path).name, read_nlp_turns(path, how, split_contractions))


def one_utterance(name: str, turns: list[SpokenTurn]) -> list[Utterance]:
    """Turns as one utterance `name` (a call is one stream), their speakers and times dropped; none without turns."""
    if not turns:
        return []
    return [Utterance(name, [w for t in turns for w in t.words], [lab for t in turns for lab in t.labels])]


def read_nlp_turns(path: Source, how: CorpusRead, split_contractions: bool = False) -> list[SpokenTurn]:
    """An NLP file as a corpus, its words and labels cut into speaker turns (`SpokenTurn`: a change of the
    `speaker` column starts one), each word with its row's times; the words and labels, read on, are
    `read_nlp`'s (a mark after a turn's last word is that word's). Non-speech tokens are counted in the
    report, never words; a file without words is reported and gives no turn."""
    p = as_source(path)
    inventory, report = how.inventory, how.report
    if how.lines is not None:
        raise PunctkitError(f"{p}: --lines is for line-per-utterance text; an NLP file is one stream")
    toks: list[tuple[str, str]] = []
    spoken: list[tuple[str | None, float | None, float | None]] = []  # per word ('w' token): speaker, times
    for _, row in nlp_rows(p, how.encoding):
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
            who = row.fields["speaker"].strip() or None
            spoken += [(who, _time(p, row, "ts"), _time(p, row, "endTs"))] * len(pieces)
        punct = row.fields["punctuation"].strip()
        if punct and not mark_text(punct, inventory):
            report.note(f"marks without a class in {inventory.name} dropped ({punct})")
        elif punct:
            toks += [kind_tok for kind_tok in tokens(f" {mark_text(punct, inventory)} ") if kind_tok[0] == "m"]
    seg = label_tokens(toks, inventory, how.rules, how.lowercase)  # type: ignore[arg-type]
    report.note("marks dropped (rules, or not the first after a word)", seg.dropped_marks)
    if not seg.words:
        report.repair("input without any word skipped", str(p))
        return []
    turns: list[SpokenTurn] = []
    for word, label, (who, start, end) in zip(seg.words, seg.marks, spoken):
        if not turns or turns[-1].speaker != who:
            turns.append(SpokenTurn(who, [], [], []))
        turns[-1].words.append(word)
        turns[-1].labels.append(label)
        turns[-1].times.append((start, end))
    return turns


# ---------------------------------------------------------------- punctuate: in and out

@Reader
def nlp_units(src: Source, ctx: ReadContext) -> Iterator[AsrUtterance]:
    """NLP tokens for punctuate, one unit per speaker turn; each word's record holds its row (and
    the non-speech rows after it, which pass through); rows before a turn's first word go in the
    unit's `source` (a `Turn`). Times are read where given (`start_s`, `end_s`; None where empty)."""
    utt: AsrUtterance | None = None
    header: Header | None = None
    for header, row in nlp_rows(src, ctx.encoding):
        speaker = row.fields["speaker"]
        if utt is None or speaker != utt.source.speaker:
            if utt is not None:
                yield utt
            utt = ctx.start(ctx.next_id(), source=Turn(header, speaker), lineno=row.lineno, has_id=False,
                            speaker=speaker)
        if non_speech(row.token):
            (utt.records[-1]["after"] if utt.records else utt.source.before).append(row)
            if row.token.strip():  # in place for the outputs that write text (its row: `after`, `before`)
                utt.tags.append(NonWord(len(utt.words), row.token.strip(), {"row": row}))
            continue
        token = row.token.strip() + row.fields["punctuation"].strip()
        if not ctx.add_word(token, start=_time(src, row, "ts"), end=_time(src, row, "endTs"), speaker=speaker,
                            keep={"row": row, "after": []}):
            (utt.records[-1]["after"] if utt.records else utt.source.before).append(row)
    if utt is not None:
        yield utt


def _time(src: Source, row: Row, col: str) -> float | None:
    t = row.fields[col].strip()
    if not t:
        return None
    return seconds(t, where(src, row.lineno), col)


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


def recased(token: str, word: str) -> str:
    """A row's `token` in the case `word` (the token as shown, without its mark) shows it in; as it came
    where the word is not the token re-cased."""
    head = word[:len(token)]
    return head if head.casefold() == token.casefold() else token


COLUMNS = ("token", "speaker", "ts", "endTs", "punctuation", "prepunctuation", "case", "tags", "oldTs", "oldEndTs",
           "ali_comment")  # Rev's columns, for inputs of other formats


def nlp_lines(units: Iterable[Labelled], opts: OutputOptions) -> Iterator[str]:
    """The NLP format: an NLP input written back (its header, then each row with its `token` re-cased
    and its `punctuation` and `case` filled; non-speech rows and every other column as they came);
    an input of another format as new rows (Rev's columns: speaker 0, times where the input had them), its
    tokens that are not words (`<unk>`, a lone `-`) rows of their own in place, unlabelled. The `token` column
    never holds the mark (a dotted word keeps its period: `U.S.`), `punctuation` holds the label's mark
    (render.column_mark: `.` for `U.S.` ending a sentence)."""
    header_done = False
    for d in units:
        utt, labels, shown = d.utt, d.labels, d.shown
        turn = utt.source if isinstance(utt.source, Turn) else None
        header = turn.header if turn is not None else None
        if not header_done:
            if header is None or header.given:  # a file without a header line is written back without one
                yield "|".join(header.columns if header is not None else COLUMNS)
            header_done = True
        yield from (r.line for r in (turn.before if turn is not None else []))
        words = shown_words(utt, shown)
        tags = iter(utt.tags if turn is None else [])  # an NLP input's own rows: `before` and `after`
        tag = next(tags, None)
        for k, (lab, text) in enumerate(zip(labels, shown)):
            while tag is not None and tag.at <= k:
                yield _tag_row(tag)
                tag = next(tags, None)
            rec = utt.records[k] if k < len(utt.records) and isinstance(utt.records[k], dict) else {}
            row: Row | None = rec.get("row") if header is not None else None
            token = recased(row.token.strip(), words[k]) if row is not None else words[k]
            punct = column_mark(utt.written[k], text, lab)
            if row is not None:
                fields = dict(row.fields, token=token, punctuation=punct, case=rev_case(token))
                yield "|".join(fields[c] for c in header.columns)
                yield from (r.line for r in rec["after"])
            else:
                yield _new_row(token, rec, punct)
        while tag is not None:
            yield _tag_row(tag)
            tag = next(tags, None)


def _new_row(token: str, rec: dict, punct: str) -> str:
    """A row of Rev's columns (COLUMNS) for a token of another input format: speaker 0, its times."""
    return "|".join([token.replace("|", "/"), "0", _stamp(rec.get("start_s")), _stamp(rec.get("end_s")),
                     punct, "", rev_case(token), "[]", "", "", ""])


def _tag_row(tag: NonWord) -> str:
    """The row of a token that is not a word, from an input of another format: as it came, unlabelled."""
    return _new_row(tag.token, tag.record if isinstance(tag.record, dict) else {}, "")


def _stamp(t: float | None) -> str:
    return "" if t is None else f"{t:.4f}"
