"""What every format module shares: the utterance types, the repair report and how inputs are read.

- `Utterance`: a labelled utterance (id, words, one label per word): what `read` returns and
  `write` takes (convert, prepare, score, decode).
- `AsrUtterance`: what `punctkit punctuate` reads: words as the model reads them, the marks
  the input already had, each word as written, and per word the record it came from (CTM
  fields, JSON item) so that an output can give every word back as it came (every reader splits
  words with the one splitter, tokenize.split_words; every writer gives back the words as written,
  `shown_words` where the mark goes elsewhere), and the tokens that are not words (`tags`: `<unk>`,
  `[noise]`, a lone `-`), which no model reads and the outputs give back in place (`placed`).
- `StreamLines`: the units of one stream together (an stm recording's segments), as a reader whose units run on
  in streams gives them to the engine (`stream_runs`), and the engine's one unit (infer/engine.py: `Unit`).
- `TextInput`: an input already decoded to text (serve's request body), which every reader and
  detection take where they take a file's path (`-`: stdin): a `Source` is any of the three.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from punctkit.data.formats.times import Timeline, TimeRepairs
from punctkit.data.labels import CaseLexicon, LabelSet, Substitution
from punctkit.data.tokenize import NonWord, Passage, Written, as_written, read_passage, split_words, unmarked
from punctkit.data.utterance import Utterance  # noqa: F401 (the readers' and writers' type, re-exported)
from punctkit.files import PunctkitError, iter_lines, shown, stdin_lines

# characters of lines without words that a reader holds to give back with the next unit's line (an stm's comments,
# a table's blank lines); past it they come as a unit of their own
MAX_HELD = 1 << 20


@dataclass(frozen=True)
class Frame:
    """What a unit's input line holds besides its words, which the outputs that give the input back write
    around them: `before` (an stm's fields and the comment lines before it, a TSV row's times) and `after` (a
    trn's ` (id)`), and the format that wrote it (`fmt`: stm writes back only its own). `lines_only`: a unit of
    the input's own lines alone, no utterance (an stm's comments after its last segment, a long run of them or
    of a table's blank lines): those outputs write its lines, the others nothing, and punctuate does not count
    it as an utterance."""

    before: str = ""
    after: str = ""
    fmt: str = ""
    lines_only: bool = False


def lines_only(utt: "AsrUtterance") -> bool:
    """Whether `utt` is a unit of the input's own lines alone, no utterance (`Frame.lines_only`)."""
    return utt.frame is not None and utt.frame.lines_only


def made_id(name: str, n: int) -> str:
    """The id made up for unit (or line) `n` of an input without ids named `name`: `talk.txt-000007`."""
    return f"{name}-{n:06d}"


@dataclass
class AsrUtterance:
    """One utterance (or line of plain text) for punctuate: words, input marks, words as written,
    and per word the record it came from (CTM fields or JSON item; None for text)."""

    uttid: str
    words: list[str] = field(default_factory=list)
    marks: list[str] = field(default_factory=list)
    written: list[Written] = field(default_factory=list)
    records: list[Any] = field(default_factory=list)
    source: Any = None     # the JSON object of a jsonl line
    lineno: int = 0        # the input line it starts on
    has_id: bool = True    # False for plain-text lines (the id is FILE-LINENO, made up)
    # the input's line around the words, which the outputs that give the input back keep (`Frame`: a trn's
    # id, an stm's fields and comment lines, a TSV row's times); None: the readable output's own `uttid text`
    frame: Frame | None = None
    # who speaks its words (an NLP turn's speaker, an stm's, a service's label); None: the input does not say.
    # Consecutive units of one stream with different speakers are a turn change (decode/boundary.py)
    speaker: str | None = None
    # the tokens that are not words (tokenize.passes_through: `<unk>`, `[noise]`, a lone `-`), each where it
    # stood and with its record: no model reads them, and the outputs give them back in place (`placed`)
    tags: list[NonWord] = field(default_factory=list)


# words of one stream a reader gives as one unit (about 20 hours of speech); a longer stream is cut there
MAX_RUN_WORDS = 200_000


@dataclass
class StreamLines:
    """The units of one stream, in order (its lines): sentences, and the input's case, run on across them. A reader
    whose units run on in streams (an stm's recording and channel, a data directory's speakers: protocol.Reader's
    `keyed`) gives each stream's so (`stream_runs`: `key`, its name); any other unit is a stream of its own. The
    engine's one unit (infer/engine.py: `Unit`), with, for a data directory's stream, the `Stream` whose audio the
    model reads."""

    lines: list[AsrUtterance]
    key: str | None = None       # the stream's name in the input (an stm's `file channel`); None: none
    # a data directory's stream (data/streams.py `Stream`, which reads data directories above the formats: not
    # imported here), for `punctkit decode`, whose model reads its audio's features; None: none
    stream: Any = None

    @property
    def words(self) -> list[str]:
        """The words of all its lines, in order."""
        return [w for ln in self.lines for w in ln.words]


def stream_runs(keyed: Iterable[tuple[str | None, AsrUtterance]]) -> Iterator[StreamLines]:
    """Units, each with the key of the stream it is of (None: its own stream), as the lines of each stream: a run
    of consecutive units of one key, cut after MAX_RUN_WORDS words (memory stays bounded; the engine then ends the
    stream there), and each unit of key None alone."""
    run: list[AsrUtterance] = []
    key: str | None = None
    words = 0
    for k, u in keyed:
        if run and (k is None or k != key or words >= MAX_RUN_WORDS):
            yield StreamLines(run, key)
            run, words = [], 0
        if k is None:
            yield StreamLines([u])
            continue
        run.append(u)
        key = k
        words += len(u.words)
    if run:
        yield StreamLines(run, key)


@dataclass(frozen=True)
class OutputOptions:
    """What punctuate's writers may need besides the words: the inventory (the columns of
    probability rows) and the subtitle limits (a cue's seconds, characters a line, lines). Where a
    stream starts and ends is each unit's own (`Labelled.starts`, `Labelled.ends`: the engine's)."""

    inventory: LabelSet | None = None
    max_cue_seconds: float = 7.0
    max_line_chars: int = 42
    max_cue_lines: int = 2
    lexicon: CaseLexicon | None = None  # the model's Mixed forms (the shown words' case comes from them)
    # what the timed writers did to times that went backwards (times.Timeline), for punctuate's report
    time_repairs: TimeRepairs = field(default_factory=TimeRepairs, compare=False)
    src: Source = "-"  # the input, named in messages (`talk.ctm:3 (utterance u1): ...`)
    # a corpus format's file output (written whole): whether it may replace a file, and the inputs it never replaces
    overwrite: bool = False
    inputs: tuple[str | Path, ...] = ()

    def word_column(self, utt: AsrUtterance, shown: list[str]) -> list[str]:
        """Each word of `utt` as the input gave it, without the marks at its end (the output gives the
        mark in a label): twocol's word column and the words of the corpus formats punctuate writes
        (`$5`, `10\u00a0km`, `q&a`, never the model's tokens). Only the model changes its case: a
        case-aware model's words in the case they are shown in (`shown_words`: what users see, so
        that scoring reads it); else each word in the input's own case."""
        if self.inventory is not None and self.inventory.case_aware:
            return shown_words(utt, shown)
        return [as_written(w) for w in utt.written]

    def corpus_utterance(self, utt: AsrUtterance, labels: list[str], shown: list[str]) -> Utterance:
        """A punctuated unit as a corpus writer's utterance: its words (`word_column`) and labels."""
        return Utterance(utt.uttid, self.word_column(utt, shown), labels)


def as_given(w: Written) -> str:
    """A word as the input wrote it, rebuilt from its parts (marks before closing quotes)."""
    return w.lead + w.core + w.close[:w.at] + w.marks + w.close[w.at:]


def given_words(utt: AsrUtterance) -> list[str]:
    """Each word of `utt` as the input gave it: its record's `token` (ASR formats), else rebuilt."""
    return [rec["token"] if isinstance(rec, dict) and "token" in rec else as_given(w)
            for w, rec in zip(utt.written, utt.records + [None] * (len(utt.written) - len(utt.records)))]


def placed(utt: AsrUtterance, shown: list[str]) -> list[str]:
    """The unit's tokens in input order, for outputs that write its text: each word as shown, and each token
    that is not a word (`AsrUtterance.tags`) as it came, in its place."""
    out: list[str] = []
    tags = iter(utt.tags)
    tag = next(tags, None)
    for k in range(len(shown) + 1):
        while tag is not None and (tag.at <= k or k == len(shown)):
            out.append(tag.token)
            tag = next(tags, None)
        if k < len(shown):
            out.append(shown[k])
    return out


def glued(utt: AsrUtterance, shown: list[str]) -> list[str]:
    """`placed` as one string a word, for outputs that hold words apart (subtitle cues): the tokens that are
    not words joined, with a space, to the word after them (those after the last word: to it)."""
    out = [" ".join([t.token for t in utt.tags if t.at == k] + [s]) for k, s in enumerate(shown)]
    after = [t.token for t in utt.tags if t.at >= len(shown)]
    if out and after:
        out[-1] = " ".join([out[-1], *after])
    return out


def word_spans(utt: AsrUtterance, timeline: Timeline | None = None) -> list[tuple[float, float]] | None:
    """Each word's (start, end) seconds for the outputs that need them (srt, vtt, ctm, stm): its own (an end
    defaults to the start); a word without a start (WhisperX's numerals, Gentle's words not found in the
    audio) lies between its neighbours, from the end of the timed word before it (else the start of the one
    after) to the start of the timed word after it (else that same point). Every span passes through
    `timeline` (the output's; else one of the unit's own): times that go backwards are moved forward
    (times.Timeline). None when no word of the unit has a start (the caller's one-line error)."""
    recs = [r if isinstance(r, dict) else {} for r in utt.records[:len(utt.words)]]
    recs += [{}] * (len(utt.words) - len(recs))
    own = [None if r.get("start_s") is None else
           (r["start_s"], r["start_s"] if r.get("end_s") is None else r["end_s"]) for r in recs]
    if own and all(t is None for t in own):
        return None
    before: list[float | None] = []
    last = None
    for t in own:
        before.append(last)
        last = t[1] if t is not None else last
    after: list[float | None] = [None] * len(own)
    nxt = None
    for k in range(len(own) - 1, -1, -1):
        after[k] = nxt
        nxt = own[k][0] if own[k] is not None else nxt
    spans = []
    timeline = timeline if timeline is not None else Timeline()
    for t, a, b in zip(own, before, after):
        if t is None:
            start = a if a is not None else b
            t = (start, max(start, b if b is not None else start))  # type: ignore[type-var]
        spans.append(timeline.span(*t))  # type: ignore[misc]
    return spans


def shown_words(utt: AsrUtterance, shown: list[str]) -> list[str]:
    """Each word of `utt` as the input gave it, in the case it is shown in, without the marks at its
    end (tokenize.unmarked)."""
    return [unmarked(w, s) for w, s in zip(utt.written, shown)]


def label_probs(row: Any, inventory: LabelSet) -> dict[str, float]:
    """One word's probability row as {label: p} (inventory order, 4 decimals)."""
    return {lab: round(float(p), 4) for lab, p in zip(inventory.labels, row)}


def chosen_prob(row: Any, inventory: LabelSet, label: str) -> float:
    """The probability of `label` in one word's row (4 decimals)."""
    return round(float(row[inventory.index(label)]), 4)


@dataclass
class Report:
    """Counts of repairs and rejections, with the first few locations of each kind.

    `strict` turns every repair into an error naming file and line, except the repairs the
    user asked for (`asked`: prepare's --decode-html, --drop-notes, ...); notes (marks
    dropped by the substitution rules) never fail.
    """

    strict: bool = False
    repairs: Counter = field(default_factory=Counter)
    notes: Counter = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def repair(self, kind: str, loc: str, detail: str = "", asked: bool = False) -> None:
        """Record one repair; in strict mode, raise instead, unless an option `asked` for it."""
        if self.strict and not asked:
            raise PunctkitError(f"{loc}: {kind}{': ' + detail if detail else ''} (strict mode)")
        self.repairs[kind] += 1
        ex = self.examples.setdefault(kind, [])
        if len(ex) < 3:
            ex.append(shown(f"{loc}{': ' + detail if detail else ''}"))  # quoted input: controls escaped

    def note(self, kind: str, n: int = 1) -> None:
        """Record something expected, such as marks removed by the rules."""
        if n:
            self.notes[kind] += n

    def lines(self) -> list[str]:
        """The report as text lines."""
        out = [f"repairs: {sum(self.repairs.values())}"]
        for kind, n in sorted(self.repairs.items()):
            out.append(f"  {kind}: {n}")
            out += [f"    e.g. {e}" for e in self.examples.get(kind, [])]
        for kind, n in sorted(self.notes.items()):
            out.append(f"note: {kind}: {n}")
        return out


@dataclass(frozen=True)
class TextInput:
    """An input already decoded to text, read by the readers and detection as a file is: `name`
    stands where a file's name does, in utterance ids made for inputs without ids (`request-000001`)
    and in messages (`request:2: ...`, which is also what `str` gives). It has no encoding: one given
    to a reader is for files."""

    name: str
    text: str

    def __str__(self) -> str:
        return self.name

    def lines(self, span: tuple[int, int] | None = None) -> Iterator[tuple[int, str]]:
        """(1-based line number, line) as the decoder gives a file's: lines end at `\n` only, their
        `\r` dropped, and a final newline starts no line; `span=(first, last)` keeps those lines."""
        first, last = span or (1, None)
        pieces = self.text.split("\n")
        if pieces[-1] == "":
            pieces.pop()
        for i, line in enumerate(pieces, 1):
            if last is not None and i > last:
                return
            if i >= first:
                yield i, line.rstrip("\r")

    def sample(self, head: int = 1 << 16, windows: int = 8, window: int = 1 << 13) -> list[str]:
        """Whole lines from a bounded sample for format detection, taken as `files.sample_lines` takes
        a file's (counted in characters): all of a small text; else its head and `windows` evenly
        spaced slices, the partial lines at their cut ends left out."""
        text = self.text
        if len(text) <= head + windows * window:
            return [line for _, line in self.lines()]
        out = text[:head].split("\n")[:-1]
        for k in range(1, windows + 1):
            start = k * len(text) // (windows + 1)
            out += text[start:start + window].split("\n")[1:-1]
        return [line.rstrip("\r") for line in out]


# what the readers take: a file's path, `-` for standard input, or a text already decoded
Source = str | Path | TextInput


def input_lines(src: Source, encoding: str | None = None,
                lines: tuple[int, int] | None = None) -> Iterator[tuple[int, str]]:
    """(line number, line) of a file, of standard input for `-` (its bytes, decoded as files are), or
    of a `TextInput`; `lines=(first, last)` keeps only those lines of a file or text."""
    if isinstance(src, TextInput):
        yield from src.lines(lines)
    elif str(src) == "-":
        yield from stdin_lines(encoding)
    else:
        yield from iter_lines(src, lines, encoding)


def source_name(src: Source) -> str:
    """The name used in utterance ids and messages (`stdin` for `-`; a `TextInput`'s own name)."""
    if isinstance(src, TextInput):
        return src.name
    return "stdin" if str(src) == "-" else Path(src).name


def as_source(path: Source) -> Path | TextInput:
    """A corpus reader's input: a file's `Path`, or a `TextInput` as it is (both have `name`, and
    `str` of either names it in messages)."""
    return path if isinstance(path, TextInput) else Path(path)


def split_text(text: str, inventory: LabelSet, rules: Substitution) -> Passage:
    """The words of `text` (split on white space, never at a no-break space: tokenize.split_words), the
    mark (label mark, O for none) after each, and each as written."""
    return read_passage(split_words(text), inventory, rules)


def flatten(utts: list[Utterance]) -> tuple[list[str], list[str]]:
    """All words and all labels of a list of utterances, in order."""
    return [w for u in utts for w in u.words], [lab for u in utts for lab in u.labels]
