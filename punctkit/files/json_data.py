"""JSON input: `json_value`, punctkit's one reader of JSON (bounded nesting, no lone surrogates),
`parse_json` for a whole text and `read_json_file` for files punctkit wrote."""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from punctkit.files.errors import PunctkitError

MAX_JSON_DEPTH = 100  # arrays and objects inside each other (Whisper nests 5 deep, Vosk 4)
_JSON_NESTING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')  # strings (skipped) and brackets
_JSON_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
_DECODER = json.JSONDecoder()


def json_value(text: str, pos: int = 0) -> tuple[Any, int]:
    """The JSON value at `pos` of `text` (after white space) and the offset after it, as
    `json.JSONDecoder.raw_decode` reads it: punctkit's one reader of JSON input.

    What json would read but punctkit could not hold or write back is a `json.JSONDecodeError`
    at its place, as a syntax error is, so that the caller names the file and line: arrays and
    objects nested more than MAX_JSON_DEPTH deep (json itself would exhaust the stack), an
    integer of more digits than Python converts, half of a UTF-16 pair (a lone surrogate). Of
    several, the first in the text is told, whatever the stack held when json stopped.
    """
    pos = json.decoder.WHITESPACE.match(text, pos).end()
    value, end, problem = _raw_json(text, pos)
    deep = _too_deep(text, pos, end)
    if deep is not None:
        raise _deep_error(text, deep)
    if problem is not None:
        raise problem
    half = _lone_surrogate(value) if _JSON_SURROGATE.search(text, pos, end) else None
    if half is not None:
        at = re.compile(re.escape(f"\\u{ord(half):04x}"), re.I).search(text, pos, end)
        raise json.JSONDecodeError(f"\\u{ord(half):04x} is half of a UTF-16 pair, not a character", text,
                                   at.start() if at else pos)
    return value, end


def _raw_json(text: str, pos: int) -> tuple[Any, int, json.JSONDecodeError | None]:
    """json's reading of the value at `pos`: (value, its end, None), or (None, where json stopped, why)."""
    try:
        value, end = _DECODER.raw_decode(text, pos)
        return value, end, None
    except RecursionError:  # deeper than the stack allows, so than the limit: `_too_deep` finds where
        return None, len(text), _deep_error(text, pos)
    except json.JSONDecodeError as e:
        return None, e.pos, e
    except ValueError:  # an integer of more digits than int() takes
        most = sys.get_int_max_str_digits()
        digits = re.compile(rf"\d{{{most + 1}}}").search(text, pos)
        at = digits.start() if digits else pos
        return None, at, json.JSONDecodeError(f"a number of more than {most} digits", text, at)


def _deep_error(text: str, at: int) -> json.JSONDecodeError:
    return json.JSONDecodeError(f"arrays and objects nested more than {MAX_JSON_DEPTH} deep", text, at)


def read_json_file(path: str | os.PathLike) -> Any:
    """The JSON value of a file punctkit wrote (score.json, history.json), with one-line errors naming
    it: bytes that are not UTF-8, JSON that does not parse (`parse_json`)."""
    p = Path(path)
    try:
        return parse_json(p.read_text(encoding="utf-8"))
    except UnicodeDecodeError as e:
        raise PunctkitError(f"{p}: byte 0x{e.object[e.start]:02x} at offset {e.start} is not UTF-8 "
                            f"(not a file punctkit wrote)") from None
    except json.JSONDecodeError as e:
        raise PunctkitError(f"{p}: not valid JSON ({e.msg}, line {e.lineno})") from None


def parse_json(text: str) -> Any:
    """The one JSON value of `text` (white space around it allowed), read by `json_value`; anything
    after it is a `json.JSONDecodeError`, as for `json.loads`."""
    value, end = json_value(text)
    end = json.decoder.WHITESPACE.match(text, end).end()
    if end != len(text):
        raise json.JSONDecodeError("Extra data", text, end)
    return value


def _too_deep(text: str, start: int, end: int) -> int | None:
    """Where arrays and objects in text[start:end] first nest more than MAX_JSON_DEPTH deep, if they do."""
    if text.count("[", start, end) + text.count("{", start, end) <= MAX_JSON_DEPTH:
        return None
    depth = 0
    for m in _JSON_NESTING.finditer(text, start, end):
        c = m.group()
        if c in ("[", "{"):
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return m.start()
        elif c in ("]", "}"):
            depth -= 1
    return None


def _lone_surrogate(value: Any) -> str | None:
    """A character of a string in `value` (keys included) that no UTF-8 text can hold, if any."""
    todo = [value]
    while todo:
        v = todo.pop()
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError as e:
                return v[e.start]
        elif isinstance(v, dict):
            todo += [*v.keys(), *v.values()]
        elif isinstance(v, list):
            todo += v
    return None
