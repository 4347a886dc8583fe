"""What a format is to punctkit: the two protocols every entry of the registry implements, and what a reader is
given.

- `InputFormat.read(src, ctx)`: punctuate's reader, the units of an input (`AsrUtterance`s), streaming;
  `InputFormat.streams(src, ctx)`: the same units as the engine takes them, each stream's together
  (base.StreamLines: an stm recording's segments; any other unit a stream of its own). Every
  reader builds its units through its `ReadContext`: `start` opens a unit, `add_word` adds a word with its times
  and speaker (a bare mark gives its mark to the word before and is counted as dropped), `next_id` and `line_id`
  make the ids of inputs without any (`talk.txt-000001`: base.made_id, the one rule).
- `OutputFormat.write(labelled, out, opts)`: punctuate's writer, labelled units (infer.engine.Labelled) written
  to a text stream, with `opts` (base.OutputOptions: the input's name for messages, the subtitle limits, ...).
- `CorpusRead`: how convert, prepare and score read a corpus (the inventory, the rules, the report, ...), the
  one argument of every corpus reader besides its input.

registry.Format implements both protocols for every format: its `units` is a function `(src, ctx)`, its
`emit` `(labelled, opts)` (lines of one unit) and its `stream` `(labelled units, opts)` (lines of all of them).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Protocol, TextIO

from punctkit.data.formats.base import (
    AsrUtterance,
    OutputOptions,
    Report,
    Source,
    StreamLines,
    made_id,
    source_name,
    stream_runs,
)
from punctkit.data.labels import LabelSet, O, Substitution
from punctkit.data.tokenize import NonWord, is_mark_token, mark_after, passes_through, read_passage, strip_space

if TYPE_CHECKING:
    from punctkit.data.labelled import Labelled


@dataclass
class ReadContext:
    """What a reader of punctuate's inputs is given besides the input: the model's inventory and rules (how a
    word's marks are read), the encoding of a file, whether the user gave the format (`told`: plain and Kaldi
    text then read lines that look like another format's), and what it counts (`dropped`: tokens without a
    word). It builds the units: `start` opens one, `add_word` adds to it."""

    name: str                         # the input's name in made-up ids (base.source_name)
    inventory: LabelSet
    rules: Substitution
    encoding: str | None = None
    told: bool = False
    dropped: int = 0                  # tokens without a word (a bare mark gives its mark to the word before)
    unit: AsrUtterance | None = None  # the unit `add_word` adds to (the last `start`ed)
    count: int = 0                    # ids made by `next_id`

    @classmethod
    def of(cls, src: Source, inventory: LabelSet, rules: Substitution, encoding: str | None = None,
           told: bool = False) -> "ReadContext":
        """The context of reading `src`."""
        return cls(source_name(src), inventory, rules, encoding, told)

    def next_id(self) -> str:
        """The next made-up id of the input (`talk.json-000001`, `-000002`, ...): its units counted."""
        self.count += 1
        return made_id(self.name, self.count)

    def line_id(self, lineno: int) -> str:
        """The made-up id of the unit on line `lineno` (`talk.txt-000007`)."""
        return made_id(self.name, lineno)

    def start(self, uttid: str = "", **fields: Any) -> AsrUtterance:
        """A new unit (AsrUtterance's `fields`: source, lineno, has_id, speaker, ...), which `add_word` adds to."""
        self.unit = AsrUtterance(uttid, **fields)
        return self.unit

    def add_word(self, word: str, *, start: float | None = None, end: float | None = None,
                 speaker: str | None = None, keep: dict[str, Any] | None = None) -> bool:
        """Add one token of the input (a word, possibly with marks attached) to the current unit, with its times
        in seconds and its speaker (where the input gives them), and what else the format keeps of it (`keep`:
        its `index` in a JSON list, a CTM line's fields, an NLP row, ...), all in the word's record
        (`start_s`, `end_s`, `speaker`); False when it holds no word (a bare mark gives its mark to the word
        before, when that has none), counted in `dropped`."""
        rec = {**(keep or {}), "start_s": start, "end_s": end}
        if speaker is not None:
            rec["speaker"] = speaker
        if add_token(self.unit, word, rec, self.inventory, self.rules):  # type: ignore[arg-type]
            return True
        self.dropped += 1
        return False

    def add_words(self, tokens: list[str], times: list[tuple[float, float]] | None = None) -> None:
        """Add `tokens` (a text's words: index None), each with its (start, end) from `times` (else none)."""
        for k, tok in enumerate(tokens):
            start, end = times[k] if times else (None, None)
            self.add_word(tok, start=start, end=end, keep={"index": None})


class Reader:
    """A reader function `(src, ctx) -> units` as an InputFormat: every caller reads through its `read(src, ctx)`
    (the one way to call a reader, as a registry entry's `read` is), or `streams(src, ctx)` to give the engine its
    units, the context made by the caller (`ReadContext.of(src, inventory, rules)`), which then holds what the
    reading counted (`ctx.dropped`). A reader of a format whose units run on in streams (an stm's recording and
    channel, a data directory's speaker: `Reader.keyed`) yields each unit with its stream's key (None: a stream of
    its own), which `with_keys` gives."""

    def __init__(self, fn: Callable[[Source, ReadContext], Iterator[Any]], keys: bool = False) -> None:
        self.fn, self.keys = fn, keys
        functools.update_wrapper(self, fn)

    @classmethod
    def keyed(cls, fn: Callable[[Source, ReadContext], Iterator[tuple[str | None, AsrUtterance]]]) -> "Reader":
        """A reader function that yields (stream key, unit) pairs as a Reader (a decorator)."""
        return cls(fn, keys=True)

    def read(self, src: Source, ctx: ReadContext) -> Iterator[AsrUtterance]:
        """The units of `src`, read with `ctx`."""
        return (u for _, u in self.with_keys(src, ctx)) if self.keys else self.fn(src, ctx)

    def with_keys(self, src: Source, ctx: ReadContext) -> Iterator[tuple[str | None, AsrUtterance]]:
        """The units of `src`, each with the key of the stream it is of (an stm's `file channel`; None: its own)."""
        return self.fn(src, ctx) if self.keys else ((None, u) for u in self.fn(src, ctx))

    def streams(self, src: Source, ctx: ReadContext) -> Iterator[StreamLines]:
        """The units of `src` as the engine takes them: each stream's together, in order (base.stream_runs: a run
        of one key, bounded), each other unit a stream of its own."""
        return stream_runs(self.with_keys(src, ctx))


def add_token(utt: AsrUtterance, token: str, record: Any, inventory: LabelSet, rules: Substitution) -> bool:
    """Add one ASR token (a word, possibly with marks attached) to `utt`; False if it is dropped, holding
    no word (a bare mark gives its mark to the word before, when that has none). A token that is not a word
    but passes through (tokenize.passes_through: `<unk>`, `[noise]`, a lone `-`) goes to `utt.tags`, with
    its record, in its place."""
    token = strip_space(token)  # Whisper's leading space goes; a no-break space is the word's
    if token and passes_through(token):
        utt.tags.append(NonWord(len(utt.words), token, record))
        return True
    if not token or is_mark_token(token):
        mk = mark_after(token, inventory, rules)
        if utt.words and mk != O and utt.marks[-1] == O:
            utt.marks[-1] = mk
        return False
    if isinstance(record, dict):
        record["token"] = token  # the word as given, for outputs that give it back (timed JSON)
    p = read_passage([token], inventory, rules)  # one word, however many `segment` sees in it
    utt.words.append(p.words[0])
    utt.marks.append(p.marks[0])
    utt.written.append(p.written[0])
    utt.records.append(record)
    return True


@dataclass
class CorpusRead:
    """How convert, prepare and score read a corpus: the inventory (None: a labelled format's own, the
    smallest that fits; a reader whose input names its own, a data directory, sets it), the substitution
    rules, the repair report, whether words are lower-cased, which lines (`(first, last)`), the encoding."""

    inventory: LabelSet | None = None
    rules: Substitution | None = None
    report: Report = field(default_factory=Report)
    lowercase: bool = False
    lines: tuple[int, int] | None = None
    encoding: str | None = None


class InputFormat(Protocol):
    """A format punctuate reads."""

    def read(self, src: Source, ctx: ReadContext) -> Iterator[AsrUtterance]:
        """The units of `src`, in order, streaming."""

    def streams(self, src: Source, ctx: ReadContext) -> Iterator[StreamLines]:
        """The units of `src` as the engine takes them, each stream's together, in order, streaming."""


class OutputFormat(Protocol):
    """A format punctuate writes."""

    def write(self, labelled: Iterable["Labelled"], out: TextIO, opts: OutputOptions) -> None:
        """The labelled units written to `out`, in order."""
