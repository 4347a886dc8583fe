"""`punctkit serve`: punctuation as an HTTP service over a packed model (or an ensemble package).

    punctkit serve -m model.pkt [--host 127.0.0.1] [--port 8080]

Routes (`routes`, the route table): `POST /punctuate` (the body is plain text or any input `punctuate`
reads, found by the format registry's detection over the body; the output format is the
`format` query parameter), `GET /health`, `GET /model` (the package's card), `GET /stream` (a websocket:
`punctuate --stream`'s line protocol over messages, `Service.stream`).

Built on aiohttp: one well-kept library that is both the HTTP server and a websocket
server (the streaming endpoint is one more row in `routes`), with no separate ASGI
server to install, and whose asyncio client is the benchmark's load generator
(utils/serve_load.py). It is the `serve` extra: pip install 'punctkit[serve]'.

Batching: each request is read into utterances (in a thread when large), queued, and the batcher
waits at most `batch_wait_ms` after the first queued request, then runs ONE labelling
call over the utterances of every queued request (`label_batch`: one `Engine.label` call
per kind of request, forced marks and casing) in its worker thread,
never on the event loop; the labels are split back per request. Each utterance is its own
stream and its windows are decoded independently, so batching never changes a label
(a plain-text body is one stream, as `punctuate` reads it). Long inputs go through
`Engine.label`, which decodes in bounded chunks: no input comes back unpunctuated. A response is
written by punctuate's own writer (`punctuator.write_units`). Errors are JSON, `{"error": "one line"}`:
400 for input that cannot be read (aiohttp's own parser errors too: `JsonRequestHandler`), 403 for a
Host (or Origin) not allowed (`HostCheck`, against DNS rebinding), 413 for a body over `max_body`,
429 over the per-client rate limit (off by default), 503 with Retry-After past the admission limit
(`Admission`: requests and body bytes in flight, refused before their body is read). aiohttp's own log
lines go to the service's log, one line each (`route_framework_logs`). `GET /model` names no absolute
path (`card_paths`). With a package that has an ONNX graph, the `auto` backend runs it and torch is
never imported (`/health` says `torch_loaded`).
"""
from __future__ import annotations

import asyncio
import contextlib
import io
import ipaddress
import json
import logging
import re
import signal
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Awaitable, Callable, Iterator
from urllib.parse import urlsplit

from aiohttp import WSMsgType, web
from aiohttp.http import HttpProcessingError
from aiohttp.web import RequestHandler

from punctkit.data.formats import AsrUtterance, Format, TextInput, detect_for, get_format, names
from punctkit.data.labels import default_substitution
from punctkit.decode.lookahead import parse_lookahead
from punctkit.files import PunctkitError, check_not_input, decode_lines, parse_json
from punctkit.infer.engine import Engine, Labelled
from punctkit.infer.ensemble import load_model
from punctkit.infer.render import Casing
from punctkit.package import card_paths
from punctkit.punctuator import OUTPUT_FORMATS, output_options, write_units

if TYPE_CHECKING:
    from punctkit.infer.stream import LineProtocol

REQUEST = "request"  # the body's name: in errors (`request:2: ...`) and in ids made for lines without one
PARAMS = ("format", "input_format", "keep_input_marks", "capitalize", "recase")
STREAM_PARAMS = ("lookahead", "input_format", "flush_on_final", "capitalize", "recase")
EOF_MESSAGE = {"eof": True}  # a /stream client's last message: the words still held come back, then close
TIMED_JSON = "timed-json"  # the default output for words with times, when the registry has it
JSON_TYPES = ("application/json", "application/x-ndjson", "application/jsonl", "application/x-jsonlines")
MEDIA = {"jsonl": "application/x-ndjson", "timed-json": "application/x-ndjson", "srt": "application/x-subrip",
         "vtt": "text/vtt"}
INLINE_BYTES = 16_384  # bodies read and written on the event loop (larger: in a thread)
TRUE, FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")  # always accepted in Host (and any loopback address)
ADMITTED = ("/punctuate", "/stream")  # the routes that take memory and model time: counted by `Admission`
RETRY_AFTER = "1"  # seconds, on a 503 past the admission limit
FRAMEWORK_LOGGERS = ("aiohttp", "asyncio")  # their records become one line each of the service's log


# ------------------------------------------------------------------ options

@dataclass
class ServeOptions:
    """What `punctkit serve` was asked for."""

    host: str = "127.0.0.1"
    port: int = 8080
    max_body: int = 1_000_000      # bytes
    batch_wait_ms: float = 5.0
    rate_limit: float | None = None  # requests per second per client; None: off
    log: Path | None = None          # None: stderr
    max_queue: int = 64              # requests in flight (read, queued or labelled; open websockets); 503 beyond
    max_queue_bytes: int = 4_000_000  # their body bytes (declared; else --max-body each); 503 beyond
    allow_hosts: tuple[str, ...] = ()  # Host names accepted besides loopback and --host ('*': any)


_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmg]i?b?|b)?\s*", re.I)
_UNITS = {"": 1, "b": 1, "k": 10**3, "m": 10**6, "g": 10**9, "ki": 2**10, "mi": 2**20, "gi": 2**30}


def parse_size(spec: str, option: str = "--max-body") -> int:
    """Bytes of a size such as `1MB`, `512KB`, `64KiB` or `1000000` (K, M, G: powers of 1000; Ki, Mi, Gi: of 1024)."""
    m = _SIZE.fullmatch(spec)
    if not m or float(m.group(1)) <= 0:
        raise PunctkitError(f"{option}: expected a size such as 1MB, 512KB or 1000000, got {printable(repr(spec))}")
    unit = (m.group(2) or "").lower().rstrip("b")
    return int(float(m.group(1)) * _UNITS[unit])


def parse_rate(spec: str | None) -> float | None:
    """Requests per second from `N` or `N/s` (None: no limit)."""
    if spec is None:
        return None
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(/\s*s)?\s*", spec)
    if not m or float(m.group(1)) <= 0:
        raise PunctkitError(f"--rate-limit: expected requests per second per client, e.g. 10 or 10/s, got '{spec}'")
    return float(m.group(1))


def host_name(value: str) -> str | None:
    """The name in a Host header value (or an --allow-host): lowercase, without its port, the brackets
    of an IPv6 address or a final dot; None when it is not a host name at all."""
    v = value.strip().lower()
    if v.startswith("["):
        name, close, rest = v[1:].partition("]")
        if not close or (rest and not re.fullmatch(r":\d{1,5}", rest)):
            return None
    elif v.count(":") > 1:  # an IPv6 address without brackets (as --host takes it)
        name = v
    else:
        name, colon, port = v.partition(":")
        if colon and not re.fullmatch(r"\d{1,5}", port):
            return None
    name = name.rstrip(".") if name not in (".", "") else ""
    if not name or not re.fullmatch(r"[a-z0-9._~%!$&'()*+,;=:-]+", name):
        return None
    with contextlib.suppress(ValueError):
        return ipaddress.ip_address(name).compressed  # one spelling of an address
    return name


def parse_hosts(specs: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """The names of `--allow-host` options (`*`: any name); a one-line error for one that is no host name."""
    out = []
    for spec in specs:
        name = "*" if spec.strip() == "*" else host_name(spec)
        if name is None:
            raise PunctkitError(f"--allow-host: expected a host name such as myhost.lan, 10.0.0.5 or *, "
                                f"got {printable(repr(spec))}")
        out.append(name)
    return tuple(out)


class HostCheck:
    """Which Host (and Origin) a request may name: against DNS rebinding, where a web page the user visits
    names its own host for the loopback address, and against pages of other sites that open a
    websocket (or post) to the service. Accepted: loopback names and addresses (`localhost`,
    `127.0.0.1`, `[::1]`, any port), the address the server listens on (`--host`) and `--allow-host`
    names (`*`: any). A request without Host (HTTP/1.0; no browser sends one) is accepted; an Origin
    header, when present, must name an accepted host too."""

    def __init__(self, listen_host: str, allowed: tuple[str, ...] = ()):
        self.names = {*LOOPBACK_NAMES, *allowed}
        if (h := host_name(listen_host)) is not None:
            self.names.add(h)
        self.any = "*" in self.names

    def accepts(self, name: str | None) -> bool:
        """Whether a host name (`host_name`'s form) is accepted."""
        if self.any:
            return True
        if name is None:
            return False
        if name in self.names:
            return True
        with contextlib.suppress(ValueError):
            return ipaddress.ip_address(name).is_loopback
        return False

    def refusal(self, request: web.BaseRequest) -> str | None:
        """Why the request's Host or Origin is not accepted; None when both are."""
        host = request.headers.get("Host")
        if host is not None and not self.accepts(host_name(host)):
            return f"host {printable(repr(host[:100]))} is not allowed (a guard against DNS rebinding); " \
                   f"accepted: {self.shown()}; name others with --allow-host"
        origin = request.headers.get("Origin")
        if origin is not None:
            try:
                name = host_name(urlsplit(origin).netloc) if "://" in origin else None
            except ValueError:
                name = None
            if not self.accepts(name):
                return f"origin {printable(repr(origin[:100]))} is not allowed (a page of another site); " \
                       f"accepted hosts: {self.shown()}; name others with --allow-host"
        return None

    def shown(self) -> str:
        """The accepted names, for messages."""
        return ", ".join(f"[{n}]" if ":" in n else n for n in sorted(self.names))


@dataclass
class Admission:
    """The requests in flight (a POST /punctuate read, queued or labelled; an open /stream websocket) and
    their body bytes: past `max_requests` or `max_bytes`, a request is refused (503) before its body is
    read, so the memory of a flood is bounded (a body read into words takes about 100 times its bytes
    until it is answered). One request is always admitted when none is in flight. A body's bytes are
    its declared Content-Length, or `max_body` when it has none (chunked) or is compressed (its decoded
    size is what is held). A websocket counts as a request of no bytes: it holds one message (at most
    `max_body`) at a time, and messages are labelled one at a time on the model's thread."""

    max_requests: int
    max_bytes: int
    max_body: int
    requests: int = 0
    bytes: int = 0
    refused: int = 0

    def size(self, request: web.BaseRequest) -> int:
        """The bytes a request holds in flight (at most `max_body`: larger ones are 413s)."""
        if request.path == "/stream":
            return 0
        n = request.content_length
        if n is None or request.headers.get("Content-Encoding", "identity").lower() != "identity":
            return self.max_body
        return min(n, self.max_body)

    @contextlib.contextmanager
    def slot(self, size: int) -> Iterator[bool]:
        """Whether a request of `size` bytes is admitted; the slot is given back on leaving."""
        if self.requests and (self.requests >= self.max_requests or self.bytes + size > self.max_bytes):
            self.refused += 1
            yield False
            return
        self.requests += 1
        self.bytes += size
        try:
            yield True
        finally:
            self.requests -= 1
            self.bytes -= size


def printable(text: str) -> str:
    """`text` on one line with nothing a terminal acts on: control and format characters (ESC, BEL,
    backspace, newlines, bidi controls) written as escapes (`\\x1b`)."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") if ord(c) < 0x10000
                   else f"\\U{ord(c):08x}" for c in text)


def framework_message(exc: BaseException | None, message: str | None, status: int) -> str:
    """One line for an error aiohttp found itself (`Invalid header token:\\n\\n  b'x'\\n   ^`: the
    caret lines dropped, the rest joined)."""
    if isinstance(exc, web.RequestPayloadError):  # a body aiohttp could not read: its parser's error inside
        cause = exc.__cause__
        exc = cause if isinstance(cause, HttpProcessingError) else None
        message = message or re.sub(r"^\d{3}, message:\s*", "", str(cause or ""))
    if isinstance(exc, HttpProcessingError):
        message = exc.message if isinstance(exc.message, str) else str(exc.message)
    if status == 500 and exc is not None and not isinstance(exc, HttpProcessingError):
        return internal_error(exc) if isinstance(exc, Exception) else f"internal error: {type(exc).__name__}"
    if status == 504:
        return "request: timed out"
    lines = [ln.strip() for ln in (message or "").splitlines() if ln.strip() and set(ln.strip()) != {"^"}]
    text = " ".join(lines)[:300] or f"HTTP {status}"
    return f"bad request: {text}" if status == 400 else text


class JsonRequestHandler(RequestHandler):
    """aiohttp's connection handler, whose own error answers (a request line, header or chunk its parser
    refuses, before any route or middleware runs) are JSON one-liners like every other error, logged
    as one line of the service's log (`service`, set by `handler_class`) with no traceback."""

    service: "Service"

    def handle_error(self, request: web.BaseRequest, status: int = 500, exc: BaseException | None = None,
                     message: str | None = None) -> web.StreamResponse:
        text = framework_message(exc, message, status)
        self.service.requests += 1
        parsed = not isinstance(exc, HttpProcessingError)  # else the request line was never read
        method, path = (printable(request.method), printable(request.path_qs)) if parsed else ("-", "-")
        self.service.log(f"{request.remote} {method} {path} {status} 0 words 0.0 ms: {printable(text)}")
        if request.writer.output_size > 0:  # part of an answer went out: the connection is closed
            raise ConnectionError("response already started; cannot send the error")
        resp = error(status, text)
        resp.force_close()
        return resp


def handler_class(service: "Service") -> type[JsonRequestHandler]:
    """The `JsonRequestHandler` of one service."""
    return type("ServiceRequestHandler", (JsonRequestHandler,), {"service": service})


class JsonServer(web.Server):
    """aiohttp's low-level server, making `handler` connection handlers (`JsonRequestHandler`)."""

    handler: type[RequestHandler] = RequestHandler

    def __call__(self) -> RequestHandler:  # as web.Server.__call__ (its loop and handler options), another class
        return self.handler(self, loop=self._loop, **self._kwargs)


class ServiceRunner(web.AppRunner):
    """`web.AppRunner` whose connections are handled by the service's `JsonRequestHandler`."""

    def __init__(self, app: web.Application, handler: type[RequestHandler], **kwargs: Any):
        super().__init__(app, **kwargs)
        self.handler = handler

    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        server.__class__ = type("ServiceServer", (JsonServer,), {"handler": self.handler})
        return server


class LogLines(logging.Handler):
    """aiohttp's and asyncio's log records as one line each of the service's log: the message and, for
    an exception, its type and first line (never a traceback)."""

    def __init__(self, service: "Service"):
        super().__init__(logging.WARNING)
        self.service = service

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):
            line = f"{record.name}: {record.getMessage()}"
            if record.exc_info and record.exc_info[1] is not None:
                exc = record.exc_info[1]
                first = (str(exc).strip().splitlines() or [""])[0][:200]
                line += f": {type(exc).__name__}: {first}"
            self.service.log(printable(" ".join(line.split())))


@contextlib.contextmanager
def route_framework_logs(service: "Service") -> Iterator[None]:
    """While serving, aiohttp's and asyncio's loggers write to the service's log only (one line a record,
    `LogLines`), never a traceback to standard error."""
    handler = LogLines(service)
    saved = []
    for name in FRAMEWORK_LOGGERS:
        logger = logging.getLogger(name)
        saved.append((logger, logger.propagate, logger.level))
        logger.addHandler(handler)
        logger.propagate = False
        if logger.level == logging.NOTSET or logger.level < logging.WARNING:
            logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        for logger, propagate, level in saved:
            logger.removeHandler(handler)
            logger.propagate = propagate
            logger.setLevel(level)


# ------------------------------------------------------------------ reading, labelling, writing (no HTTP)

@dataclass
class Parsed:
    """One request body read into utterances."""

    reader: Format
    units: list[AsrUtterance]
    words: int


@dataclass
class Request:
    """One /punctuate request's utterances, and how they are labelled (`forced`: their own marks are
    kept) and shown (`casing`)."""

    parsed: Parsed
    forced: bool = False
    casing: Casing | None = None

    @property
    def streams(self) -> list[Any]:
        """What `Engine.label` takes for it: each utterance, or (plain-text lines) all lines as one stream."""
        units = self.parsed.units
        return [units] if self.parsed.reader.one_stream and units else list(units)


def body_text(body: bytes, charset: str | None) -> str:
    """The body as text, by punctkit's one decoder (`decode_lines`): in `charset` (the request's; a text
    encoding, utf-16 big-endian without a BOM), else UTF-8 or UTF-16/32 by its BOM. Bytes that do not
    decode are a one-line error naming the request's line, the byte and its charset."""
    return "".join(text + "\n" for _, text in decode_lines(io.BytesIO(body), REQUEST, charset, option="charset"))


def check_json(text: str) -> None:
    """A body sent as JSON must be a JSON document or JSON lines; else one line naming the first bad line."""
    try:
        parse_json(text)
        return
    except ValueError:
        pass
    for i, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                parse_json(line)
            except json.JSONDecodeError as e:
                raise PunctkitError(f"{REQUEST}:{i}: not valid JSON ({e.msg} at column {e.colno})") from None


def parse_body(punct: Engine, body: bytes, input_format: str | None = None,
               charset: str | None = None, as_json: bool = False) -> Parsed:
    """The body's utterances (`body_text`; `as_json`: checked by `check_json`), read in memory by the
    registry's reader for its format (given, else detected) as the text `request`: errors name it
    (`request:2: ...`), and lines without ids are `request-LINENO` (`request-000001`), the same on
    every request."""
    text = body_text(body, charset)
    if as_json:
        check_json(text)
    src = TextInput(REQUEST, text)
    reader = (get_format(input_format, "units", "input format") if input_format
              else detect_for(src, "units", None, "serve", "the input_format parameter"))
    inv = punct.inventory
    units = list(reader.units(src, inv, default_substitution(inv), None, [0]))  # type: ignore[misc]
    return Parsed(reader, units, sum(len(u.words) for u in units))


def label_batch(punct: Engine, requests: list[Request]) -> list[list[Labelled]]:
    """The labelled utterances of several requests, split back per request: one `Engine.label` call
    over every request alike (forced marks, casing), each utterance its own stream (plain-text lines:
    one stream), so batching never changes a label."""
    out: list[list[Labelled]] = [[] for _ in requests]
    kinds: dict[tuple[bool, bool, bool], list[int]] = {}
    for k, r in enumerate(requests):
        casing = r.casing or punct.casing()
        kinds.setdefault((r.forced, casing.capitalize, casing.recase), []).append(k)
    for ks in kinds.values():
        first = requests[ks[0]]
        done = punct.label([s for k in ks for s in requests[k].streams], forced=first.forced, casing=first.casing)
        for k in ks:
            out[k] = [next(done) for _ in requests[k].parsed.units]
    return out


def has_times(units: list[AsrUtterance]) -> bool:
    """Whether any word came with a start time."""
    return any(isinstance(r, dict) and (r.get("start_s") if "start_s" in r else r.get("start")) is not None
               for u in units for r in u.records)


def default_format(parsed: Parsed) -> str:
    """Timed output for words that came with times (timed JSON once the registry has it, else the input's
    own format when punctuate writes it, which keeps the times); else readable text."""
    if parsed.reader.times and has_times(parsed.units):
        for name in (TIMED_JSON, parsed.reader.name):
            if name in names("emit"):
                return name
    return "readable"


def output_format(name: str | None, parsed: Parsed) -> Format:
    """The output format asked for, else `default_format`."""
    name = name or default_format(parsed)
    fmt = get_format(name, "emit", "output format", OUTPUT_FORMATS)
    if fmt.directory:
        raise PunctkitError(f"format {name} is a directory, which a response cannot be")
    if fmt.needs_times and not parsed.reader.times:
        raise PunctkitError(f"format {name} needs word times; the request is {parsed.reader.name}, which has none")
    return fmt


def render(punct: Engine, parsed: Parsed, labelled: list[Labelled], fmt: Format) -> str:
    """The response body, written by punctuate's writer (`write_units`) to a text stream in memory."""
    out = io.StringIO()
    write_units(fmt, labelled, output_options(punct, parsed.reader.one_stream), out, REQUEST)
    return out.getvalue()


# ------------------------------------------------------------------ the service

@dataclass
class Job:
    """A request waiting for its labels."""

    request: Request
    done: asyncio.Future


class RateLimit:
    """A token bucket per client address: `rate` requests a second, bursts of up to `rate` (at least 1)."""

    def __init__(self, rate: float, max_clients: int = 10000):
        self.rate, self.burst, self.max_clients = rate, max(1.0, rate), max_clients
        self.buckets: dict[str, tuple[float, float]] = {}

    def allow(self, client: str, now: float) -> bool:
        """Take a token for `client`; False when it has none left."""
        tokens, last = self.buckets.get(client, (self.burst, now))
        tokens = min(self.burst, tokens + (now - last) * self.rate)
        if len(self.buckets) >= self.max_clients and client not in self.buckets:
            self.buckets.clear()  # bounded memory: forget idle clients all at once
        self.buckets[client] = (tokens - 1, now) if tokens >= 1 else (tokens, now)
        return tokens >= 1


@dataclass
class Service:
    """The loaded model, the batch queue and the counters behind the routes."""

    punct: Engine
    opts: ServeOptions
    model_path: Path
    log_file: IO[str] = field(default=sys.stderr)
    started: float = field(default_factory=time.time)
    requests: int = 0
    words: int = 0
    batches: int = 0
    queue: asyncio.Queue | None = None
    pool: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(1, "punctkit-model"))
    limiter: RateLimit | None = None
    hosts: HostCheck = field(init=False)
    admission: Admission = field(init=False)

    def __post_init__(self) -> None:
        if self.opts.rate_limit:
            self.limiter = RateLimit(self.opts.rate_limit)
        self.hosts = HostCheck(self.opts.host, self.opts.allow_hosts)
        self.admission = Admission(self.opts.max_queue, self.opts.max_queue_bytes, self.opts.max_body)

    # --- batching
    async def label(self, request: Request) -> list[Labelled]:
        """One request's utterances labelled, from a shared batch."""
        assert self.queue is not None
        job = Job(request, asyncio.get_running_loop().create_future())
        await self.queue.put(job)
        return await job.done

    async def batcher(self) -> None:
        """Forever: take the first waiting job and, unless others are already waiting (they queued while
        the model was busy), wait batch_wait_ms for more; label them all (up to about a chunk of words) in
        one call on the model thread and hand each its labels."""
        assert self.queue is not None
        while True:
            jobs = [await self.queue.get()]
            if self.queue.empty() and self.opts.batch_wait_ms > 0:
                await asyncio.sleep(self.opts.batch_wait_ms / 1000)
            size = jobs[0].request.parsed.words
            while size < self.punct.chunk_words and not self.queue.empty():
                jobs.append(self.queue.get_nowait())
                size += jobs[-1].request.parsed.words
            self.batches += 1
            await self.run_batch(jobs)

    async def run_batch(self, jobs: list[Job]) -> None:
        """Label `jobs` together; if that fails, each alone, so one bad request fails alone."""
        loop = asyncio.get_running_loop()
        try:
            results = await loop.run_in_executor(self.pool, label_batch, self.punct, [j.request for j in jobs])
        except Exception as e:  # noqa: BLE001 (handed to the requests, which answer it)
            if len(jobs) > 1:
                for j in jobs:
                    await self.run_batch([j])
                return
            if not jobs[0].done.done():
                jobs[0].done.set_exception(e)
            return
        for j, r in zip(jobs, results):
            if not j.done.done():
                j.done.set_result(r)

    # --- routes
    async def punctuate(self, request: web.Request) -> web.Response:
        """POST /punctuate: the body punctuated, in the `format` asked for."""
        q = request.query
        unknown = sorted(set(q) - set(PARAMS))
        if unknown:
            raise PunctkitError(f"unknown parameter '{unknown[0]}' (known: {', '.join(PARAMS)})")
        keep = flag(q, "keep_input_marks", False)
        casing = self.punct.casing(flag(q, "capitalize", True), flag(q, "recase", False))
        if q.get("input_format"):
            get_format(q["input_format"], "units", "input format")
        if q.get("format"):
            get_format(q["format"], "emit", "output format", OUTPUT_FORMATS)
        body = await read_body(request, self.opts.max_body)
        as_json = request.content_type in JSON_TYPES or request.content_type.endswith("+json")
        charset = request.charset if request.charset and request.content_type != "application/json" else None
        parsed = await off_loop(len(body), parse_body, self.punct, body, q.get("input_format"), charset, as_json)
        fmt = output_format(q.get("format"), parsed)
        request["words"] = parsed.words
        labelled = await self.label(Request(parsed, keep, casing))
        text = await off_loop(len(body), render, self.punct, parsed, labelled, fmt)
        self.words += parsed.words
        return web.Response(text=text, content_type=MEDIA.get(fmt.name, "text/plain"), charset="utf-8")

    async def stream(self, request: web.Request) -> web.StreamResponse:
        """GET /stream (websocket): `punctuate --stream` over messages. Each text message is one input
        line (plain words, or JSON `{"text": ..., "final": true|false}`); each plain message or final is
        answered by one message with the words it committed (empty when none), partials by none;
        `{"eof": true}` is answered by the words still held, then the server closes. Query: lookahead,
        input_format (text|jsonl), flush_on_final, capitalize, recase. A message that cannot be read is answered
        by the words still held (when there are any), then a JSON message `{"error": ...}`; the next
        message starts a new context. Even a bug is told in a JSON message (never an HTTP answer written
        into the websocket), and then the server closes."""
        from punctkit.infer.stream import LineProtocol, PunctStream

        q = request.query
        unknown = sorted(set(q) - set(STREAM_PARAMS))
        if unknown:
            raise PunctkitError(f"unknown parameter '{unknown[0]}' (known: {', '.join(STREAM_PARAMS)})")
        casing = self.punct.casing(flag(q, "capitalize", True), flag(q, "recase", False))
        state = PunctStream(self.punct, parse_lookahead(q.get("lookahead")), casing)
        proto = LineProtocol(state, q.get("input_format"), flag(q, "flush_on_final", False), "message")
        ws = web.WebSocketResponse(max_msg_size=self.opts.max_body)
        await ws.prepare(request)
        try:
            await self.talk(ws, proto)
        except Exception as e:  # noqa: BLE001 (a bug: told to the client in the websocket's own terms)
            self.log(f"/stream: {internal_error(e)}")
            with contextlib.suppress(Exception):
                await ws.send_json({"error": internal_error(e)})
        request["words"] = state.arrived
        self.words += state.arrived
        await ws.close()
        return ws

    async def talk(self, ws: web.WebSocketResponse, proto: LineProtocol) -> None:
        """The messages of one /stream websocket, each answered through `proto` on the
        model's thread, until `{"eof": true}` or the client closes (`stream`)."""
        loop = asyncio.get_running_loop()
        async for msg in ws:
            try:
                if msg.type != WSMsgType.TEXT:
                    raise PunctkitError("send text messages (plain words or JSON lines)")
                if is_eof(msg.data):
                    rest = await loop.run_in_executor(self.pool, proto.end)
                    await ws.send_str(rest or "")
                    return
                out = await loop.run_in_executor(self.pool, proto.line, msg.data)
            except PunctkitError as e:
                rest = await loop.run_in_executor(self.pool, proto.end)  # the words held go out first
                if rest is not None:
                    await ws.send_str(rest)
                await ws.send_json({"error": str(e)})
                continue
            if out is not None:
                await ws.send_str(out)

    async def health(self, request: web.Request) -> web.Response:
        """GET /health: status, model, backend, uptime and counters."""
        return web.json_response({
            "status": "ok", "model": self.punct.card.get("name") or self.model_path.stem,
            "model_file": self.model_path.name, "backend": self.punct.backend,
            "uptime_s": round(time.time() - self.started, 3), "requests": self.requests, "words": self.words,
            "batches": self.batches, "torch_loaded": "torch" in sys.modules,
            "in_flight": self.admission.requests, "refused_busy": self.admission.refused})

    async def model(self, request: web.Request) -> web.Response:
        """GET /model: the package's card, naming no absolute path (`card_paths`: a card packed before
        they were kept out of cards may hold the packing machine's)."""
        return web.json_response(card_paths(self.punct.card))

    # --- every request: host check, rate limit, admission, JSON errors, one log line
    @web.middleware
    async def middleware(self, request: web.Request,
                         handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        t0 = time.perf_counter()
        try:
            resp = await self.guarded(request, handler)
        except PunctkitError as e:
            resp = error(400, str(e))
        except (HttpProcessingError, web.RequestPayloadError) as e:  # a body aiohttp's parser refused as it
            resp = error(400, framework_message(e, None, 400))        # was read (bad chunks, bad gzip)
            resp.force_close()
        except web.HTTPException as e:
            resp = error(e.status, e.text if e.status != 413 else
                         f"{REQUEST}: body over the limit of {self.opts.max_body} bytes (--max-body)",
                         {"Allow": e.headers["Allow"]} if "Allow" in e.headers else None)
        except Exception as e:  # noqa: BLE001 (a bug: answered, logged, the server goes on)
            resp = error(500, internal_error(e))
        self.requests += 1
        self.log(f"{request.remote} {request.method} {printable(request.path_qs)} {resp.status} "
                 f"{request.get('words', 0)} words {1000 * (time.perf_counter() - t0):.1f} ms")
        return resp

    async def guarded(self, request: web.Request,
                      handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        """The handler's answer, unless the Host is not accepted (403), the client is over its rate (429)
        or the server is full (503, before the body is read)."""
        refused = self.hosts.refusal(request)
        if refused:
            resp = error(403, refused)
            resp.force_close()
            return resp
        if self.limiter and request.path != "/health" and not self.limiter.allow(request.remote or "",
                                                                                 time.monotonic()):
            return error(429, f"rate limit: at most {self.opts.rate_limit:g} requests a second per client; "
                              f"retry later", {"Retry-After": "1"})
        if request.path not in ADMITTED:
            return await handler(request)
        if request.content_length is not None and request.content_length > self.opts.max_body:
            raise web.HTTPRequestEntityTooLarge(max_size=self.opts.max_body, actual_size=request.content_length)
        with self.admission.slot(self.admission.size(request)) as admitted:
            if not admitted:
                resp = error(503, f"server busy: {self.admission.requests} requests "
                                  f"({self.admission.bytes} body bytes) in flight, the limit of --max-queue "
                                  f"{self.opts.max_queue} / --max-queue-bytes {self.opts.max_queue_bytes}; "
                                  f"retry later", {"Retry-After": RETRY_AFTER})
                resp.force_close()  # the body is not read; the connection ends with the answer
                return resp
            return await handler(request)

    def log(self, line: str) -> None:
        """One line of the log, stamped (UTC)."""
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        with contextlib.suppress(OSError, ValueError):
            self.log_file.write(f"{stamp} {line}\n")
            self.log_file.flush()


async def off_loop(size: int, fn: Callable[..., Any], *args: Any) -> Any:
    """`fn(*args)` for a body of `size` bytes: in a thread for a large one, so that the event loop goes
    on serving; inline for a small one (a millisecond, cheaper than a thread's hand-offs)."""
    if size > INLINE_BYTES:
        return await asyncio.to_thread(fn, *args)
    return fn(*args)


def is_eof(text: str) -> bool:
    """Whether a /stream message is the end-of-talk message `{"eof": true}`."""
    if not text.lstrip().startswith("{"):
        return False
    with contextlib.suppress(ValueError):
        return parse_json(text) == EOF_MESSAGE
    return False


def internal_error(e: Exception) -> str:
    """The one-line answer to a bug (the server goes on): its type and the first line of its message."""
    first = (str(e).strip().splitlines() or [""])[0][:200]
    return f"internal error: {type(e).__name__}: {first}"


def flag(query: Any, name: str, default: bool) -> bool:
    """A yes/no query parameter."""
    v = query.get(name)
    if v is None or v == "":
        return default if v is None else True
    if v.lower() in TRUE:
        return True
    if v.lower() in FALSE:
        return False
    raise PunctkitError(f"parameter {name}: expected true or false, got '{v}'")


def error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    """A JSON error, `{"error": "one line"}`."""
    return web.json_response({"error": " ".join(message.split())}, status=status, headers=headers)


async def read_body(request: web.Request, limit: int) -> bytes:
    """The request body, refused (413) beyond `limit` bytes before it is read when its length is declared."""
    if request.content_length is not None and request.content_length > limit:
        raise web.HTTPRequestEntityTooLarge(max_size=limit, actual_size=request.content_length)
    return await request.read()  # aiohttp's client_max_size stops an undeclared (chunked) body at the limit


# ------------------------------------------------------------------ the app and the process

def routes(service: Service) -> list[web.RouteDef]:
    """The route table (`/stream` is the streaming websocket)."""
    return [
        web.post("/punctuate", service.punctuate),
        web.get("/health", service.health),
        web.get("/model", service.model),
        web.get("/stream", service.stream),
    ]


def make_app(service: Service) -> web.Application:
    """The aiohttp application of `service` (body limit, middleware, routes)."""
    app = web.Application(client_max_size=service.opts.max_body, middlewares=[service.middleware])
    app.add_routes(routes(service))
    return app


async def run_service(service: Service) -> None:
    """Listen until SIGTERM or SIGINT, then finish the requests in flight and stop."""
    loop = asyncio.get_running_loop()
    service.queue = asyncio.Queue()
    batcher = asyncio.create_task(service.batcher())
    runner = ServiceRunner(make_app(service), handler_class(service), access_log=None, handle_signals=False)
    await runner.setup()
    opts = service.opts
    try:
        await web.TCPSite(runner, opts.host, opts.port).start()
    except OSError as e:
        await runner.cleanup()
        raise PunctkitError(f"cannot listen on {opts.host}:{opts.port}: {e.strerror or e}; "
                            f"choose another --port or --host") from None
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    host, port = runner.addresses[0][:2]
    service.log(f"serve: listening on http://{host}:{port} ({service.model_path.name}, "
                f"{service.punct.backend} backend)")
    await stop.wait()
    service.log("serve: stopping")
    await runner.cleanup()  # waits for the requests in flight
    batcher.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await batcher
    service.log(f"serve: stopped after {service.requests} requests, {service.words} words")


def serve(model: str | Path, opts: ServeOptions, threads: int = 0, backend: str = "auto") -> None:
    """Load the model, then serve it until SIGTERM or SIGINT (`punctkit serve`)."""
    model = Path(model)
    if opts.log is not None:
        check_not_input(opts.log, [model])
    punct = load_model(model, threads=threads, backend=backend)
    with contextlib.ExitStack() as stack:
        log = sys.stderr if opts.log is None else stack.enter_context(open(opts.log, "a", encoding="utf-8"))
        service = Service(punct, opts, model, log)
        stack.callback(service.pool.shutdown)
        stack.enter_context(route_framework_logs(service))
        asyncio.run(run_service(service))
