"""JSON documents read whole (Whisper, Vosk and the ASR services' transcripts): the values one after
another in a text, the text of an input bounded in size, the one document of a file, and JSON's syntax
errors as one line naming the file and line.
"""
from __future__ import annotations

import json
from typing import Any

from punctkit.data.formats.base import Source, input_lines
from punctkit.files import PunctkitError, json_value, where


def json_values(text: str, limit: int | None = None) -> tuple[list[tuple[int, int, Any]], json.JSONDecodeError | None]:
    """The JSON values one after another in `text` (whitespace between them), each with its start and
    end offsets, up to `limit` values; and the error that stopped the decoding, if any (`json_value`'s)."""
    out: list[tuple[int, int, Any]] = []
    pos = 0
    while limit is None or len(out) < limit:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            return out, None
        try:
            value, end = json_value(text, pos)
        except json.JSONDecodeError as e:
            return out, e
        out.append((pos, end, value))
        pos = end
    return out, None



MAX_DOCUMENT_CHARS = 1 << 28  # 256 Mi characters: the largest JSON document (Whisper, Vosk) read whole


def read_json_text(src: Source, encoding: str | None) -> str:
    """The whole text of a JSON input (`-`: stdin), lines joined with newlines (line numbers kept); one
    longer than MAX_DOCUMENT_CHARS (an input without end) is a one-line error once that much is read."""
    lines: list[str] = []
    size = 0
    for i, line in input_lines(src, encoding):
        size += len(line) + 1
        if size > MAX_DOCUMENT_CHARS:
            raise PunctkitError(f"{where(src, i)}: a JSON document (Whisper, Vosk, a service's transcript) longer than "
                                f"{MAX_DOCUMENT_CHARS >> 20} Mi characters, read whole: split the recording's "
                                f"output, or give it as JSON lines (--input-format jsonl)")
        lines.append(line)
    return "\n".join(lines)


def json_error(src: Source, e: json.JSONDecodeError) -> PunctkitError:
    """A JSON syntax error as `file:LINE: not valid JSON (what, column C)`."""
    return PunctkitError(f"{where(src, e.lineno)}: not valid JSON ({e.msg}, column {e.colno})")


def line_of(text: str, pos: int) -> int:
    """The 1-based line of offset `pos` in `text`."""
    return text.count("\n", 0, pos) + 1



def one_document(src: Source, encoding: str | None, what: str) -> tuple[int, Any]:
    """(line it starts on, value) of a file holding one JSON value; an empty file, a syntax error or a
    second value is a one-line error (`what`: what the file should hold, for the message)."""
    text = read_json_text(src, encoding)
    values, err = json_values(text, 2)
    if err is not None:
        raise json_error(src, err)
    if not values:
        raise PunctkitError(f"{where(src, 1)}: empty file, expected {what}")
    if len(values) > 1:
        raise PunctkitError(f"{where(src, line_of(text, values[1][0]))}: more than one JSON value "
                            f"(the file is {what})")
    return line_of(text, values[0][0]), values[0][2]
