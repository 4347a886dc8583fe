"""The format registry: one `Format` entry per format, saying what it supports.

Every command finds its formats here: `convert`, `prepare` and `score` read through `read`
(the entry's corpus `reader`), `convert` and `decode` write through `write` (its `writer`),
`punctuate` reads through an entry's `units` (streaming) and writes through its `emit`
(or, for a corpus format, collects the utterances and calls `write`). Names come from the
entries (`names`), and an unknown name is one line listing them (`get_format`).
`detect_format` is the one detector by content: it samples lines and asks each entry's
line classifier (`line_kind`), then falls back to Kaldi text vs plain text.

Text streams: every reader, `read` and detection take a `TextInput` (a text already decoded,
with a name, such as serve's request body) where they take a file, through the same parser;
`write` writes a format written line by line (`lines`) to a text stream as to a file.

A new format is one module (or a few functions in one) and one entry in `REGISTRY`:
- recognizer outputs in (Whisper JSON, NeMo manifests, Vosk results: recognizers.py; the ASR
  services' transcripts: services.py, a `Service` entry there and a line of SERVICE_FORMATS): a
  `units` reader yielding `AsrUtterance`s with word records and times, a `line_kind`
  classifier, `ids`/`times`/`one_stream` set to what they carry; a JSON input is told
  apart by its keys (`recognizers.json_kind`, before the line classifiers);
- outputs that span utterances (SRT, WebVTT, timed JSON: subtitles.py): a `stream` writer
  taking every punctuated unit in order (cue numbers, a header, sentences across units),
  `needs_times=True` where punctuate must ask for timed input.
"""
from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable, Iterable, Iterator, TextIO

from punctkit.data.datadir import read_data_dir, write_data_dir
from punctkit.data.formats import asr, cues, labelled, nlp, recognizers, sclite, services, subtitles, text
from punctkit.data.formats.base import (
    AsrUtterance,
    OutputOptions,
    Punctuated,
    Report,
    Source,
    TextInput,
    Utterance,
    as_source,
    chosen_prob,
    placed,
    source_name,
)
from punctkit.data.labels import LabelSet, O, Substitution, default_substitution, get_inventory, inventory_for
from punctkit.files import (
    PunctkitError,
    check_not_compressed,
    check_not_input,
    check_output_file,
    codec_of,
    is_stream,
    peek_input,
    sample_lines,
    where,
    write_lines,
)

# corpus reader: (path, inventory or None, rules, report, lowercase, lines, encoding) -> utterances, inventory
Reader = Callable[..., "tuple[list[Utterance], LabelSet | None]"]
# corpus writer: (utterances, path, inventory, overwrite, inputs) -> None (atomic)
Writer = Callable[..., None]
# a corpus format's lines: utterances -> the lines of the file (or text stream), without newlines
Lines = Callable[[list[Utterance]], Iterable[str]]
# punctuate's reader: (src, inventory, rules, encoding, dropped) -> utterances, streaming
Units = Callable[..., Iterator[AsrUtterance]]
# punctuate's writer: (utterance, labels, words as shown, src[, probability rows, OutputOptions]) -> output lines
Emit = Callable[..., Iterable[str]]
# punctuate's whole-output writer: (punctuated units, src, OutputOptions) -> output lines, streaming
StreamOut = Callable[[Iterable[Punctuated], Source, OutputOptions], Iterable[str]]


@dataclass(frozen=True)
class Format:
    """One format and what punctkit can do with it."""

    name: str
    summary: str
    reader: Reader | None = None        # corpus reader (convert, prepare, score)
    writer: Writer | None = None        # corpus writer (convert, decode, punctuate's corpus outputs)
    lines: Lines | None = None          # a corpus format's lines: its writer (a file), and a text stream's
    units: Units | None = None          # punctuate's input, streaming (stdin works)
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

    def reader_units(self, told: bool) -> Units:
        """punctuate's reader of this format (`units`); `told`: the user gave the format, which is obeyed
        (plain and Kaldi text, `lookalikes`, are then not refused for lines that look like another format's)."""
        return partial(self.units, told=True) if told and self.lookalikes else self.units  # type: ignore[arg-type]


# ---------------------------------------------------------------- adapters to the uniform signatures

def _lines_writer(lines: Lines) -> Writer:
    """A corpus writer from a function giving the file's lines (written atomically, never over an input)."""
    def write_file(utts: list[Utterance], path: str | Path, inventory: LabelSet | None = None,
                   overwrite: bool = False, inputs: Iterable[str | Path] = ()) -> None:
        check_output_file(path, list(inputs), overwrite=overwrite)
        write_lines(path, lines(utts))
    return write_file


def _read_twocol(p: Path | TextInput, inv: LabelSet | None, rules: Substitution, report: Report, lowercase: bool,
                 lines: tuple[int, int] | None, encoding: str | None) -> tuple[list[Utterance], LabelSet | None]:
    return labelled.read_twocol(p, inv, report, lines, encoding), inv


def _read_p2(p: Path | TextInput, inv: LabelSet, rules: Substitution, report: Report, lowercase: bool,
             lines: tuple[int, int] | None, encoding: str | None) -> tuple[list[Utterance], LabelSet | None]:
    return labelled.read_punctuator2(p, inv, rules, report, lowercase, lines, encoding), inv


def _read_text(id_lines: text.IdLines | None) -> Reader:
    def read_text(p: Path | TextInput, inv: LabelSet, rules: Substitution, report: Report, lowercase: bool,
                  lines: tuple[int, int] | None, encoding: str | None) -> tuple[list[Utterance], LabelSet | None]:
        return text.read_text(p, inv, rules, report, lowercase, id_lines, lines, encoding), inv
    return read_text


def _read_nlp(p: Path | TextInput, inv: LabelSet, rules: Substitution, report: Report, lowercase: bool,
              lines: tuple[int, int] | None, encoding: str | None) -> tuple[list[Utterance], LabelSet | None]:
    return nlp.read_nlp(p, inv, rules, report, lowercase, lines, encoding), inv


def _read_datadir(p: Path, inv: LabelSet | None, *_: object) -> tuple[list[Utterance], LabelSet | None]:
    dd = read_data_dir(p, inv)
    return dd.utterances, dd.inventory


def _write_datadir(utts: list[Utterance], path: str | Path, inventory: LabelSet | None = None,
                   overwrite: bool = False, inputs: Iterable[str | Path] = ()) -> None:
    inv = inventory or inventory_for({lab for u in utts for lab in u.labels} or {O})
    write_data_dir(path, utts, inv, overwrite=overwrite, inputs=list(inputs))


def readable_out(utt: AsrUtterance, labels: list[str], shown: list[str], src: str | Path,
                 *_: object) -> Iterator[str]:
    """The input words as written, marks and case set, on the input's line (`AsrUtterance.frame`: trn, stm);
    `uttid text` for other inputs with ids; the tokens that are not words (`<unk>`, a lone `-`) in place."""
    line = " ".join(placed(utt, shown))
    if utt.frame is not None:
        yield (utt.frame[0] + line + utt.frame[1]).strip(" ")
        return
    if utt.has_id:
        asr.check_one_word_id(utt, src, "an `uttid text`")
    yield f"{utt.uttid} {line}".rstrip() if utt.has_id else line


def twocol_emit(utt: AsrUtterance, labels: list[str], shown: list[str], src: str | Path, rows: object = None,
                opts: OutputOptions | None = None) -> Iterator[str]:
    """`word<TAB>LABEL` lines of one utterance and a blank line: each word as the input gave it, its mark
    in the label, its case changed only by a case-aware model (OutputOptions.word_column: `$5`,
    `10\u00a0km`, `"Hello"`); with probability rows, the chosen label's probability as a third column.
    A word holding a tab or a line break (a JSON word) is a one-line error: a twocol line cannot hold it."""
    if not utt.words:
        return
    words = (opts or OutputOptions()).word_column(utt, shown)
    for k, w in enumerate(words):
        if any(c in w for c in "\t\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"):
            raise PunctkitError(f"{where(src, utt.lineno, utt.uttid)}: word {k + 1} ({w!r}) holds a tab or a "
                                f"line break, which a twocol line cannot hold: use --format jsonl")
    for k, (w, lab) in enumerate(zip(words, labels)):
        if rows is not None and opts is not None and opts.inventory is not None:
            yield f"{w}\t{lab}\t{chosen_prob(rows[k], opts.inventory, lab):.4f}"  # type: ignore[index]
        else:
            yield f"{w}\t{lab}"
    yield ""


# ---------------------------------------------------------------- the registry

# the ASR services' JSON transcripts (services.py): name, what it is, what a unit is
SERVICE_FORMATS = (
    ("rev", "Rev.ai JSON (`monologues[].elements[]`)", "monologue"),
    ("aws", "Amazon Transcribe JSON (`results.items[]`)", "speaker turn"),
    ("speechmatics", "Speechmatics JSON v2 (`results[]` of type word)", "speaker turn"),
    ("google", "Google Cloud Speech-to-Text JSON (`results[].alternatives[].words[]`)", "result"),
    ("watson", "IBM Watson JSON (`results[].alternatives[].timestamps`)", "result"),
    ("deepgram", "Deepgram JSON (`results.channels[].alternatives[].words[]`)", "utterance or speaker turn"),
    ("assemblyai", "AssemblyAI JSON (`words[]`, milliseconds)", "utterance or speaker turn"),
    ("huggingface", "a Hugging Face ASR pipeline's JSON (`chunks[]` of text and timestamp)", "recording"),
    ("azure", "Azure batch transcription JSON (`recognizedPhrases[]`)", "phrase"),
)

REGISTRY: dict[str, Format] = {f.name: f for f in [
    Format("readable", "punctuate's default output: the input words as written, marks and case set "
           "(`uttid text` for inputs with ids)", emit=readable_out),
    Format("twocol", "`word<TAB>LABEL` a line, a blank line between utterances (IWSLT; punctuate --probs: "
           "a third column, the label's probability)",
           reader=_read_twocol, lines=labelled.twocol_out, emit=twocol_emit,
           line_kind=labelled.twocol_kind, labels=True, probs=True),
    Format("punctuator2", "inline mark tokens, `so ,COMMA if we .PERIOD`, one utterance a line",
           reader=_read_p2, lines=labelled.punctuator2_out, line_kind=labelled.punctuator2_kind),
    Format("text", "punctuated text, one utterance (or document) a line", reader=_read_text(None),
           lines=text.text_out, units=text.text_units, lookalikes=True, one_stream=True),
    Format("kaldi_text", "Kaldi `text`: the utterance id, then its punctuated text", reader=_read_text(text.kaldi_text_lines),
           lines=text.kaldi_text_out, units=text.kaldi_text_units, lookalikes=True, ids=True),
    Format("trn", "sclite's and ESPnet's trn: the punctuated text, then the utterance id in parentheses, "
           "`So, what? (spk1-utt1)`", reader=_read_text(sclite.trn_lines), lines=sclite.trn_out,
           units=sclite.trn_units, line_kind=sclite.trn_kind, ids=True),
    Format("datadir", "a data directory with `text` and `labels` (punctkit.data.datadir)",
           reader=_read_datadir, writer=_write_datadir, labels=True, ids=True, directory=True),
    Format("ctm", "`uttid channel start duration word [conf]` a line (ASR word times)",
           units=asr.ctm_units, emit=asr.ctm_out, line_kind=asr.ctm_kind, ids=True, times=True, needs_times=True),
    Format("jsonl", "a JSON object a line with an id and words (ASR services)",
           units=asr.jsonl_units, emit=asr.jsonl_out, line_kind=recognizers.json_line_kind, ids=True, times=True,
           probs=True),
    Format("whisper", "Whisper JSON with `segments[].words[]` (openai-whisper, faster-whisper, WhisperX)",
           units=recognizers.whisper_units, line_kind=recognizers.json_line_kind, times=True, one_stream=True),
    Format("nemo", "a NeMo JSON-lines manifest (`pred_text`, else `text`); written back with "
           "`pred_text_punctuated`", units=recognizers.nemo_units, emit=recognizers.nemo_out,
           line_kind=recognizers.json_line_kind),
    Format("vosk", "Vosk results (`result[]` of word, start, end, conf), one or several objects",
           units=recognizers.vosk_units, line_kind=recognizers.json_line_kind, times=True, one_stream=True),
    Format("deepspeech", "DeepSpeech's and Coqui STT's --json (`transcripts[].words[]` of word, start_time, "
           "duration): the most confident transcript", units=recognizers.deepspeech_units,
           line_kind=recognizers.json_line_kind, times=True, one_stream=True),
    Format("azure-speech", "Azure Speech SDK / REST results (`NBest[].Words[]`, ticks), a phrase an object",
           units=recognizers.azure_speech_units, line_kind=recognizers.json_line_kind, times=True, one_stream=True),
    Format("pocketsphinx", "PocketSphinx's JSON lines (`{\"b\", \"d\", \"t\", \"w\": [...]}` an utterance), one stream",
           units=recognizers.pocketsphinx_units, line_kind=recognizers.json_line_kind, times=True, one_stream=True),
    *[Format(name, f"{what}: one recording, a unit a {unit}", units=services.service_units(name),
             line_kind=recognizers.json_line_kind, times=True, one_stream=True)
      for name, what, unit in SERVICE_FORMATS],
    Format("nlp", "Rev's NLP format: a header, then `token|speaker|ts|endTs|punctuation|...|case|...` a token; "
           "written back with the tokens re-cased and `punctuation` and `case` filled, other columns kept",
           reader=_read_nlp, units=nlp.nlp_units, stream=nlp.nlp_lines, line_kind=nlp.nlp_kind, times=True,
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
# classifiers from the most structured lines to the least (a JSON line may hold `,COMMA`, a CTM word too);
# the JSON line classifier names the JSON format by the object's keys (recognizers.json_line_kind)
DETECT_ORDER = ("jsonl", "nlp", "srt", "stm", "ctm", "whisper-tsv", "twocol", "punctuator2", "trn")
ROLES = {"reader": "read", "writer": "write", "units": "read by punctuate", "emit": "written by punctuate"}
# how `detect_format` tells each format that is not told by its JSON keys (`detection`; `punctkit formats`)
TOLD_BY = {
    "datadir": "a directory",
    "nlp": "its header line (`token|speaker|ts|endTs|...`), else rows of 7+ `|`-separated fields with times "
           "as fields 3 and 4",
    "whisper-tsv": "its header line (`start<TAB>end<TAB>text`)",
    "srt": "a first cue (a cue number and a timing line with `,` before the milliseconds), else such timing lines",
    "vtt": "a `WEBVTT` header, else timing lines with `.` before the milliseconds",
    "stm": "lines of 5+ fields with times as fields 4 and 5 (`file channel speaker begin end words`)",
    "ctm": "lines of 5+ fields with numbers as fields 3 and 4 (`uttid channel start duration word`)",
    "twocol": "lines of two fields whose second is a label (`word<TAB>COMMA`)",
    "punctuator2": "lines with mark tokens (`,COMMA`, `.PERIOD`, ...)",
    "trn": "lines that end with an id in parentheses (`(spk1-utt1)`)",
    "jsonl": "JSON objects, one a line, with none of the other JSON formats' keys",
    "pocketsphinx": "JSON objects with `b` and `d` (numbers) and `t` (text)",
    "kaldi_text": "text whose lines' first tokens are ids (90% of them: `utt1`, `1272-128104-0000`), no other "
                  "format's lines",
    "text": "any other text (the default)",
}


def detection(name: str) -> str:
    """How `detect_format` tells format `name` from the content (for people: `punctkit formats`): a JSON
    format by its keys (recognizers.kind_keys), the others as TOLD_BY says; '' for a format that is not read
    (an output)."""
    fmt = REGISTRY[name]
    if fmt.reader is None and fmt.units is None:
        return ""
    if name in TOLD_BY:
        return TOLD_BY[name]
    keys = recognizers.kind_keys(name)
    return "JSON with " + " or ".join(f"`{k}`" for k in keys)


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


# ---------------------------------------------------------------- detection

def detect_format(path: Source, encoding: str | None = None) -> str:
    """The format of a file (or of stdin, `-`, or a `TextInput`) from its content: the one detector of
    every command.

    A directory is `datadir`. A head line that names a format decides it (`head_format`: an NLP
    header, Whisper's TSV header, WEBVTT, a cue number and its timing line). Otherwise a bounded
    sample of whole lines (the whole of a small file or text; the head and evenly spaced slices of
    a large one; the head of stdin) is classified, blank lines and CTM `;;` comments left out;
    but an input that starts with `{` or `[` is first decoded as JSON values (its first 4 MiB;
    recognizers.json_kind): the top-level keys say whisper (`segments`), vosk (`result`, `partial`), nemo (`pred_text`,
    `audio_filepath`), a service's shape says its transcript (services.py: rev, aws, google, ...;
    a document longer than the head by its markers) or, with none and one object a line, jsonl;
    keys of two of them are an error naming both, and a first value that is not JSON (in an input that is not mostly
    JSON lines) is an error with json's line and column. Per line, the entries' classifiers
    in DETECT_ORDER:
    - JSON: an object (whisper, vosk or nemo by its keys, else jsonl); nlp: 7+ `|`-separated
      fields, times as fields 3 and 4, any speaker; ctm: 5+ fields with numbers as fields 3 and 4;
    - twocol: exactly two fields (split at the tab, else at spaces) whose second is a
      known label, empty (tab form), or label-like (upper-case letters, digits, `_`);
    - punctuator2: has a known mark token (`,COMMA`, `.PERIOD`, ...).
    The kind with the most lines wins when it covers at least half of them (so a
    two-column file with bad lines stays two-column and its reader names the bad lines),
    except that two-column-like lines whose first fields are all unique ids (see below)
    and whose second fields are no known label are Kaldi text (`utt1 YES`). When a kind
    covers 5-50% of the lines (2 or more) with known labels, marks, numbers or JSON, the
    format is ambiguous: an error asks for it (reading such a file as text would turn
    `,COMMA` or `O` into words). Otherwise Kaldi text vs plain text: Kaldi text when, over
    2+ lines, at least 90% of the first tokens are ids (letters, digits, `_-.:/` with a
    digit, e.g. `utt1`, `1272-128104-0000`); else, only as a tie-breaker, when the file is
    named `text` or `*.text` and its first tokens are unique or mostly ids (a single line,
    ids without digits); else plain text.
    """
    if not isinstance(path, TextInput) and str(path) != "-":
        p = Path(path)
        if p.is_dir():
            return "datadir"
        if not p.exists():
            raise PunctkitError(f"file not found: {p}")
    head, complete = input_head(path, encoding)
    if head.lstrip().startswith(("{", "[")):
        kind = recognizers.json_kind(head, complete, str(path))
        if kind:
            return kind
    if kind := head_format(head):  # a head line that names its format decides it
        return kind
    sample = path.sample() if isinstance(path, TextInput) else sample_lines(path, encoding)
    lines = [ln for ln in sample if ln.strip() and not ln.startswith(";;")]
    return classify_lines(lines, source_name(path), str(path))


def head_format(head: str) -> str | None:
    """The format that the head of a text names, which decides it (no share of lines overrules it, and a bad
    line further on is that format's one-line error, not words): an NLP header (`nlp.is_header`:
    `token|speaker|ts|...`, columns in any order), Whisper's TSV header (`start<TAB>end<TAB>text`), a WEBVTT
    header or a first cue (`cues.cues_kind`: a cue number and its timing line); else None."""
    first = next((ln for ln in head.lstrip("\ufeff").splitlines() if ln.strip()), "")
    if nlp.is_header(first):
        return "nlp"
    if cues.tsv_kind(first) == "whisper-tsv":
        return "whisper-tsv"
    return cues.cues_kind(head)


JSON_HEAD = 1 << 22  # bytes of a file decoded whole to tell a JSON document's format (stdin: 64 KiB)


def input_head(path: Source, encoding: str | None = None) -> tuple[str, bool]:
    """The start of a file (or of stdin, a FIFO, a pipe or a device, kept for its reader: files.peek_input;
    or of a `TextInput`), decoded, and whether it is all of it."""
    if isinstance(path, TextInput):
        return path.text[:JSON_HEAD], len(path.text) <= JSON_HEAD
    if is_stream(path):  # read once: its head only, which its reader gets first
        data = peek_input(path, 1 << 16)
        complete = len(data) < 1 << 16
    else:
        with open(path, "rb") as f:
            data = f.read(min(1 << 16, JSON_HEAD))
            codec, skip = codec_of(data, encoding)
            if data[skip:].decode(codec, "replace").lstrip().startswith(("{", "[")):  # only JSON is read on
                data += f.read(max(0, JSON_HEAD - len(data)))
            complete = not f.read(1)
    check_not_compressed(data, "stdin" if str(path) == "-" else str(path))  # not some format's garbled text
    codec, skip = codec_of(data, encoding)
    return data[skip:].decode(codec, "replace"), complete


def line_kind(line: str) -> str:
    """The first classifier's answer for one line (`twocol?`: an unknown label-like second field), or ''."""
    for name in DETECT_ORDER:
        kind = REGISTRY[name].line_kind(line)  # type: ignore[misc]
        if kind:
            return kind
    return ""


def classify_lines(lines: list[str], name: str, source: str) -> str:
    """The format of sampled non-blank lines (rules in `detect_format`); `source` names the input in errors."""
    kinds = [line_kind(ln) for ln in lines]
    counts = Counter(k.rstrip("?") for k in kinds if k)
    n = len(lines)
    firsts = [ln.split()[0] for ln in lines]
    if counts:
        best, hits = counts.most_common(1)[0]
        if hits >= 0.5 * n and not (best == "twocol" and "twocol" not in kinds and text.all_unique_ids(firsts)):
            return best
        sure = Counter(k for k in kinds if k and not k.endswith("?"))
        for fmt, k in sure.items():
            if 0.05 * n <= k < 0.5 * n and k >= 2:
                first = next(i for i, kd in enumerate(kinds) if kd == fmt)
                other = next(i for i, kd in enumerate(kinds) if kd != fmt)
                raise PunctkitError(
                    f"{source}: cannot tell its format: {k} of {n} sampled lines look like {fmt} "
                    f"(e.g. {lines[first][:40]!r}), others not (e.g. {lines[other][:40]!r}); give the format "
                    f"(--from, --input-format, --ref-format/--hyp-format)")
    return "kaldi_text" if text.looks_like_ids(firsts, name) else "text"


def _directory_holding(d: Path, shown: int = 4) -> str:
    """What directory `d`, which has no `text` file, holds, for messages: `a directory holding a.srt, b/ and 3
    more (no text file)`, or `an empty directory`."""
    try:
        entries = sorted(e.name + ("/" if e.is_dir() else "") for e in d.iterdir())
    except OSError as e:
        return f"a directory that cannot be listed ({e.strerror})"
    if not entries:
        return "an empty directory"
    more = f" and {len(entries) - shown} more" if len(entries) > shown else ""
    return f"a directory holding {', '.join(entries[:shown])}{more} (no text file)"


def detect_for(path: Source, role: str, encoding: str | None = None, command: str = "this command",
               option: str = "--from") -> Format:
    """The detected format of `path`, which must have `role`; else one line naming what the command reads."""
    name = detect_format(path, encoding)
    known = names(role)
    if name == "datadir" and name not in known:
        if not (Path(path) / "text").is_file():  # a directory, but no data directory: name what it holds
            raise PunctkitError(f"{path}: {_directory_holding(Path(path))}, which {command} does not read; "
                                f"give it a file")
        raise PunctkitError(f"{path}: a data directory, which {command} does not read: `punctkit decode MODEL {path} "
                            f"OUT` punctuates one (a speaker's utterances run on, as utt2spk says), or give its "
                            f"text file ({Path(path) / 'text'})")
    if name not in known:
        raise PunctkitError(f"{path}: looks like {name}, which {command} does not read (it reads "
                            f"{', '.join(known)}); give {option} to read it as one of those")
    return REGISTRY[name]


# ---------------------------------------------------------------- corpus reading and writing

def read(path: Source, fmt: str | None = None, inventory: LabelSet | str | None = None,
         rules: Substitution | None = None, lowercase: bool = False,
         report: Report | None = None, lines: tuple[int, int] | None = None,
         encoding: str | None = None) -> tuple[list[Utterance], LabelSet]:
    """Read any corpus format; returns the utterances and their label inventory.

    With no inventory, labelled formats infer the smallest one that fits and
    text formats use 4-class. `lines=(first, last)` reads only those lines of a file (or `TextInput`);
    `encoding` decodes a file that is not UTF-8 (or UTF-16/32 with a BOM).
    """
    p = as_source(path)
    if isinstance(p, Path) and not p.exists():
        raise PunctkitError(f"file not found: {p}")
    entry = get_format(fmt, "reader") if fmt is not None else detect_for(p, "reader", encoding)
    if entry.directory and isinstance(p, TextInput):
        raise PunctkitError(f"{p}: format {entry.name} is a directory, which a text cannot be")
    inv = get_inventory(inventory) if isinstance(inventory, str) else inventory
    if not entry.labels:
        inv = inv or get_inventory("4class")
        rules = rules or default_substitution(inv)
    utts, inv = entry.reader(p, inv, rules, report or Report(), lowercase, lines, encoding)  # type: ignore[misc]
    if inv is None:
        inv = inventory_for({lab for u in utts for lab in u.labels} or {O})
    if lowercase:
        for u in utts:
            u.words = [w.lower() for w in u.words]
    return utts, inv


def write(utts: list[Utterance], path: str | Path | TextIO, fmt: str, inventory: LabelSet | None = None,
          overwrite: bool = False, inputs: list[str | Path] | tuple = ()) -> None:
    """Write utterances in `fmt` to a file, which appears only when complete, or to a text stream
    (`io.StringIO`, an open file: the format's `lines`, each with its newline).

    A file output may replace an existing file (the user named it), never one of
    `inputs`; a data directory is written by `write_data_dir` (`overwrite` there), never to a stream.
    """
    entry = get_format(fmt, "writer")
    if isinstance(path, (str, os.PathLike)):
        entry.writer(utts, path, inventory, overwrite, inputs)  # type: ignore[misc]
    elif entry.lines is None:
        raise PunctkitError(f"format {fmt} is a directory, which a text stream cannot hold")
    else:
        path.writelines(line + "\n" for line in entry.lines(utts))


def convert(src: str | Path, dst: str | Path, src_fmt: str | None = None, dst_fmt: str | None = None,
            inventory: str | None = None, overwrite: bool = False,
            encoding: str | None = None) -> tuple[int, int]:
    """Convert between formats; returns (utterances, words) written (`dst` never replaces `src`)."""
    check_not_input(dst, [src])
    if dst_fmt is not None:
        get_format(dst_fmt, "writer")  # an unknown name fails before reading
    utts, inv = read(src, src_fmt, inventory, encoding=encoding)
    if dst_fmt is None:
        dst_fmt = "datadir" if Path(dst).is_dir() or str(dst).endswith("/") else "text"
    write(utts, dst, dst_fmt, inv, overwrite, inputs=[src])
    return len(utts), sum(len(u.words) for u in utts)
