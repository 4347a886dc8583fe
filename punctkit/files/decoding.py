"""Text decoding: the one decoder of text input (files, stdin, HTTP bodies), its codecs and BOMs,
and the bounded samples format detection reads."""
from __future__ import annotations

import codecs
import itertools
import os
import sys
from typing import BinaryIO, Iterator

from punctkit.files.errors import PunctkitError, require_file

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
