"""`punctkit punctuate`: files in any input format through the inference engine's one labelling
call (`Engine.label`, punctkit/infer/) into any output format (`write_units`, which `serve` writes
through too).

    >>> from punctkit import load_model
    >>> punctuate_file(load_model("fast"), "talk.ctm", "talk.srt", fmt="srt")
"""
from __future__ import annotations

import contextlib
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any, Iterable, Iterator

from punctkit.data.datadir import check_data_dir_output
from punctkit.data.formats import Format, ReadContext, detect_for, get_format, names
from punctkit.data.formats.base import OutputOptions, StreamLines, lines_only
from punctkit.data.formats.registry import output_format, punctuate_outputs
from punctkit.data.labels import default_substitution
from punctkit.files import PunctkitError, atomic_write, check_not_input, check_output_file, is_stream, require_stdout
from punctkit.files.text_codec import ReadMeter
from punctkit.infer.engine import Engine, Labelled
from punctkit.infer.render import Casing
from punctkit.progress import WordProgress
from punctkit.text.frontend import Frontend

INPUT_FORMATS = names("units")
OUTPUT_FORMATS = punctuate_outputs()  # corpus formats without a punctuate writer are collected, then written


@dataclass
class PunctuateStats:
    """What `punctuate_file` did."""

    unit: str = "utterances"  # or "lines" (plain text)
    utterances: int = 0
    words: int = 0
    unknown: int = 0         # words with a piece unknown to the model's frontend
    empty: int = 0           # lines or utterances without any word (written empty)
    dropped_tokens: int = 0  # CTM/JSON tokens without a word (a bare mark goes to the word before)
    times_moved: str = ""    # the timed writers' report of times that went backwards (times.TimeRepairs)
    seconds: float = 0.0     # of `punctuate_file`: reading, labelling and writing (the model loaded before)
    total_seconds: float | None = None  # of the whole process, start-up and model loading included (the CLI's)

    def count(self, words: list[str], frontend: Frontend) -> None:
        """Count one line or utterance."""
        self.utterances += 1
        self.words += len(words)
        self.empty += not words
        self.unknown += sum(frontend.unk_id in frontend.word_ids(w) for w in words)

    def summary(self) -> str:
        """The line `punctkit punctuate` ends with: what it read, words/s of its own work (reading,
        labelling, writing: the model loaded), the whole run's seconds where known, and warnings."""
        rate = self.words / self.seconds if self.seconds else 0.0
        out = (f"{self.utterances:,} {self.unit}, {self.words:,} words in {self.seconds:.2f} s "
               f"({rate:,.0f} words/s reading, labelling and writing")
        if self.total_seconds is not None:
            out += f"; {self.total_seconds:.2f} s in all, with start-up and loading the model"
        out += ")"
        return "".join([out] + [f"; warning: {w}" for w in self.warnings()])

    def warnings(self) -> list[str]:
        """What the user should look at (the summary's warnings; --quiet prints them alone)."""
        out = []
        if self.empty:
            out.append(f"{self.empty} {self.unit} without words (written empty)")
        if self.dropped_tokens:
            out.append(f"{self.dropped_tokens} tokens without a word dropped")
        if self.times_moved:
            out.append(self.times_moved)
        if self.words and self.unknown > self.words / 2:
            out.append(f"{100 * self.unknown / self.words:.0f}% of the words are unknown to the model")
        return out


def _open_out(out: str | Path | None) -> Any:
    if out is None or str(out) == "-":
        if sys.stdout is None:  # closed (`>&-`) in a program of the user's: one line, not an AttributeError
            require_stdout()
        return contextlib.nullcontext(sys.stdout)
    return atomic_write(out)


def output_options(engine: Engine, max_cue_seconds: float = 7.0, max_line_chars: int = 42,
                   max_cue_lines: int = 2) -> OutputOptions:
    """The writers' options, the subtitle limits checked."""
    if not (max_cue_seconds > 0 and max_line_chars > 0 and max_cue_lines > 0):
        raise PunctkitError("--max-cue-seconds, --max-line-chars and --max-cue-lines must be positive")
    return OutputOptions(engine.inventory, max_cue_seconds, max_line_chars, max_cue_lines,
                         engine.frontend.case_lexicon)


def write_units(fmt: Format, units: Iterable[Labelled], opts: OutputOptions, out: IO[str] | str | Path,
                src: str | Path = "-", overwrite: bool = False, inputs: list[str | Path] | tuple = ()) -> None:
    """Labelled units written in `fmt`, the one writer of `punctuate` and `serve` (registry.Format.write, the
    format's protocol.OutputFormat): to the text stream `out`, or for a corpus format (text, kaldi_text,
    punctuator2, datadir: the words as given) to `out` as a path (`overwrite`/`inputs` as corpus.write's);
    `src` names the input in messages."""
    fmt.write(units, out, replace(opts, src=src, overwrite=overwrite, inputs=tuple(inputs)))


def check_punctuate_output(src: str | Path, out: str | Path | None, fmt: str = "readable", *,
                           overwrite: bool = False, probs: bool = False) -> Format:
    """The writer of `fmt` for `punctuate_file(src, out)`, once the checks that need no model have
    passed (one-line errors): a corpus format needs `-o`, `probs` a format that shows them, and `out`
    is not `src` and replaces no file (or directory contents) punctkit did not write unless
    `overwrite`. `punctkit punctuate` runs them before it loads the model."""
    writer = get_format(fmt, "emit", "output format", OUTPUT_FORMATS)
    streamed = writer.emit is not None or writer.stream is not None
    to_stdout = out is None or str(out) == "-"
    if not streamed and to_stdout:
        raise PunctkitError(f"--format {fmt} writes through punctkit's format writers: give -o FILE")
    if probs and not writer.probs:
        shows = ", ".join(n for n in OUTPUT_FORMATS if get_format(n, "emit", known=OUTPUT_FORMATS).probs)
        raise PunctkitError(f"--probs: --format {fmt} cannot show probabilities (formats that do: {shows})")
    inputs = [] if str(src) == "-" else [src]
    if not to_stdout:
        if writer.directory:
            check_not_input(out, inputs)  # type: ignore[arg-type]
            check_data_dir_output(out, overwrite, inputs)  # type: ignore[arg-type]
        else:  # a file punctkit did not write is not replaced without --overwrite
            check_output_file(out, inputs, overwrite=overwrite)  # type: ignore[arg-type]
    return writer


def input_reader(src: str | Path, input_format: str | None = None, encoding: str | None = None,
                 option: str = "--input-format") -> Format:
    """punctuate's reader of `src`: the entry of `input_format` when given, else the format detected from the
    content (one line naming what punctuate reads, and `option`, when it reads no such format)."""
    if input_format:
        return get_format(input_format, "units", "input format")
    return detect_for(src, "units", encoding, "punctuate", option)


LINES = ("stream", "turns", "documents")  # what plain text's lines are (punctuate --lines)


def lines_as(reader: Format, lines: str) -> bool:
    """Whether the units of `reader` are one stream, plain text's lines read as `lines` (LINES); another input
    format with `lines` other than `stream` is a one-line error (its own units say what its lines are)."""
    if lines not in LINES:
        raise PunctkitError(f"--lines {lines!r}: expected one of {', '.join(LINES)}")
    if lines != "stream" and reader.name != "text":
        raise PunctkitError(f"--lines {lines} is for plain text; input format {reader.name} says itself what its "
                            f"units are")
    return reader.one_stream and lines != "documents"


def punctuate_file(engine: Engine, src: str | Path, out: str | Path | None = None, *,
                   input_format: str | None = None, fmt: str = "readable", keep_input_marks: bool = False,
                   capitalize: bool = True, casing: Casing | None = None, overwrite: bool = False,
                   encoding: str | None = None, probs: bool = False, max_cue_seconds: float = 7.0,
                   max_line_chars: int = 42, max_cue_lines: int = 2, show_progress: bool = True,
                   lines: str = "stream") -> PunctuateStats:
    """Punctuate `src` (`-`: stdin) into `out` (None or `-`: stdout) in `fmt`.

    `out` is never `src`; a `datadir` output is written by `write_data_dir` (`overwrite` there).
    Input formats are those of the format registry with a streaming reader (`units`: text,
    kaldi_text, ctm, jsonl, whisper, nemo, vosk; detected from the content unless given). Output
    formats are those with a punctuate writer (`emit`, one utterance at a time: readable, the
    input words as written, marks and case set, `uttid text` for inputs with ids; twocol; ctm,
    for inputs with times; jsonl, the input objects with `text`, `labels` and per-word
    `punctuated`; nemo; or `stream`, over all of them: srt and vtt, for inputs with times, cues
    within `max_cue_*`/`max_line_chars`; timed-json), or a corpus format (text, kaldi_text,
    punctuator2, datadir; these too write the words as given, are collected in memory and need
    `-o`). `probs` adds probabilities to the outputs that show them (jsonl, timed-json, twocol).
    `casing`: how words are shown (`engine.casing(capitalize)` when None). `show_progress`: a bar on
    standard error while it is a terminal and the input is long (progress.WordProgress; False: --quiet).
    `lines`: what plain text's lines are (LINES): one stream (sentences run across them), speaker turns (a turn
    change at each line break: a model's boundary fusion weighs it), or documents (each its own stream).
    """
    t0 = time.time()
    reader = input_reader(src, input_format, encoding)
    one_stream = lines_as(reader, lines)
    writer = check_punctuate_output(src, out, fmt, overwrite=overwrite, probs=probs)  # fail before punctuating
    streamed = writer.emit is not None or writer.stream is not None
    inputs = [] if str(src) == "-" else [src]
    if writer.needs_times and not reader.times:
        timed = ", ".join(n for n in INPUT_FORMATS if get_format(n, "units").times)
        named = f" (the format -o {Path(out).name} names; --format readable writes text there)" \
            if out is not None and output_format(None, str(out)) == fmt else ""
        raise PunctkitError(f"--format {fmt}{named} needs word times, which input format {reader.name} does not "
                            f"carry: give an input with them ({timed})")
    inv = engine.inventory
    opts = output_options(engine, max_cue_seconds, max_line_chars, max_cue_lines)
    stats = PunctuateStats(unit="lines" if reader.one_stream else "utterances")
    ctx = ReadContext.of(src, inv, default_substitution(inv), encoding, told=bool(input_format))
    units = reader.streams(src, ctx)  # each stream's units together (an stm's recording), as the engine takes them
    if lines == "turns":  # a turn change at each line break
        units = (replace(s, lines=[replace(u, speaker=f"line {u.lineno}") for u in s.lines]) for s in units)
    meter, read_words = ReadMeter(), [0]
    size = Path(src).stat().st_size if not is_stream(src) and Path(src).is_file() else None  # bytes: time left

    def read() -> Iterator[StreamLines]:
        for u in units:
            read_words[0] += len(u.words)
            yield u

    def labelled_bytes() -> int:
        """The bytes read, times the share of the words read that are labelled (the engine reads ahead)."""
        return meter.bytes_read() * min(stats.words, read_words[0]) // read_words[0] if read_words[0] else 0

    bar = WordProgress("punctuate", size=size, read=labelled_bytes, show=show_progress)

    def counted() -> Iterator[Labelled]:
        for done in engine.label(read(), one_stream=one_stream, forced=keep_input_marks,
                                 casing=casing or engine.casing(capitalize), probs=probs):
            if not lines_only(done.utt):  # an input's comment lines alone are no utterance
                stats.count(done.utt.words, engine.frontend)
                bar.update(len(done.utt.words))
            yield done

    with meter, bar, _open_out(out if streamed else None) as f:
        write_units(writer, counted(), opts, f if streamed else out, src, overwrite, inputs)  # type: ignore[arg-type]
    stats.dropped_tokens = ctx.dropped
    stats.times_moved = opts.time_repairs.warning()
    stats.seconds = time.time() - t0
    return stats
