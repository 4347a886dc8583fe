"""The format registry: one `Format` entry per format, saying what it supports (the table, `REGISTRY`), and how
commands find an entry (`names`, `get_format`: an unknown name is one line listing them).

Every command finds its formats here: `convert`, `prepare` and `score` read through corpus.read (the entry's
corpus `reader`), `convert` and `decode` write through corpus.write (its `writer`, or `lines`), `punctuate` reads
through the entry's `streams` (protocol.InputFormat: its `units`, each stream's together) and writes through its
`write` (protocol.OutputFormat: its `emit` or `stream`; for a corpus format, the utterances collected and written).
Detection by content is detect.py's (`detect_format`: each entry's line classifier, `line_kind`), and every
JSON format is told by its shape in json_shapes.py's table.

A new format is one module (or a few functions in one) and one entry in `REGISTRY`, its functions of the uniform
signatures below:
- recognizer outputs in (Whisper JSON, NeMo manifests, Vosk results: recognizers.py; the ASR services'
  transcripts: services.py, a `Service` entry there): a row of json_shapes.SHAPES (its keys or shape, its
  reader), which makes its entry here;
- other inputs: a `units` reader `(src, ctx)` (protocol.Reader, building its units through the
  protocol.ReadContext; `Reader.keyed` where its units run on in streams, an stm's recordings: each yielded with
  its stream's key), a `line_kind` classifier, `ids`/`times`/`one_stream` set to what they carry;
- outputs that span utterances (SRT, WebVTT, timed JSON: subtitles.py): a `stream` writer taking every labelled
  unit in order (cue numbers, a header, sentences across units), `needs_times=True` where punctuate must ask for
  timed input.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, TextIO

from punctkit.data.formats import asr, cues, datadir_io, json_shapes, labelled, nlp, sclite, subtitles, text
from punctkit.data.formats.base import AsrUtterance, OutputOptions, Source, StreamLines, Utterance
from punctkit.data.formats.json_shapes import json_line_kind
from punctkit.data.formats.protocol import CorpusRead, ReadContext, Reader
from punctkit.data.labels import LabelSet
from punctkit.files import PunctkitError, check_output_file, write_lines

if TYPE_CHECKING:
    from punctkit.data.labelled import Labelled

# corpus reader: (path, how) -> utterances (a data directory sets `how.inventory` to its own)
CorpusReader = Callable[[Any, CorpusRead], "list[Utterance]"]
# corpus writer: (utterances, path, inventory, overwrite, inputs) -> None (atomic)
Writer = Callable[..., None]
# a corpus format's lines: utterances -> the lines of the file (or text stream), without newlines
Lines = Callable[[list[Utterance]], Iterable[str]]
# punctuate's writer of one labelled unit: (labelled, OutputOptions) -> its output lines
Emit = Callable[["Labelled", OutputOptions], Iterable[str]]
# punctuate's whole-output writer: (labelled units, OutputOptions) -> output lines, streaming
StreamOut = Callable[["Iterable[Labelled]", OutputOptions], Iterable[str]]


@dataclass(frozen=True)
class Format:
    """One format and what punctkit can do with it; punctuate's reader and writer of it (protocol.InputFormat's
    `read`, protocol.OutputFormat's `write`) where it has them."""

    name: str
    summary: str
    reader: CorpusReader | None = None  # corpus reader (convert, prepare, score)
    writer: Writer | None = None        # corpus writer (convert, decode, punctuate's corpus outputs)
    lines: Lines | None = None          # a corpus format's lines: its writer (a file), and a text stream's
    units: Reader | None = None         # punctuate's input, streaming (stdin works)
    lookalikes: bool = False            # plain text: `units` refuses lines like another format's unless `told`
    emit: Emit | None = None            # punctuate's output, one utterance at a time
    stream: StreamOut | None = None     # punctuate's output over all units (subtitles, timed JSON)
    line_kind: Callable[[str], str] | None = None  # detection: the format's name for a line that is its, else ''
    labels: bool = False                # carries label names (its own inventory); else marks in text
    ids: bool = False                   # carries utterance ids
    times: bool = False                 # carries word times
    needs_times: bool = False           # as punctuate's output: only for inputs with word times
    directory: bool = False             # a directory, not a file (not streamed; no stdin)
    one_stream: bool = False            # punctuate: its lines are one stream (sentences cross lines)
    probs: bool = False                 # as punctuate's output: shows probabilities (--probs)

    def __post_init__(self) -> None:
        if self.lines is not None and self.writer is None:  # a format written line by line: its file writer
            object.__setattr__(self, "writer", _lines_writer(self.lines))

    def read(self, src: Source, ctx: ReadContext) -> Iterator[AsrUtterance]:
        """punctuate's units of `src` (protocol.InputFormat); `ctx.told`: the user gave the format, which is
        obeyed (plain and Kaldi text, `lookalikes`, are then not refused for lines that look like another
        format's)."""
        return self.units.read(src, ctx)  # type: ignore[union-attr]

    def streams(self, src: Source, ctx: ReadContext) -> Iterator[StreamLines]:
        """punctuate's units of `src` as the engine takes them (protocol.InputFormat): each stream's together (an
        stm recording's segments), each other unit a stream of its own."""
        return self.units.streams(src, ctx)  # type: ignore[union-attr]

    def write(self, labelled: Iterable[Labelled], out: TextIO | str | Path, opts: OutputOptions) -> None:
        """Labelled units written in this format (protocol.OutputFormat): a writer over all units (`stream`:
        subtitles, timed JSON) or one per unit (`emit`) writes lines to the text stream `out`; a corpus format
        (text, kaldi_text, punctuator2, datadir: the words as given) is collected and written by `write_corpus`
        to `out` (a path, `opts.overwrite` and `opts.inputs` as corpus.write's; or a text stream)."""
        if self.stream is not None:
            out.writelines(line + "\n" for line in self.stream(labelled, opts))  # type: ignore[union-attr]
        elif self.emit is not None:
            for d in labelled:
                out.writelines(line + "\n" for line in self.emit(d, opts))  # type: ignore[union-attr]
        else:
            utts = [opts.corpus_utterance(d.utt, d.labels, d.shown) for d in labelled if d.utt.words]
            self.write_corpus(utts, out, opts.inventory, opts.overwrite, opts.inputs)

    def write_corpus(self, utts: list[Utterance], path: str | Path | TextIO, inventory: LabelSet | None = None,
                     overwrite: bool = False, inputs: Iterable[str | Path] = ()) -> None:
        """Utterances written to a file, which appears only when complete (its `writer`: a file output may replace
        an existing file, the user named it, never one of `inputs`; a data directory as `write_data_dir` writes
        it), or to a text stream (its `lines`, each with its newline; a directory never)."""
        if isinstance(path, (str, os.PathLike)):
            self.writer(utts, path, inventory, overwrite, inputs)  # type: ignore[misc]
        elif self.lines is None:
            raise PunctkitError(f"format {self.name} is a directory, which a text stream cannot hold")
        else:
            path.writelines(line + "\n" for line in self.lines(utts))


def _lines_writer(lines: Lines) -> Writer:
    """A corpus writer from a function giving the file's lines (written atomically, never over an input)."""
    def write_file(utts: list[Utterance], path: str | Path, inventory: LabelSet | None = None,
                   overwrite: bool = False, inputs: Iterable[str | Path] = ()) -> None:
        check_output_file(path, list(inputs), overwrite=overwrite)
        write_lines(path, lines(utts))
    return write_file


def json_entry(shape: json_shapes.JsonShape) -> Format:
    """The entry of a JSON format of json_shapes.SHAPES."""
    return Format(shape.name, shape.summary, units=shape.units, emit=shape.emit, line_kind=json_line_kind,
                  times=shape.times, one_stream=shape.one_stream)


# ---------------------------------------------------------------- the registry

REGISTRY: dict[str, Format] = {f.name: f for f in [
    Format("readable", "punctuate's default output: the input words as written, marks and case set "
           "(`uttid text` for inputs with ids)", emit=text.readable_out),
    Format("twocol", "`word<TAB>LABEL` a line, a blank line between utterances (IWSLT; punctuate --probs: "
           "a third column, the label's probability)",
           reader=labelled.read_twocol, lines=labelled.twocol_out, emit=labelled.twocol_emit,
           line_kind=labelled.twocol_kind, labels=True, probs=True),
    Format("punctuator2", "inline mark tokens, `so ,COMMA if we .PERIOD`, one utterance a line",
           reader=labelled.read_punctuator2, lines=labelled.punctuator2_out, line_kind=labelled.punctuator2_kind),
    Format("text", "punctuated text, one utterance (or document) a line", reader=text.read_text,
           lines=text.text_out, units=text.text_units, lookalikes=True, one_stream=True),
    Format("kaldi_text", "Kaldi `text`: the utterance id, then its punctuated text",
           reader=partial(text.read_text, id_lines=text.kaldi_text_lines), lines=text.kaldi_text_out,
           units=text.kaldi_text_units, lookalikes=True, ids=True),
    Format("trn", "sclite's and ESPnet's trn: the punctuated text, then the utterance id in parentheses, "
           "`So, what? (spk1-utt1)`", reader=partial(text.read_text, id_lines=sclite.trn_lines), lines=sclite.trn_out,
           units=sclite.trn_units, line_kind=sclite.trn_kind, ids=True),
    Format("datadir", "a data directory with `text` and `labels` (punctkit.data.datadir)",
           reader=datadir_io.read_datadir, writer=datadir_io.write_datadir, labels=True, ids=True, directory=True),
    Format("ctm", "`uttid channel start duration word [conf]` a line (ASR word times)",
           units=asr.ctm_units, emit=asr.ctm_out, line_kind=asr.ctm_kind, ids=True, times=True, needs_times=True),
    Format("jsonl", "a JSON object a line with an id and words (ASR services)",
           units=asr.jsonl_units, emit=asr.jsonl_out, line_kind=json_line_kind, ids=True, times=True,
           probs=True),
    *[json_entry(shape) for shape in json_shapes.SHAPES.values()],
    Format("nlp", "Rev's NLP format: a header, then `token|speaker|ts|endTs|punctuation|...|case|...` a token; "
           "written back with the tokens re-cased and `punctuation` and `case` filled, other columns kept",
           reader=nlp.read_nlp, units=nlp.nlp_units, stream=nlp.nlp_lines, line_kind=nlp.nlp_kind, times=True,
           one_stream=True),
    Format("stm", "NIST stm: `file channel speaker begin end [<label>] words` a segment (TED-LIUM's "
           "references), a recording's segments one stream; written back with the words punctuated",
           units=sclite.stm_units, emit=sclite.stm_emit, line_kind=sclite.stm_kind, times=True,
           needs_times=True),
    Format("srt", "SubRip subtitles: read a cue a unit (its words share its time); written with cues that end at "
           "sentence ends, within --max-cue-seconds, --max-line-chars and --max-cue-lines",
           units=cues.cue_units("srt"), stream=subtitles.srt_lines, line_kind=cues.timing_kind, times=True,
           one_stream=True, needs_times=True),
    Format("vtt", "WebVTT subtitles (read and written as srt)", units=cues.cue_units("vtt"), stream=subtitles.vtt_lines,
           line_kind=cues.timing_kind, times=True, one_stream=True, needs_times=True),
    Format("whisper-tsv", "Whisper's TSV (`--output_format tsv`): a `start end text` header, a segment a row, "
           "times in milliseconds; the readable output is the table again", units=cues.tsv_units,
           line_kind=cues.tsv_kind, times=True, one_stream=True),
    Format("timed-json", "JSON lines, a sentence a line (text, start, end) with its words (word, start, end, "
           "mark, case; --probs: p and probs)", stream=subtitles.timed_json_lines, probs=True),
]}
ROLES = {"reader": "read", "writer": "write", "units": "read by punctuate", "emit": "written by punctuate"}


def names(role: str) -> tuple[str, ...]:
    """The formats that have `role` (`reader`, `writer`, `units` or `emit`: written by punctuate,
    one utterance at a time or as a `stream`), in registry order."""
    if role == "emit":
        return tuple(n for n, f in REGISTRY.items() if f.emit is not None or f.stream is not None)
    return tuple(n for n, f in REGISTRY.items() if getattr(f, role) is not None)


def punctuate_outputs() -> tuple[str, ...]:
    """What punctuate writes: its own writers (`emit`), then the other corpus formats."""
    corpus = tuple(n for n in names("reader") if n in names("writer"))
    return tuple(dict.fromkeys(names("emit") + corpus))


# an output file's suffix that names one format punctuate writes (`-o talk.srt`: srt); other suffixes (.txt, .json,
# .tsv: several formats write them) name none
OUTPUT_SUFFIXES = {".srt": "srt", ".vtt": "vtt", ".ctm": "ctm", ".stm": "stm", ".trn": "trn", ".nlp": "nlp",
                   ".jsonl": "jsonl"}


def output_format(fmt: str | None, out: str | None) -> str:
    """The format punctuate writes: `fmt` where given; else the one the output file's suffix names (OUTPUT_SUFFIXES,
    any case), else `readable`."""
    if fmt:
        return fmt
    suffix = Path(out).suffix.lower() if out and out != "-" else ""
    return OUTPUT_SUFFIXES.get(suffix, "readable")


def get_format(name: str, role: str, what: str = "format", known: tuple[str, ...] | None = None) -> Format:
    """The entry of `name`, which must have `role`; otherwise one line listing the names that do
    (`known`: a command's own list, when it is wider than `role`)."""
    known = known or names(role)
    fmt = REGISTRY.get(name)
    if fmt is None or name not in known:
        if fmt is None:
            raise PunctkitError(f"unknown {what} '{name}' (known: {', '.join(known)})")
        raise PunctkitError(f"{what} '{name}' cannot be {ROLES[role]} here (known: {', '.join(known)})")
    return fmt
