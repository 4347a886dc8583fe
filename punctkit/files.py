"""File helpers shared by every stage: one-line errors and atomic outputs."""
from __future__ import annotations

import codecs
import contextlib
import errno
import fnmatch
import functools
import itertools
import json
import math
import os
import re
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any, BinaryIO, Callable, Iterable, Iterator, Sequence


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# Characters that end a line for str.splitlines and terminals, shown escaped inside messages.
_LINE_BREAKS = {c: ascii(chr(c))[1:-1] for c in (0x0a, 0x0b, 0x0c, 0x0d, 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029)}


class PunctkitError(Exception):
    """An error the user can fix; the CLI prints it as one line, without a traceback.

    Line breaks inside the message (from quoted input) are escaped, so it stays one line.
    """

    def __init__(self, message: object = "", *args: object) -> None:
        super().__init__(str(message).translate(_LINE_BREAKS), *args)


def where(path: str | os.PathLike, lineno: int | None = None, utt: str | None = None) -> str:
    """Format a location as `file:line (utterance u)` for error messages."""
    loc = str(path)
    if lineno is not None:
        loc += f":{lineno}"
    if utt is not None:
        loc += f" (utterance {utt})"
    return loc


def finite_number(value: object, loc: str, what: str) -> float:
    """`value` as a finite float, else a one-line error at `loc` naming `what` ('nan' and 'inf'
    parse as floats but are never a time, a duration or a rate)."""
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        raise PunctkitError(f"{loc}: {what} must be a number, got {value!r}") from None
    if not math.isfinite(x):
        raise PunctkitError(f"{loc}: {what} must be a finite number, got {value!r}")
    return x


def positive_number(value: object, loc: str, what: str, integer: bool = False) -> float:
    """`value` as a finite number > 0 (a whole one, as an int, with `integer`), else a one-line error."""
    x = finite_number(value, loc, what)
    if x <= 0 or (integer and x != int(x)):
        raise PunctkitError(f"{loc}: {what} must be a positive {'whole ' if integer else ''}number, got {value!r}")
    return int(x) if integer else x


def require_file(path: str | os.PathLike, what: str = "file") -> Path:
    """Return `path` as a Path, or raise a one-line error if it is not a readable file."""
    p = Path(path)
    if p.is_dir():
        raise PunctkitError(f"{p}: is a directory; give a {what} here")
    if not p.is_file():
        raise PunctkitError(f"{what} not found: {p}")
    return p


MAX_YAML_DEPTH = 100         # mappings and sequences inside each other (real configs: under 10)
MAX_YAML_VALUES = 1_000_000  # values in one YAML text, each alias counted as what it names


@functools.cache
def _bounded_loader() -> type:
    """yaml.SafeLoader composing at most MAX_YAML_DEPTH levels and MAX_YAML_VALUES values,
    aliases counted at their size, and no alias inside the value it names (a loop)."""
    import yaml

    class BoundedLoader(yaml.SafeLoader):
        def __init__(self, stream: str) -> None:
            super().__init__(stream)
            self.depth = 0
            self.sizes: dict[int, int] = {}  # id(node) -> values in it, aliases expanded

        def compose_node(self, parent: Any, index: Any) -> Any:
            mark = self.peek_event().start_mark
            alias = self.check_event(yaml.AliasEvent)
            self.depth += 1
            try:
                if self.depth > MAX_YAML_DEPTH:
                    raise yaml.composer.ComposerError(None, None, f"nested more than {MAX_YAML_DEPTH} levels deep",
                                                      mark)
                node = super().compose_node(parent, index)
            finally:
                self.depth -= 1
            if alias:
                if id(node) not in self.sizes:
                    raise yaml.composer.ComposerError(None, None, "an alias inside the value it names", mark)
                return node
            parts = node.value if isinstance(node.value, list) else []
            kids = [n for part in parts for n in (part if isinstance(part, tuple) else (part,))]
            self.sizes[id(node)] = size = 1 + sum(self.sizes[id(n)] for n in kids)
            if size > MAX_YAML_VALUES:
                raise yaml.composer.ComposerError(None, None, f"more than {MAX_YAML_VALUES} values, each "
                                                              f"alias counted as what it names", mark)
            return node

    return BoundedLoader


def parse_yaml(text: str, source: str) -> Any:
    """The plain data in YAML `text` (None for an empty text), read as `yaml.safe_load` reads it:
    no tag runs code, and nesting and size are bounded (MAX_YAML_DEPTH, MAX_YAML_VALUES).

    Anything else is a one-line error starting with `source` (and naming the line and column
    where YAML tells them): text that is not YAML, a tag safe_load does not know (`!!python/...`),
    a value its type cannot hold (`!!int x`, the date 2001-13-01, an integer of thousands of digits).
    """
    import yaml

    loader = None
    try:
        loader = _bounded_loader()(text)  # its reader refuses characters YAML does not allow
        return loader.get_single_data()
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        why = "; ".join(str(x) for x in (e.context, e.problem) if x)
        raise PunctkitError(f"{source}: not valid YAML{at} ({why[:200]})") from None
    except yaml.YAMLError as e:  # the reader's, naming the character and its offset
        raise PunctkitError(f"{source}: not valid YAML ({str(e).splitlines()[0][:200]})") from None
    except Exception as e:  # safe_load's constructors on a malformed value: ValueError, KeyError, ...
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
        raise PunctkitError(f"{source}: not valid YAML (a value of the wrong form: {first})") from None
    finally:
        if loader is not None:
            loader.dispose()


def read_yaml_mapping(path: str | os.PathLike, what: str, expect: str) -> dict:
    """The mapping in YAML file `path` (an empty file is {}), read by `parse_yaml`.

    Errors are one line: `what` not found, not UTF-8, not valid YAML (`parse_yaml`), or not
    `expect` (what the file should hold).
    """
    p = require_file(path, what)
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise PunctkitError(f"{p}: byte 0x{e.object[e.start]:02x} at offset {e.start} is not UTF-8") from None
    data = parse_yaml(text, str(p))
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise PunctkitError(f"{p}: expected {expect}")
    return data


# ------------------------------------------------------------------ reading text

# Byte-order marks, UTF-32 first (its little-endian BOM starts with UTF-16's).
BOMS = ((codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"), (codecs.BOM_UTF8, "utf-8"),
        (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))
_stdin_head = bytearray()  # bytes read ahead from stdin (format detection); the next reader gets them first


ENCODING_OPTION = "--encoding"  # how a command is given an encoding (the server: a request's charset)
_BOM_FAMILIES = {"utf-8": "utf-8", "utf-8-sig": "utf-8", "utf-16": "utf-16", "utf-32": "utf-32"}
_NO_BOM = {"utf-16": "utf-16-be", "utf-32": "utf-32-be"}  # without a BOM: big-endian (RFC 2781)


def text_encoding(encoding: str, option: str = ENCODING_OPTION) -> str:
    """The codec name of `encoding`, a text encoding (bytes to text, also where bytes do not decode);
    else a one-line error naming `option`. base64, zlib, hex (bytes to bytes) and rot13 (text to
    text) are codecs but not text encodings; idna and punycode decode host names, strictly only.
    """
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        raise PunctkitError(f"unknown encoding '{encoding}' ({option}; e.g. utf-8, latin-1, cp1252, utf-16)") from None
    try:
        "\n".encode(name)
        b"\xff\n".decode(name, "replace")  # format detection reads a sample so
    except (LookupError, UnicodeError):
        raise PunctkitError(f"{option} '{encoding}' is not a text encoding (it does not turn any bytes into text); "
                            f"give one such as utf-8, latin-1, cp1252 or utf-16") from None
    return name


def text_codec(head: bytes, encoding: str | None = None, option: str = ENCODING_OPTION) -> tuple[str, int]:
    """The codec for a stream that starts with `head`, and the length of the BOM to skip.

    Without `encoding`: UTF-8, or UTF-16/32 when a BOM says so; a UTF-8 BOM is skipped. With it
    (`text_encoding`): utf-8 skips a UTF-8 BOM, and utf-16 and utf-32 take their byte order from
    a BOM (skipped), big-endian without one (RFC 2781).
    """
    name = text_encoding(encoding, option) if encoding else ""
    family = _BOM_FAMILIES.get(name) if name else ""  # "": any BOM
    if family is None:
        return name, 0
    for bom, codec in BOMS:
        if codec.startswith(family) and head.startswith(bom):
            return codec, len(bom)
    return _NO_BOM.get(family, "utf-8"), 0


def _encoding_fix(codec: str, option: str) -> str:
    """What to do about bytes that are not `codec`, told the way the input is given its encoding."""
    if option != ENCODING_OPTION:
        return f"name its {option} (e.g. {option}=latin-1) or send UTF-8"
    return ("give --encoding latin-1 (or the file's encoding)" if codec == "utf-8"
            else "give --encoding with the file's encoding") + " or convert it to UTF-8"


def _decode_error(name: str, lineno: int, offset: int, e: UnicodeError, codec: str, option: str) -> PunctkitError:
    """Bytes that do not decode, as `name:LINE: byte 0xNN at offset N is not CODEC; what to do`
    (`offset`: where `e.object` starts in the stream)."""
    what = "UTF-8" if codec == "utf-8" else codec
    if isinstance(e, UnicodeDecodeError) and e.start < len(e.object):
        bad = f"byte 0x{e.object[e.start]:02x} at offset {offset + e.start} is not {what}"
    else:  # a codec that names no byte
        bad = f"not {what} text ({str(e)[:100]})"
    return PunctkitError(f"{name}:{lineno}: {bad}; {_encoding_fix(codec, option)}")


def _stream_head(stream: BinaryIO, head: bytes) -> bytes:
    """`head` and the next bytes of `stream` until a BOM can be told (4 bytes, or bytes no BOM starts
    with, or the end), each read as soon as it arrives: a live stream is never waited on for more."""
    while len(head) < 4 and any(len(bom) > len(head) and bom.startswith(head) for bom, _ in BOMS):
        more = stream.read1(4 - len(head))
        if not more:
            break
        head += more
    return head


def _byte_lines(stream: BinaryIO, head: bytes) -> Iterator[bytes]:
    """The lines of `head` followed by the rest of `stream`, each with its newline."""
    buf = head
    while b"\n" in buf:
        line, _, buf = buf.partition(b"\n")
        yield line + b"\n"
    buf += stream.readline()
    if buf:
        yield buf
    yield from stream


def _strip_eol(text: str) -> str:
    return text.rstrip("\n").rstrip("\r")


def decode_lines(stream: BinaryIO, name: str, encoding: str | None = None,
                 lines: tuple[int, int] | None = None, head: bytes = b"",
                 option: str = ENCODING_OPTION) -> Iterator[tuple[int, str]]:
    """(1-based line number, line without its newline) of a byte stream, each as soon as it has come.

    The codec comes from `text_codec` (BOM stripped); bytes that do not decode are a
    one-line error naming `name`, the line and the byte offset, and saying how to give the
    encoding (`option`: --encoding, or a request's charset). `head` holds bytes already
    read from the stream. `lines=(first, last)` keeps that inclusive range.
    """
    head = _stream_head(stream, head)
    codec, skip = text_codec(head, encoding, option)
    first, last = lines or (1, None)
    if "\n".encode(codec) != b"\n":  # UTF-16/32: decode first, then split
        yield from _wide_lines(stream, name, codec, head, skip, first, last, option)
        return
    offset, last = skip, 1 << 62 if last is None else last
    for i, raw in enumerate(_byte_lines(stream, head[skip:]), 1):
        if i >= first:
            if i > last:
                return
            try:
                yield i, _strip_eol(raw.decode(codec))
            except UnicodeError as e:
                raise _decode_error(name, i, offset, e, codec, option) from None
        offset += len(raw)


def _wide_lines(stream: BinaryIO, name: str, codec: str, head: bytes, skip: int, first: int,
                last: int | None, option: str) -> Iterator[tuple[int, str]]:
    """`decode_lines` for codecs whose newline is not the byte 0x0a (UTF-16, UTF-32); the lines before
    bytes that do not decode come out before the error, as they do from `decode_lines`."""
    dec = codecs.getincrementaldecoder(codec)("strict")
    i, buf, fed = 0, "", skip
    failed: tuple[UnicodeError, int] | None = None  # the error, and where its object starts
    chunks = itertools.chain([head[skip:]], iter(lambda: stream.read1(1 << 16), b""), [b""])
    for chunk in chunks:
        pending = len(dec.getstate()[0])
        try:
            buf += dec.decode(chunk, final=not chunk)
        except UnicodeError as e:
            failed = e, fed - pending
            if isinstance(e, UnicodeDecodeError):
                buf += e.object[:e.start].decode(codec, "replace")  # the text before the bad bytes
        fed += len(chunk)
        *done, buf = buf.split("\n")
        for text in done:
            i += 1
            if last is not None and i > last:
                return
            if i >= first:
                yield i, _strip_eol(text)
        if failed is not None:
            if last is not None and i + 1 > last:
                return  # the bad bytes are past the lines asked for, which `decode_lines` never decodes
            raise _decode_error(name, i + 1, failed[1], failed[0], codec, option)
    if buf and i + 1 >= first and (last is None or i + 1 <= last):
        yield i + 1, _strip_eol(buf)


def iter_lines(path: str | os.PathLike, lines: tuple[int, int] | None = None,
               encoding: str | None = None) -> Iterator[tuple[int, str]]:
    """Yield (1-based line number, line without newline) of a text file, streaming.

    UTF-8 (BOM or not) or UTF-16/32 with a BOM unless `encoding` is given; bytes that do
    not decode are an error naming file, line and byte offset (see `decode_lines`).
    `lines=(first, last)` keeps only that inclusive range of line numbers.
    """
    p = require_file(path)
    with open(p, "rb") as f:
        yield from decode_lines(f, str(p), encoding, lines)


def stdin_lines(encoding: str | None = None) -> Iterator[tuple[int, str]]:
    """`iter_lines` of standard input (its bytes, with the same decoder)."""
    head = bytes(_stdin_head)
    _stdin_head.clear()
    yield from decode_lines(sys.stdin.buffer, "stdin", encoding, None, head)


def peek_stdin(limit: int) -> bytes:
    """Up to `limit` bytes from the start of standard input; `stdin_lines` reads them again."""
    if len(_stdin_head) < limit:
        _stdin_head.extend(sys.stdin.buffer.read(limit - len(_stdin_head)))
    return bytes(_stdin_head[:limit])


def sample_lines(path: str | os.PathLike, encoding: str | None = None, head_bytes: int = 1 << 16,
                 windows: int = 8, window_bytes: int = 1 << 13) -> list[str]:
    """Whole lines from a bounded sample of a text file (or of stdin, `-`), for format detection.

    A file up to `head_bytes + windows * window_bytes` is read whole; a larger one gives its
    first `head_bytes` and `windows` evenly spaced slices. Stdin gives only its head (kept
    for its reader). Bytes that do not decode become U+FFFD here; the reader reports them.
    """
    if str(path) == "-":
        data = peek_stdin(head_bytes)
        return _slice_lines(data, encoding, True, len(data) < head_bytes)
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size <= head_bytes + windows * window_bytes:
            return _slice_lines(f.read(), encoding, True, True)
        head = f.read(head_bytes)
        out = _slice_lines(head, encoding, True, False)
        codec, skip = text_codec(head, encoding)
        unit = max(1, len("\n".encode(codec)))
        for k in range(1, windows + 1):
            start = k * size // (windows + 1)
            f.seek(start - (start - skip) % unit)
            out += _slice_lines(f.read(window_bytes), codec, False, False)
    return out


def _slice_lines(data: bytes, encoding: str | None, at_start: bool, at_end: bool) -> list[str]:
    """The whole lines of a slice of a file (partial first/last lines dropped unless at its ends)."""
    codec, bom = text_codec(data, encoding) if at_start else (encoding or "utf-8", 0)
    pieces = data[bom:].decode(codec, "replace").split("\n")
    if not at_end:
        pieces = pieces[:-1]
    if not at_start:
        pieces = pieces[1:]
    return [_strip_eol(x) for x in pieces]


# ------------------------------------------------------------------ reading JSON

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


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Open a temporary file beside `path`; rename it onto `path` only if the block succeeds.

    A `path` that exists and is not a regular file (/dev/null, /dev/stdout, a FIFO) is
    written directly: renaming onto it would replace the device with a file.
    """
    p = Path(path)
    if p.exists() and not p.is_file() and not p.is_dir():
        with open(p, mode, encoding=None if "b" in mode else encoding) as f:
            yield f
        return
    p.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    except OSError as e:
        e.filename = str(p)  # the user named the output, not our temporary file
        raise
    os.close(fd)
    try:
        with open(tmp, mode, encoding=None if "b" in mode else encoding) as f:
            yield f
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; outputs are ordinary files
        os.replace(tmp, p)
    except BaseException as e:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(e, OSError) and (e.filename == tmp or (e.filename is None and e.errno in _FULL)):
            e.filename, e.filename2 = str(p), None
        raise


_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)  # a write that failed for lack of room


def write_lines(path: str | os.PathLike, lines: Iterable[str]) -> None:
    """`atomic_write` `path` as lines, each followed by a newline."""
    with atomic_write(path) as f:
        for ln in lines:
            f.write(ln + "\n")


def _resolved(path: str | os.PathLike) -> Path:
    return Path(path).resolve()


def check_not_input(out: str | os.PathLike, inputs: Iterable[str | os.PathLike]) -> None:
    """Raise a one-line error when the output `out` is one of `inputs` (the same file or directory)."""
    o = Path(out)
    for i in inputs:
        p = Path(i)
        same = _resolved(p) == _resolved(o)
        if not same and p.exists() and o.exists():
            with contextlib.suppress(OSError):
                same = os.path.samefile(p, o)  # hard links
        if same:
            raise PunctkitError(f"{o}: is also an input of this command ({p}); write the output elsewhere")


def _matches(name: str, is_dir: bool, known: Sequence[str]) -> bool:
    """Whether an entry is one punctkit knows: a pattern ending in `/` names directories."""
    for pat in known:
        if pat.endswith("/"):
            if is_dir and fnmatch.fnmatchcase(name, pat[:-1]):
                return True
        elif not is_dir and fnmatch.fnmatchcase(name, pat):
            return True
    return False


def _own_temporary(name: str) -> bool:
    """A temporary file atomic_write leaves behind when its process is killed."""
    return name.startswith(".") and name.endswith(".tmp")


class OutputDir:
    """A directory output being written one file at a time (made by `output_dir`)."""

    def __init__(self, path: Path, known: Sequence[str]):
        self.path = path
        self.known = known
        self.written: set[str] = set()

    def _target(self, name: str) -> Path:
        if not _matches(name.split("/")[0], "/" in name, self.known):
            raise ValueError(f"{name}: not a file this output knows ({', '.join(self.known)})")
        self.written.add(name)
        return self.path / name  # atomic_write makes the directory with the first file

    def open(self, name: str, mode: str = "w") -> contextlib.AbstractContextManager[IO]:
        """`atomic_write` of file `name` (one of the known names) in this directory."""
        return atomic_write(self._target(name), mode)

    def write_lines(self, name: str, lines: Iterable[str]) -> None:
        """Write `name` as lines (each followed by a newline)."""
        write_lines(self._target(name), lines)

    def write_bytes(self, name: str, data: bytes) -> None:
        """Write `name` with exactly these bytes."""
        with self.open(name, "wb") as f:
            f.write(data)


def check_output_dir(path: str | os.PathLike, known: Sequence[str], *, overwrite: bool = False,
                     inputs: Iterable[str | os.PathLike] = ()) -> None:
    """The checks of `output_dir`, for a command to make before its long work."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise PunctkitError(f"{p}: exists and is not a directory; choose a directory path")
    inputs = list(inputs)
    check_not_input(p, inputs)
    for i in inputs:
        q = Path(i)
        if _resolved(q.parent) == _resolved(p) and _matches(q.name, q.is_dir(), known):
            raise PunctkitError(f"{q}: is an input and punctkit would write {p}/{q.name}; "
                                f"write the output elsewhere")
    if p.is_dir() and not overwrite:
        unknown = sorted(e.name for e in p.iterdir()
                         if not _own_temporary(e.name) and not _matches(e.name, e.is_dir(), known))
        if unknown:
            more = f" and {len(unknown) - 3} more" if len(unknown) > 3 else ""
            raise PunctkitError(f"{p}: holds files punctkit does not write ({', '.join(unknown[:3])}{more}); "
                                f"choose a new or empty directory, or pass --overwrite "
                                f"(files punctkit does not know are kept)")


@contextlib.contextmanager
def output_dir(path: str | os.PathLike, known: Sequence[str], *, overwrite: bool = False,
               inputs: Iterable[str | os.PathLike] = (), stale: Sequence[str] = (),
               add: bool = False) -> Iterator[OutputDir]:
    """Write a directory output without deleting anything punctkit did not write.

    `path` must be absent, empty, or hold only entries matching `known` (glob
    patterns; `name/` for directories); anything else is a one-line error naming
    it and `--overwrite`. With `overwrite` (or `add`, for stages that add their own
    files to a directory in the Kaldi way, e.g. `feats.scp`) other entries are
    allowed and always left alone. Each file is written to a temporary name and
    renamed into place on its own; nothing is ever replaced as a whole directory.
    No entry of `inputs` may be `path` itself or lie in it under a known name.
    When the block succeeds, the files named in `stale` (a subset of `known`)
    that it did not write are removed: the caller lists only files it writes
    itself and that would contradict the new ones (e.g. an old `labels`).
    """
    p = Path(path)
    check_output_dir(p, known, overwrite=overwrite or add, inputs=inputs)
    out = OutputDir(p, known)
    yield out
    for name in stale:
        if name not in out.written and (p / name).is_file() and _matches(name, False, known):
            (p / name).unlink()


LOCK_NAME = ".lock"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


class DirLock:
    """`DIR/.lock` naming the host, pid and start time of the process that holds `DIR`.

    The file is written complete under a temporary name and linked into place, which
    fails when it exists (like O_EXCL, and no reader ever sees it half-written). A
    lock whose process is gone (same host, pid not running) is taken over with a log
    line; any other is a one-line error naming its holder, unless `force`.
    """

    def __init__(self, path: str | os.PathLike, force: bool = False, log: Callable[[str], None] | None = None,
                 what: str = "punctkit"):
        self.dir = Path(path)
        self.file = self.dir / LOCK_NAME
        self.force, self.log, self.what = force, log or (lambda m: None), what
        self.text = ""

    def _holder(self) -> tuple[dict[str, str], str]:
        try:
            text = self.file.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}, ""
        return dict(ln.split(" ", 1) for ln in text.splitlines() if " " in ln), text

    def acquire(self) -> None:
        """Take the lock or raise PunctkitError."""
        if self.dir.exists() and not self.dir.is_dir():
            raise PunctkitError(f"{self.dir}: exists and is not a directory; choose a directory path")
        self.dir.mkdir(parents=True, exist_ok=True)
        self.text = (f"host {socket.gethostname()}\npid {os.getpid()}\n"
                     f"started {time.strftime('%Y-%m-%d %H:%M:%S %Z')}\n")
        fd, tmp = tempfile.mkstemp(prefix=f"{LOCK_NAME}.", suffix=".tmp", dir=self.dir)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(self.text)
            for _ in range(3):
                try:
                    os.link(tmp, self.file)
                    return
                except FileExistsError:
                    self._take_over_or_fail()
            raise PunctkitError(f"{self.file}: could not take the lock (other processes keep taking it)")
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)

    def _take_over_or_fail(self) -> None:
        """Remove a lock left by a dead process (or any, with force); else raise the holder's error."""
        info, text = self._holder()
        host, pid = info.get("host", "?"), info.get("pid", "?")
        here = host == socket.gethostname()
        dead = here and pid.isdigit() and not _pid_alive(int(pid))
        if not (dead or self.force):
            since = f", since {info['started']}" if "started" in info else ""
            where_ = "running" if here else "on another host; if it is no longer running there, pass --force"
            raise PunctkitError(f"{self.dir}: in use by another {self.what} (host {host}, pid {pid}{since}; "
                                f"{where_}; lock file {self.file})")
        why = "its process is not running" if dead else "--force"
        self.log(f"taking over the lock {self.file} of host {host}, pid {pid} ({why})")
        if self._holder()[1] == text:  # still the same holder's: remove it, then link ours
            with contextlib.suppress(FileNotFoundError):
                self.file.unlink()

    def release(self) -> None:
        """Remove the lock if it is still this process's."""
        if self.text and self._holder()[1] == self.text:
            self.file.unlink()
        self.text = ""

    def __enter__(self) -> "DirLock":
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
