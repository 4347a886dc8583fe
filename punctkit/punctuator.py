"""`punctkit punctuate`: files in any input format through the inference engine (punctkit/infer/)
into any output format.

    >>> from punctkit import Punctuator
    >>> Punctuator.load("model.pkt").punctuate("so i 'm here do you know why")

`Punctuator`, `Labeller`, `label_units` and `Fixed` live in punctkit.infer and are importable
from here as well (the API's documented path).
"""
from __future__ import annotations

import contextlib
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from punctkit.data.datadir import check_data_dir_output
from punctkit.data.formats import AsrUtterance, Utterance, detect_for, get_format, names, write
from punctkit.data.formats.base import OutputOptions, Punctuated
from punctkit.data.formats.registry import punctuate_outputs
from punctkit.data.labels import default_substitution
from punctkit.files import PunctkitError, atomic_write, check_not_input, check_output_file, require_stdout
from punctkit.infer.engine import Punctuator
from punctkit.infer.pipeline import Fixed, Labeller, label_units
from punctkit.text.frontend import Frontend

__all__ = ["Fixed", "Labeller", "Punctuator", "PunctuateStats", "label_units", "punctuate_file",
           "punctuated_units", "has_probs_api", "output_options", "INPUT_FORMATS", "OUTPUT_FORMATS"]

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
    seconds: float = 0.0

    def count(self, words: list[str], frontend: Frontend) -> None:
        """Count one line or utterance."""
        self.utterances += 1
        self.words += len(words)
        self.empty += not words
        self.unknown += sum(frontend.unk_id in frontend.word_ids(w) for w in words)

    def summary(self) -> str:
        rate = self.words / self.seconds if self.seconds else 0.0
        out = f"{self.utterances} {self.unit}, {self.words} words in {self.seconds:.2f} s ({rate:,.0f} words/s)"
        if self.empty:
            out += f"; warning: {self.empty} {self.unit} without words (written empty)"
        if self.dropped_tokens:
            out += f"; warning: {self.dropped_tokens} tokens without a word dropped"
        if self.words and self.unknown > self.words / 2:
            out += f"; warning: {100 * self.unknown / self.words:.0f}% of the words are unknown to the model"
        return out


def _open_out(out: str | Path | None) -> Any:
    if out is None or str(out) == "-":
        if sys.stdout is None:  # closed (`>&-`) in a program of the user's: one line, not an AttributeError
            require_stdout()
        return contextlib.nullcontext(sys.stdout)
    return atomic_write(out)


def punctuated_units(punct: Labeller, units: Iterable[AsrUtterance], one_stream: bool, keep_input_marks: bool,
                     capitalize: bool, probs: bool = False) -> Iterator[Punctuated]:
    """`label_units`, each utterance also with its probability rows (words x labels, inventory order)
    when `probs`, else None: the one place punctuate's writers get probabilities from."""
    if probs:
        if not has_probs_api():
            raise PunctkitError("--probs: this version has no per-word probabilities yet "
                                "(label_units has no probs API)")
        yield from label_units(punct, units, one_stream, keep_input_marks, capitalize,
                               probs=True)  # type: ignore[call-arg]
        return
    for u, labels, shown in label_units(punct, units, one_stream, keep_input_marks, capitalize):
        yield u, labels, shown, None


def has_probs_api() -> bool:
    """Whether `label_units` gives probability rows (`probs=True`: (utterance, labels, shown, rows))."""
    import inspect

    return "probs" in inspect.signature(label_units).parameters


def output_options(punct: Labeller, one_stream: bool, max_cue_seconds: float, max_line_chars: int,
                   max_cue_lines: int) -> OutputOptions:
    """The writers' options, the subtitle limits checked."""
    if not (max_cue_seconds > 0 and max_line_chars > 0 and max_cue_lines > 0):
        raise PunctkitError("--max-cue-seconds, --max-line-chars and --max-cue-lines must be positive")
    return OutputOptions(punct.inventory, one_stream, max_cue_seconds, max_line_chars, max_cue_lines,
                         punct.frontend.case_lexicon)


def punctuate_file(punct: Labeller, src: str | Path, out: str | Path | None = None,
                   input_format: str | None = None, fmt: str = "readable", keep_input_marks: bool = False,
                   capitalize: bool = True, overwrite: bool = False, encoding: str | None = None,
                   probs: bool = False, max_cue_seconds: float = 7.0, max_line_chars: int = 42,
                   max_cue_lines: int = 2) -> PunctuateStats:
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
    """
    t0 = time.time()
    reader = (get_format(input_format, "units", "input format") if input_format
              else detect_for(src, "units", encoding, "punctuate", "--input-format"))
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
        if writer.directory:  # fail before punctuating, not after
            check_not_input(out, inputs)  # type: ignore[arg-type]
            check_data_dir_output(out, overwrite, inputs)  # type: ignore[arg-type]
        else:  # a file punctkit did not write is not replaced without --overwrite
            check_output_file(out, inputs, overwrite=overwrite)  # type: ignore[arg-type]
    if writer.needs_times and not reader.times:
        timed = " or ".join(n for n in INPUT_FORMATS if get_format(n, "units").times)
        raise PunctkitError(f"--format {fmt} needs word times: input format {timed}, not {reader.name}")
    inv = punct.inventory
    opts = output_options(punct, reader.one_stream, max_cue_seconds, max_line_chars, max_cue_lines)
    stats = PunctuateStats(unit="lines" if reader.one_stream else "utterances")
    dropped = [0]
    collected: list[Utterance] = []
    units = reader.units(src, inv, default_substitution(inv), encoding, dropped)  # type: ignore[misc]

    def counted() -> Iterator[Punctuated]:
        for item in punctuated_units(punct, units, reader.one_stream, keep_input_marks, capitalize, probs):
            stats.count(item[0].words, punct.frontend)
            yield item

    with _open_out(out if streamed else None) as f:
        if writer.stream is not None:
            f.writelines(line + "\n" for line in writer.stream(counted(), src, opts))
        for u, labels, shown, rows in (counted() if writer.stream is None else ()):
            if writer.emit is not None:
                f.writelines(line + "\n" for line in writer.emit(u, labels, shown, src, rows, opts))
            elif u.words:
                collected.append(opts.corpus_utterance(u, labels, shown))  # the words as given
    stats.dropped_tokens = dropped[0]
    if not streamed:
        write(collected, out, fmt, inv, overwrite, inputs)  # type: ignore[arg-type]
    stats.seconds = time.time() - t0
    return stats
