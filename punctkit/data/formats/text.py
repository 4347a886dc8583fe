"""Plain text (`text`: one utterance, or document, a line) and Kaldi text (`kaldi_text`: the
utterance id first, `utt1 So, if we ...`).

Each is read two ways from the same lines: as a corpus (`read_text`: IWSLT-style words and
their marks, via punctkit.data.tokenize, for convert/prepare/score; `TextOptions`: the repairs of
published text that prepare applies when asked, and one stream per file) and for punctuate
(`text_units`, `kaldi_text_units`: white-space tokens, never split at a no-break space
(tokenize.split_words), passed through as written, streaming).
`kaldi_text_lines` is the one Kaldi-text line reader under both.
"""
from __future__ import annotations

import html
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Iterator

from punctkit.data.datadir import read_data_dir, read_table
from punctkit.data.formats import cues, nlp
from punctkit.data.formats.asr import check_one_word_id
from punctkit.data.formats.base import (
    MAX_HELD,
    AsrUtterance,
    OutputOptions,
    Report,
    Source,
    TextInput,
    Utterance,
    as_source,
    input_lines,
    made_id,
    placed,
    split_text,
)
from punctkit.data.formats.protocol import CorpusRead, ReadContext, Reader
from punctkit.data.streams import StreamOrder, stream_order
from punctkit.data.tokenize import join_marked, label_tokens, read_passage, split_contraction, split_words, tokens
from punctkit.data.utterance import is_one_word
from punctkit.files import PunctkitError, where

if TYPE_CHECKING:
    from punctkit.data.datadir import DataDir, Timing
    from punctkit.data.labelled import Labelled

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


def kaldi_text_lines(src: Source, encoding: str | None = None,
                     lines: tuple[int, int] | None = None, told: bool = True) -> Iterator[tuple[int, str, str]]:
    """(line number, utterance id, the rest of the line) of Kaldi `text`; lines without an id are
    skipped, a repeated id is an error; `told=False` (punctuate, the format detected): lines that look
    like another format's are refused (`checked_lines`)."""
    seen: set[str] = set()
    for i, line in checked_lines(src, encoding, told, lines):
        uttid, *rest = line.split(None, 1) or [""]
        if not uttid:
            continue
        if uttid in seen:
            raise PunctkitError(f"{where(src, i)}: duplicate utterance id '{uttid}'")
        seen.add(uttid)
        yield i, uttid, rest[0] if rest else ""


# the lines of a format of text with utterance ids: (src, encoding, lines) -> (line number, id, the words' text)
IdLines = Callable[..., Iterator[tuple[int, str, str]]]


# HTML entities (`&#39;`, `&#x27;`, `&quot;`, `&amp;`); one that names nothing (`&foo;`) stays as written.
ENTITY = re.compile(r"&(?:#[0-9]+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]*);")
# A bracketed span on one line; it is a stage or sound note when its text starts with a capital
# letter (`(Laughter)`, `(Applause)`, `[Music]`, `(Audience: Yes.)`); brackets around other text
# (`(along with a lot of other stuff)`, `(1968)`) hold speech, whose words are kept.
BRACKETED = re.compile(r"\(([^()]*)\)|\[([^\[\]]*)\]")


@dataclass(frozen=True)
class TextOptions:
    """How prepare reads published text (plain or Kaldi text); each repair is counted in the
    report with file:line examples, and none fails --strict (the user asked for it).

    - `html`: HTML entities decoded (`I&#39;m` -> `I'm`, `&quot;`, `&amp;`);
    - `notes`: bracketed stage and sound notes removed (`(Laughter)`, `[Music]`: BRACKETED);
    - `drop_lines`: lines that match this pattern at their start dropped (`Translator: ...`),
      matched against the line as read;
    - `split_contractions`: IWSLT's tokens (`don't` -> `do n't`: tokenize.split_contraction);
    - `one_stream`: the lines of a plain-text file are one word stream, one utterance (a
      sentence goes on across lines; the marks that start a line end the line before).
    """

    html: bool = False
    notes: bool = False
    drop_lines: re.Pattern[str] | None = None
    split_contractions: bool = False
    one_stream: bool = False

    @property
    def repairs(self) -> bool:
        """Whether any line repair is asked for (html, notes, drop_lines)."""
        return self.html or self.notes or self.drop_lines is not None


PLAIN = TextOptions()


def line_pattern(regex: str, option: str = "--drop-lines") -> re.Pattern[str]:
    """`regex` compiled, or a one-line error naming `option`."""
    try:
        return re.compile(regex)
    except re.error as e:
        raise PunctkitError(f"{option} {regex!r}: not a regular expression ({e})") from None


def repair_line(line: str, opts: TextOptions, report: Report, loc: str) -> str | None:
    """`line` after the repairs `opts` asks for, each counted at `loc`; None when it is dropped."""
    if opts.drop_lines is not None and opts.drop_lines.match(line):
        report.repair("line dropped (--drop-lines)", loc, line.strip()[:40], asked=True)
        return None
    if opts.html and "&" in line:
        line = ENTITY.sub(lambda m: _entity(m, report, loc), line)
        if "&" in line:  # escaped twice (`&amp;quot;`, 30 in TED's transcripts): once more
            line = ENTITY.sub(lambda m: _entity(m, report, loc), line)
    if opts.notes and ("(" in line or "[" in line):
        line = BRACKETED.sub(lambda m: _note(m, report, loc), line)
    return line


def _entity(m: re.Match[str], report: Report, loc: str) -> str:
    text = html.unescape(m.group())
    if text != m.group():
        report.repair("HTML entity decoded (--decode-html)", loc, f"{m.group()} -> {text}", asked=True)
    return text


def _note(m: re.Match[str], report: Report, loc: str) -> str:
    inside = (m.group(1) if m.group(1) is not None else m.group(2)).strip()
    if not inside[:1].isupper():
        return m.group()
    report.repair("stage or sound note removed (--drop-notes)", loc, m.group()[:40], asked=True)
    return " "


def line_tokens(line: str, opts: TextOptions, report: Report, loc: str) -> list[tuple[str, str]]:
    """`tokenize.tokens` of one line; with `split_contractions`, each split counted at `loc`."""
    toks = tokens(line)
    if not opts.split_contractions:
        return toks
    out: list[tuple[str, str]] = []
    for kind, tok in toks:
        pieces = split_contraction(tok) if kind == "w" else [tok]
        if len(pieces) > 1:
            report.repair("contraction split (--split-contractions)", loc, f"{tok} -> {' '.join(pieces)}",
                          asked=True)
        out += [(kind, piece) for piece in pieces]
    return out


def read_text(path: Source, how: CorpusRead, id_lines: IdLines | None = None,
              opts: TextOptions = PLAIN) -> list[Utterance]:
    """Read punctuated text as a corpus, one utterance a line (`id_lines`: each line's id and words, as
    `kaldi_text_lines` gives Kaldi `text`'s, id first, and sclite.trn_lines a trn's, id last;
    `opts.one_stream`: one utterance a file, named after it), repaired as `opts` asks."""
    p = as_source(path)
    report = how.report
    if id_lines is not None:
        if opts.one_stream:
            raise PunctkitError(f"{p}: a text with utterance ids has an utterance a line; one stream a file is "
                                "for plain text")
        rows: Iterator[tuple[int, str, str]] = id_lines(p, how.encoding, how.lines)
    else:
        rows = ((i, made_id(p.name, i), line) for i, line in input_lines(p, how.encoding, how.lines))
    units: Iterable[tuple[int, str, str, list[tuple[str, str]]]] = _repaired(rows, p, opts, report)
    if opts.one_stream:
        units = [(0, p.name, "", [t for *_, toks in units for t in toks])]
    utts = []
    for i, uttid, line, toks in units:
        seg = label_tokens(toks, how.inventory, how.rules, how.lowercase)  # type: ignore[arg-type]
        report.note("marks dropped (rules, or not the first after a word)", seg.dropped_marks)
        report.note("quotes, brackets and other symbols dropped", seg.dropped_symbols)
        if seg.words:
            utts.append(Utterance(uttid, seg.words, seg.marks))
        elif opts.one_stream:
            report.repair("input without any word skipped", str(p))
        elif line.strip():
            report.repair("line without any word skipped", where(p, i), line.strip()[:40])
    return utts


def _repaired(rows: Iterator[tuple[int, str, str]], p: Path | TextInput, opts: TextOptions,
              report: Report) -> Iterator[tuple[int, str, str, list[tuple[str, str]]]]:
    """(line number, utterance id, line, its tokens) of the lines `opts` keeps, each repaired."""
    for i, uttid, line in rows:
        loc = where(p, i)
        fixed = repair_line(line, opts, report, loc) if opts.repairs else line
        if fixed is not None:
            yield i, uttid, fixed, line_tokens(fixed, opts, report, loc)


# a line of plain text that looks like a JSON value of objects or strings (`{"text": ...`, `[{"start": ...`)
JSON_LIKE = re.compile(r'^\s*(?:\{\s*"|\[\s*[{"\[])')
LOOK_LINES = 100  # the non-blank lines of plain text checked for look-alikes (`check_lookalikes`)


def looks_like(line: str) -> str:
    """The format whose line a line of plain text looks like: `srt` or `vtt` (a timing line,
    cues.timing_like), `nlp` (a row, nlp.nlp_like), `jsonl` (a JSON object or array, JSON_LIKE); else ''."""
    if cues.timing_like(line):
        return cues.timing_kind(line) or "srt"
    if nlp.nlp_like(line):
        return "nlp"
    return "jsonl" if JSON_LIKE.match(line) else ""


def check_lookalikes(src: Source, lines: Iterator[tuple[int, str]]) -> list[tuple[int, str]]:
    """The first lines of plain text (up to LOOK_LINES non-blank ones, or MAX_HELD characters), read off
    `lines` and given back once checked: when 2 or more, and at least half, of the non-blank ones look like
    one other format's lines (`looks_like`), the input is that format read as words, a one-line error
    naming the first such line and the format to give. Prose with the odd `|`, `-->` or `{"` passes."""
    held: list[tuple[int, str]] = []
    kinds: list[tuple[int, str, str]] = []
    size = 0
    for i, line in lines:
        held.append((i, line))
        size += len(line)
        if line.strip():
            kinds.append((i, line, looks_like(line)))
        if len(kinds) >= LOOK_LINES or size > MAX_HELD:
            break
    counts = Counter(k for *_, k in kinds if k)
    if counts:
        fmt, k = counts.most_common(1)[0]
        if k >= 2 and k >= 0.5 * len(kinds):
            i, line = next((i, line) for i, line, kind in kinds if kind == fmt)
            raise PunctkitError(f"{where(src, i)}: {k} of the first {len(kinds)} lines look like {fmt} lines, "
                                f"not plain text (e.g. {line.strip()[:40]!r}): give --input-format {fmt} to read "
                                f"it as {fmt} (or --input-format text to punctuate these lines as words)")
    return held


def checked_lines(src: Source, encoding: str | None = None, told: bool = False,
                  lines: tuple[int, int] | None = None) -> Iterator[tuple[int, str]]:
    """`input_lines` of plain or Kaldi text read by punctuate, the head checked for lines that look like another
    format's (`check_lookalikes`) unless `told` (the user gave the format: it is obeyed)."""
    rows = input_lines(src, encoding, lines)
    if not told:
        yield from check_lookalikes(src, rows)
    yield from rows


@Reader
def text_units(src: Source, ctx: ReadContext) -> Iterator[AsrUtterance]:
    """Plain text for punctuate, one unit per input line (lines without words give empty units);
    the lines are one stream (a sentence may go on to the next line). Unless `ctx.told` (the user gave
    the format), lines that look like another format's are refused (`checked_lines`)."""
    for i, line in checked_lines(src, ctx.encoding, ctx.told):
        p = split_text(line, ctx.inventory, ctx.rules)
        yield AsrUtterance(ctx.line_id(i), p.words, p.marks, p.written, [None] * len(p.words),
                           lineno=i, has_id=False, tags=p.tags)


@Reader.keyed
def kaldi_text_units(src: Source, ctx: ReadContext) -> Iterator[tuple[str | None, AsrUtterance]]:
    """Kaldi `text` for punctuate: `uttid words...` per line (an id without words gives an empty utterance),
    each its own stream; but a data directory's `text` (a file named `text` with `utt2spk` beside it) has its
    speakers' utterances run on, one after another, as `punctkit decode` of the directory has them
    (each unit's stream key, protocol.Reader.keyed: the speaker; None: its own stream); and where the directory
    says when or who (`segments`, `utt2reco`, `ctm`: `turns_beside`), its utterances come as decode reads them: a
    recording's in time order, one stream (the key: the recording), each with its speaker (a change a turn) and its
    words' times. Unless `ctx.told`, lines that look like another
    format's are refused."""
    beside = turns_beside(src)
    if beside is None:
        speakers = speakers_beside(src)
        for i, uttid, rest in kaldi_text_lines(src, ctx.encoding, told=ctx.told):
            p = read_passage(split_words(rest), ctx.inventory, ctx.rules)
            yield speakers.get(uttid), AsrUtterance(uttid, p.words, p.marks, p.written, [None] * len(p.words),
                                                    lineno=i, tags=p.tags)
        return
    order, timing, dd = beside
    units: dict[str, tuple[str, AsrUtterance]] = {}
    for i, uttid, rest in kaldi_text_lines(src, ctx.encoding, told=ctx.told):
        p = read_passage(split_words(rest), ctx.inventory, ctx.rules)
        times = timing.word_times(uttid, len(p.words)) if timing.known else []
        records = [{"start_s": a, "end_s": b} for a, b in times] if len(times) == len(p.words) else \
            [None] * len(p.words)  # a text whose words are not the directory's (marks in it): times unknown
        units[uttid] = order.keys.get(uttid, uttid), AsrUtterance(
            uttid, p.words, p.marks, p.written, records, lineno=i, tags=p.tags,
            speaker=dd.utt2spk.get(uttid, uttid) if order.turns else None)
    yield from (units[u.uttid] for u in order.utts if u.uttid in units)


def turns_beside(src: Source) -> "tuple[StreamOrder, Timing, DataDir] | None":
    """A data directory's `text` (`src` named `text`, with `segments`, `utt2reco` or `ctm` beside it) as `punctkit
    decode` reads the directory: its stream order (data/streams.py stream_order) and its words' times
    (data/timing.py read_timing) and the directory; None for any other input."""
    if isinstance(src, TextInput) or str(src) == "-":
        return None
    p = Path(src)
    if p.name != "text" or not any((p.parent / f).is_file() for f in ("segments", "utt2reco", "ctm")):
        return None
    from punctkit.data.timing import read_timing  # here: data/timing.py reads a ctm through formats/asr.py

    dd = read_data_dir(p.parent, need_labels=False)
    timing = read_timing(dd)
    return stream_order(dd, timing if timing.known else None), timing, dd


def speakers_beside(src: Source) -> dict[str, str]:
    """utterance -> speaker of a data directory's `text` (`src` named `text`, with `utt2spk` beside it), else {}."""
    if isinstance(src, TextInput) or str(src) == "-":
        return {}
    p = Path(src)
    if p.name != "text" or not (p.parent / "utt2spk").is_file():
        return {}
    return dict(read_table(p.parent / "utt2spk", check_sorted=False))


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


def readable_out(d: Labelled, opts: OutputOptions) -> Iterator[str]:
    """punctuate's default output: the input words as written, marks and case set, on the input's line
    (`AsrUtterance.frame`: trn, stm, whisper-tsv); `uttid text` for other inputs with ids; the tokens that are not
    words (`<unk>`, a lone `-`) in place."""
    utt = d.utt
    line = " ".join(placed(utt, d.shown))
    if utt.frame is not None:
        yield (utt.frame.before + line + utt.frame.after).strip(" ")
        return
    if utt.has_id:
        check_one_word_id(utt, opts.src, "an `uttid text`")
    yield f"{utt.uttid} {line}".rstrip() if utt.has_id else line
