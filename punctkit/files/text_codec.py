"""Text decoding: the one decoder of text input (files, stdin, pipes, HTTP bodies), its codecs and BOMs,
and the bounded samples format detection reads.

Limits: a line holds at most MAX_LINE_BYTES bytes (so a word does too); a longer one, such as the
endless "line" of /dev/zero or of a sparse file of NUL bytes, is a one-line error naming the input and
the line once that many bytes are read, never read into memory whole. Inputs are read a line at a time.

Inputs that can be read only once (standard input, a FIFO, a pipe such as `<(zcat x.gz)` or
/dev/stdin, a device such as /dev/urandom) are opened once: format detection reads their head
(`peek_input`), which their reader then gets first, followed by the rest of the same stream.
"""
from __future__ import annotations

import codecs
import contextlib
import itertools
import os
import re
import stat
from dataclasses import dataclass
from typing import BinaryIO, Iterator

from punctkit.files.errors import PunctkitError, require_file
from punctkit.files.streams import stdin_buffer

# Byte-order marks, UTF-32 first (its little-endian BOM starts with UTF-16's).
BOMS = ((codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"), (codecs.BOM_UTF8, "utf-8"),
        (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))
MAX_LINE_BYTES = 1 << 25  # 32 MiB: the longest line (and word) of any text input; a day's Whisper JSON on
# one line is about 30 MiB, a 5 MB word fits


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


def codec_of(head: bytes, encoding: str | None = None, option: str = ENCODING_OPTION) -> tuple[str, int]:
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


@dataclass(frozen=True)
class Compression:
    """A compressed file format, told by how its files start, and the commands that decompress one."""

    name: str
    magic: bytes     # how its files start
    unpack: str      # the command that decompresses FILE into a file beside it
    cat: str         # the command that writes FILE decompressed to standard output
    after: bytes = b""  # a pattern the bytes after `magic` match (bzip2: a block size and a block's magic)

    def starts(self, head: bytes) -> bool:
        """Whether a file that starts with `head` is in this format."""
        return head.startswith(self.magic) and re.match(self.after, head[len(self.magic):]) is not None


COMPRESSIONS = (Compression("gzip", b"\x1f\x8b", "gunzip -k", "zcat"),
                Compression("bzip2", b"BZh", "bunzip2 -k", "bzcat", rb"[1-9](?:1AY&SY|\x17rE8P\x90)"),
                Compression("xz", b"\xfd7zXZ\x00", "unxz -k", "xzcat"),
                Compression("zstd", b"\x28\xb5\x2f\xfd", "unzstd", "zstdcat"),
                Compression("zip", b"PK\x03\x04", "unzip", "unzip -p"))
MAGIC_BYTES = 10  # enough of a head to tell each of COMPRESSIONS


def check_not_compressed(head: bytes, name: str, option: str = ENCODING_OPTION) -> None:
    """A one-line error when an input named `name` that starts with `head` is a compressed file (gzip, bzip2,
    xz, zstd, zip) rather than text, saying how to decompress it (no encoding reads it: it is not text);
    `option` other than --encoding: an HTTP body, which the server decompresses when its Content-Encoding
    says gzip."""
    c = next((c for c in COMPRESSIONS if c.starts(head)), None)
    if c is None:
        return
    if option != ENCODING_OPTION:
        fix = "send the text, or gzip it and say so with the header Content-Encoding: gzip"
    elif name == "stdin":
        fix = f"decompress it on its way in: {c.cat} FILE | punctkit punctuate -"
    else:
        fix = f"decompress it first ({c.unpack} {name}), or on its way in: {c.cat} {name} | punctkit punctuate -"
    at = name if option != ENCODING_OPTION else f"{name}:1"  # a file's line 1: its first bytes say so
    raise PunctkitError(f"{at}: {c.name}-compressed, not text; {fix}")


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


def _too_long(name: str, lineno: int, unit: str = "bytes") -> PunctkitError:
    return PunctkitError(f"{name}:{lineno}: line longer than {MAX_LINE_BYTES >> 20} MiB ({MAX_LINE_BYTES} {unit}, "
                         f"the limit of a line and of a word); break the input into lines (is it text? a device or "
                         f"a file of NUL bytes has no line ends)")


def _byte_lines(stream: BinaryIO, head: bytes, name: str) -> Iterator[bytes]:
    """The lines of `head` followed by the rest of `stream`, each with its newline; a line longer
    than MAX_LINE_BYTES is an error naming `name` and the line, after reading no more than that."""
    buf, n = head, 0
    while b"\n" in buf:
        line, _, buf = buf.partition(b"\n")
        n += 1
        if len(line) > MAX_LINE_BYTES:
            raise _too_long(name, n)
        yield line + b"\n"
    while True:
        more = stream.readline(MAX_LINE_BYTES + 1 - len(buf)) if len(buf) <= MAX_LINE_BYTES else b""
        line, buf = (buf + more if buf else more), b""
        if not line:
            return
        n += 1
        if len(line) > MAX_LINE_BYTES and not (len(line) == MAX_LINE_BYTES + 1 and line.endswith(b"\n")):
            raise _too_long(name, n)
        yield line


def _strip_eol(text: str) -> str:
    return text.rstrip("\n").rstrip("\r")


def decode_lines(stream: BinaryIO, name: str, encoding: str | None = None,
                 lines: tuple[int, int] | None = None, head: bytes = b"",
                 option: str = ENCODING_OPTION) -> Iterator[tuple[int, str]]:
    """(1-based line number, line without its newline) of a byte stream, each as soon as it has come.

    The codec comes from `codec_of` (BOM stripped); bytes that do not decode are a
    one-line error naming `name`, the line and the byte offset, and saying how to give the
    encoding (`option`: --encoding, or a request's charset). `head` holds bytes already
    read from the stream. `lines=(first, last)` keeps that inclusive range.
    """
    head = _stream_head(stream, head)
    while len(head) < MAGIC_BYTES and any(c.magic.startswith(head) or head.startswith(c.magic) for c in COMPRESSIONS):
        more = stream.read1(MAGIC_BYTES - len(head))  # as soon as it arrives: a live stream is not waited on
        if not more:
            break
        head += more
    check_not_compressed(head, name, option)
    codec, skip = codec_of(head, encoding, option)
    first, last = lines or (1, None)
    if "\n".encode(codec) != b"\n":  # UTF-16/32: decode first, then split
        yield from _wide_lines(stream, name, codec, head, skip, first, last, option)
        return
    offset, last = skip, 1 << 62 if last is None else last
    for i, raw in enumerate(_byte_lines(stream, head[skip:], name), 1):
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
    bytes that do not decode come out before the error, as they do from `decode_lines`. A line is
    bounded as there: MAX_LINE_BYTES bytes of input."""
    dec = codecs.getincrementaldecoder(codec)("strict")
    limit = MAX_LINE_BYTES // len("\n".encode(codec))  # in characters
    i, fed = 0, skip
    pending: list[str] = []  # the pieces of the line not ended yet
    size = 0                 # their characters
    failed: tuple[UnicodeError, int] | None = None  # the error, and where its object starts
    chunks = itertools.chain([head[skip:]], iter(lambda: stream.read1(1 << 16), b""), [b""])
    for chunk in chunks:
        held = len(dec.getstate()[0])
        try:
            text = dec.decode(chunk, final=not chunk)
        except UnicodeError as e:
            failed = e, fed - held
            text = e.object[:e.start].decode(codec, "replace") if isinstance(e, UnicodeDecodeError) else ""
        fed += len(chunk)
        done: list[str] = []
        if "\n" in text:
            start, *rest = text.split("\n")
            done = ["".join(pending) + start, *rest[:-1]]
            pending, size = [rest[-1]], len(rest[-1])
        elif text:
            pending.append(text)
            size += len(text)
        for line in done:
            i += 1
            if len(line) > limit:
                raise _too_long(name, i, f"bytes of {codec}")
            if last is not None and i > last:
                return
            if i >= first:
                yield i, _strip_eol(line)
        if size > limit:
            raise _too_long(name, i + 1, f"bytes of {codec}")
        if failed is not None:
            if last is not None and i + 1 > last:
                return  # the bad bytes are past the lines asked for, which `decode_lines` never decodes
            raise _decode_error(name, i + 1, failed[1], failed[0], codec, option)
    buf = "".join(pending)
    if buf and i + 1 >= first and (last is None or i + 1 <= last):
        yield i + 1, _strip_eol(buf)


def iter_lines(path: str | os.PathLike, lines: tuple[int, int] | None = None,
               encoding: str | None = None) -> Iterator[tuple[int, str]]:
    """Yield (1-based line number, line without newline) of a text file, streaming.

    UTF-8 (BOM or not) or UTF-16/32 with a BOM unless `encoding` is given; bytes that do
    not decode are an error naming file, line and byte offset (see `decode_lines`).
    `lines=(first, last)` keeps only that inclusive range of line numbers.
    """
    if is_stream(path):  # a FIFO, a pipe, a device: read once, after the head detection read
        yield from _stream_lines(path, encoding, lines)
        return
    p = require_file(path)
    with open(p, "rb") as f, _metered(f):
        yield from decode_lines(f, str(p), encoding, lines)


class ReadMeter:
    """Bytes read so far of the files `iter_lines` opens while the meter is on (`with ReadMeter() as m`,
    then `m.bytes_read()`): a progress bar's measure of the work done on an input of known size."""

    def __init__(self) -> None:
        self.files: list[BinaryIO] = []  # open now
        self.done = 0                    # bytes read of the files closed

    def __enter__(self) -> "ReadMeter":
        _meters.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _meters.remove(self)

    def bytes_read(self) -> int:
        return self.done + sum(f.tell() for f in self.files if not f.closed)


_meters: list[ReadMeter] = []


@contextlib.contextmanager
def _metered(f: BinaryIO) -> Iterator[None]:
    """`f` counted by the meters that are on while it is read."""
    meters = list(_meters)
    for m in meters:
        m.files.append(f)
    try:
        yield
    finally:
        for m in meters:
            m.files.remove(f)
            m.done += f.tell()


def stdin_lines(encoding: str | None = None) -> Iterator[tuple[int, str]]:
    """`iter_lines` of standard input (its bytes, with the same decoder)."""
    yield from _stream_lines("-", encoding, None)


def peek_stdin(limit: int) -> bytes:
    """Up to `limit` bytes from the start of standard input; `stdin_lines` reads them again."""
    return peek_input("-", limit)


class _Once:
    """An input that can be read only once, opened once: its file and the head read ahead of its reader."""

    def __init__(self, file: BinaryIO, name: str, key: object = "-", device: bool = False) -> None:
        self.file = file
        self.name = name
        self.key = key
        self.device = device  # a character device (/dev/zero, a terminal): opened anew for the next read
        self.head = bytearray()
        self.taken = False  # a reader has had it


_once: dict[object, _Once] = {}  # by (device, inode) of the path, held open; "-": standard input


def is_stream(path: str | os.PathLike) -> bool:
    """Whether `path` is standard input (`-`) or a file that can be read only once, from its start to
    its end: a FIFO, a pipe (`<(zcat x.gz)`, /dev/stdin), a character device (/dev/urandom), a socket."""
    if str(path) == "-":
        return True
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def _once_input(path: str | os.PathLike) -> _Once:
    """The one open file of a stream input (`is_stream`); standard input's as it is now (a test runner
    swaps it)."""
    if str(path) == "-":
        buf = stdin_buffer()
        entry = _once.get("-")
        if entry is None or entry.file is not buf:
            entry = _once["-"] = _Once(buf, "stdin")
        return entry
    st = os.stat(path)
    key = (st.st_dev, st.st_ino, st.st_rdev)  # held open, so never reused by another file
    entry = _once.get(key)
    if entry is None:  # a pipe stays open until the process ends: its key cannot be reused
        entry = _once[key] = _Once(open(path, "rb"), str(path), key, stat.S_ISCHR(st.st_mode))  # noqa: SIM115
    return entry


def _read_once_error(entry: _Once) -> PunctkitError:
    return PunctkitError(f"{entry.name}: a pipe or device can be read only once, and it has been read; "
                         f"save it to a file and give that")


def peek_input(path: str | os.PathLike, limit: int) -> bytes:
    """Up to `limit` bytes from the start of a stream input (`is_stream`: stdin, a FIFO, a pipe, a device),
    kept for its reader, which gets them first (`iter_lines`, `stdin_lines`)."""
    entry = _once_input(path)
    if entry.taken:
        raise _read_once_error(entry)
    while len(entry.head) < limit:
        more = entry.file.read(limit - len(entry.head))
        if not more:
            break
        entry.head += more
    return bytes(entry.head[:limit])


def _stream_lines(path: str | os.PathLike, encoding: str | None,
                  lines: tuple[int, int] | None) -> Iterator[tuple[int, str]]:
    """`decode_lines` of a stream input: its head first (`peek_input`), then the rest of the same stream."""
    entry = _once_input(path)
    if entry.taken:
        raise _read_once_error(entry)
    entry.taken = True
    head = bytes(entry.head)
    entry.head.clear()
    try:
        yield from decode_lines(entry.file, entry.name, encoding, lines, head)
    finally:
        if entry.device and _once.get(entry.key) is entry:  # a device gives as much again when reopened
            del _once[entry.key]
            entry.file.close()


def sample_lines(path: str | os.PathLike, encoding: str | None = None, head_bytes: int = 1 << 16,
                 windows: int = 8, window_bytes: int = 1 << 13) -> list[str]:
    """Whole lines from a bounded sample of a text file (or of stdin, `-`), for format detection.

    A file up to `head_bytes + windows * window_bytes` is read whole; a larger one gives its
    first `head_bytes` and `windows` evenly spaced slices. Stdin gives only its head (kept
    for its reader). Bytes that do not decode become U+FFFD here; the reader reports them.
    """
    if is_stream(path):  # stdin, a FIFO, a pipe, a device: its head only (kept for its reader)
        data = peek_input(path, head_bytes)
        return _slice_lines(data, encoding, True, len(data) < head_bytes)
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size <= head_bytes + windows * window_bytes:
            return _slice_lines(f.read(), encoding, True, True)
        head = f.read(head_bytes)
        out = _slice_lines(head, encoding, True, False)
        codec, skip = codec_of(head, encoding)
        unit = max(1, len("\n".encode(codec)))
        for k in range(1, windows + 1):
            start = k * size // (windows + 1)
            f.seek(start - (start - skip) % unit)
            out += _slice_lines(f.read(window_bytes), codec, False, False)
    return out


def _slice_lines(data: bytes, encoding: str | None, at_start: bool, at_end: bool) -> list[str]:
    """The whole lines of a slice of a file (partial first/last lines dropped unless at its ends)."""
    codec, bom = codec_of(data, encoding) if at_start else (encoding or "utf-8", 0)
    pieces = data[bom:].decode(codec, "replace").split("\n")
    if not at_end:
        pieces = pieces[:-1]
    if not at_start:
        pieces = pieces[1:]
    return [_strip_eol(x) for x in pieces]
