"""Format detection, the one detector of every command: `detect_format` (a file's, stdin's or a text's format from
its content), `detect_for` (the detected format, which must be one a command reads), and what they are made of:
`head_format` (a head line that names its format), `input_head`, `line_kind` and `classify_lines` (the entries'
line classifiers over a sample of lines), the JSON formats told by their keys and shapes (json_shapes.json_kind);
`detection` says how each format is told, for people (`punctkit formats`).
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from punctkit.data.formats import cues, json_shapes, nlp, text
from punctkit.data.formats.base import Source, TextInput, source_name
from punctkit.data.formats.registry import REGISTRY, Format, names
from punctkit.files import PunctkitError, check_not_compressed, codec_of, is_stream, peek_input, sample_lines

# classifiers from the most structured lines to the least (a JSON line may hold `,COMMA`, a CTM word too);
# the JSON line classifier names the JSON format by the object's keys (json_shapes.json_line_kind)
DETECT_ORDER = ("jsonl", "nlp", "srt", "stm", "ctm", "whisper-tsv", "twocol", "punctuator2", "trn")
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
    format by its keys (json_shapes.kind_keys), the others as TOLD_BY says; '' for a format that is not read
    (an output)."""
    fmt = REGISTRY[name]
    if fmt.reader is None and fmt.units is None:
        return ""
    if name in TOLD_BY:
        return TOLD_BY[name]
    keys = json_shapes.kind_keys(name)
    return "JSON with " + " or ".join(f"`{k}`" for k in keys)



def detect_format(path: Source, encoding: str | None = None) -> str:
    """The format of a file (or of stdin, `-`, or a `TextInput`) from its content: the one detector of
    every command.

    A directory is `datadir`. A head line that names a format decides it (`head_format`: an NLP
    header, Whisper's TSV header, WEBVTT, a cue number and its timing line). Otherwise a bounded
    sample of whole lines (the whole of a small file or text; the head and evenly spaced slices of
    a large one; the head of stdin) is classified, blank lines and CTM `;;` comments left out;
    but an input that starts with `{` or `[` is first decoded as JSON values (its first 4 MiB;
    json_shapes.json_kind): the top-level keys say whisper (`segments`), vosk (`result`, `partial`), nemo (`pred_text`,
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
        kind = json_shapes.json_kind(head, complete, str(path))
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
