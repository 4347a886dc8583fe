"""`punctkit serve`: punctuation as an HTTP service over one packed model.

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
call over the utterances of every queued request (`label_batch`) in its worker thread,
never on the event loop; the labels are split back per request. Each utterance is its own
stream and its windows are decoded independently, so batching never changes a label
(a plain-text body is one stream, as `punctuate` reads it). Long inputs go through
`Punctuator.label_utterances`, which decodes in bounded chunks: no input comes back
unpunctuated. Errors are JSON, `{"error": "one line"}`: 400 for input that cannot be read,
413 for a body over `max_body`, 429 over the per-client rate limit (off by default).
With a package that has an ONNX graph, the `auto` backend runs it and torch is never
imported (`/health` says `torch_loaded`).
"""
from __future__ import annotations

import asyncio
import contextlib
import io
import json
import re
import signal
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Awaitable, Callable

from aiohttp import WSMsgType, web

from punctkit.data.formats import AsrUtterance, Format, TextInput, Utterance, detect_for, get_format, names, write
from punctkit.data.formats.base import OutputOptions
from punctkit.data.labels import default_substitution
from punctkit.data.tokenize import Casing
from punctkit.decode.lookahead import parse_lookahead
from punctkit.infer.ensemble import load_model
from punctkit.files import PunctkitError, check_not_input, decode_lines, parse_json
from punctkit.infer.pipeline import Fixed, UnitRenderer, input_fixed
from punctkit.punctuator import OUTPUT_FORMATS, Punctuator

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
Inputs = list[tuple[list[str], "Fixed | None"]]  # what the model labels: (words, fixed marks) per stream


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


_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmg]i?b?|b)?\s*", re.I)
_UNITS = {"": 1, "b": 1, "k": 10**3, "m": 10**6, "g": 10**9, "ki": 2**10, "mi": 2**20, "gi": 2**30}


def parse_size(spec: str) -> int:
    """Bytes of a size such as `1MB`, `512KB`, `64KiB` or `1000000` (K, M, G: powers of 1000; Ki, Mi, Gi: of 1024)."""
    m = _SIZE.fullmatch(spec)
    if not m or float(m.group(1)) <= 0:
        raise PunctkitError(f"--max-body: expected a size such as 1MB, 512KB or 1000000, got '{spec}'")
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


# ------------------------------------------------------------------ reading, labelling, writing (no HTTP)

@dataclass
class Parsed:
    """One request body read into utterances, and what the model labels for it."""

    reader: Format
    units: list[AsrUtterance]
    inputs: Inputs
    words: int


def model_inputs(units: list[AsrUtterance], one_stream: bool, keep: bool) -> Inputs:
    """The streams to label: each utterance, or (plain-text lines) all words as one stream."""
    if not one_stream:
        return [(u.words, input_fixed(u, keep)) for u in units]
    fixed = [f for u in units for f in (input_fixed(u, True) or [])] if keep else None
    return [([w for u in units for w in u.words], fixed)]


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


def parse_body(punct: Punctuator, body: bytes, input_format: str | None = None,
               keep: bool = False, charset: str | None = None, as_json: bool = False) -> Parsed:
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
    return Parsed(reader, units, model_inputs(units, reader.one_stream, keep), sum(len(u.words) for u in units))


def label_batch(punct: Punctuator, jobs: list[Inputs]) -> list[list[list[str]]]:
    """Labels of the streams of several requests from one `label_utterances` call, split back per request."""
    out = iter(punct.label_utterances([s for job in jobs for s in job]))
    return [[next(out) for _ in job] for job in jobs]


def shown_units(parsed: Parsed, labels: list[list[str]], keep: bool,
                casing: Casing) -> list[tuple[AsrUtterance, list[str], list[str]]]:
    """Each utterance with its labels and its words as shown, as `punctuate` shows them
    (infer/pipeline.py: UnitRenderer; plain-text lines: one stream cut back into lines, sentences
    and the input's case running on)."""
    render = UnitRenderer(casing, parsed.reader.one_stream, keep)
    flat = [lab for labs in labels for lab in labs] if parsed.reader.one_stream else None
    out, k = [], 0
    for i, u in enumerate(parsed.units):
        if flat is None:
            mine = labels[i]
        else:
            mine = flat[k:k + len(u.words)]
            k += len(u.words)
        out.append((u, mine, render.show(u, mine)))
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


def render(punct: Punctuator, parsed: Parsed, labels: list[list[str]], fmt: Format, keep: bool,
           capitalize: Casing) -> str:
    """The response body: the emit writer's lines, or a corpus format written by its writer to a text
    stream in memory."""
    units = shown_units(parsed, labels, keep, capitalize)
    opts = OutputOptions(punct.inventory, parsed.reader.one_stream, lexicon=punct.frontend.case_lexicon)
    if fmt.stream is not None:  # subtitles, timed JSON: writers over all units
        return "".join(line + "\n" for line in fmt.stream([(u, lab, shown, None) for u, lab, shown in units],
                                                          REQUEST, opts))
    if fmt.emit is not None:
        return "".join(line + "\n" for u, lab, shown in units
                       for line in fmt.emit(u, lab, shown, REQUEST, None, opts))
    utts = [Utterance(u.uttid, opts.corpus_words(u.words, lab), lab) for u, lab, _ in units if u.words]
    out = io.StringIO()
    write(utts, out, fmt.name, punct.inventory)
    return out.getvalue()


# ------------------------------------------------------------------ the service

@dataclass
class Job:
    """A request waiting for its labels."""

    inputs: Inputs
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

    punct: Punctuator
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

    def __post_init__(self) -> None:
        if self.opts.rate_limit:
            self.limiter = RateLimit(self.opts.rate_limit)

    # --- batching
    async def label(self, inputs: Inputs) -> list[list[str]]:
        """The labels of one request's streams, from a shared batch."""
        assert self.queue is not None
        job = Job(inputs, asyncio.get_running_loop().create_future())
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
            size = sum(len(w) for w, _ in jobs[0].inputs)
            while size < self.punct.chunk_words and not self.queue.empty():
                jobs.append(self.queue.get_nowait())
                size += sum(len(w) for w, _ in jobs[-1].inputs)
            self.batches += 1
            await self.run_batch(jobs)

    async def run_batch(self, jobs: list[Job]) -> None:
        """Label `jobs` together; if that fails, each alone, so one bad request fails alone."""
        loop = asyncio.get_running_loop()
        try:
            results = await loop.run_in_executor(self.pool, label_batch, self.punct, [j.inputs for j in jobs])
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
        capitalize = self.punct.casing(flag(q, "capitalize", True), flag(q, "recase", False))
        if q.get("input_format"):
            get_format(q["input_format"], "units", "input format")
        if q.get("format"):
            get_format(q["format"], "emit", "output format", OUTPUT_FORMATS)
        body = await read_body(request, self.opts.max_body)
        as_json = request.content_type in JSON_TYPES or request.content_type.endswith("+json")
        charset = request.charset if request.charset and request.content_type != "application/json" else None
        parsed = await off_loop(len(body), parse_body, self.punct, body, q.get("input_format"), keep, charset,
                                as_json)
        fmt = output_format(q.get("format"), parsed)
        request["words"] = parsed.words
        labels = await self.label(parsed.inputs)
        text = await off_loop(len(body), render, self.punct, parsed, labels, fmt, keep, capitalize)
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
            "batches": self.batches, "torch_loaded": "torch" in sys.modules})

    async def model(self, request: web.Request) -> web.Response:
        """GET /model: the package's card."""
        return web.json_response(self.punct.card)

    # --- every request: rate limit, JSON errors, one log line
    @web.middleware
    async def middleware(self, request: web.Request,
                         handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        t0 = time.perf_counter()
        try:
            if self.limiter and request.path != "/health" and not self.limiter.allow(request.remote or "",
                                                                                     time.monotonic()):
                resp: web.StreamResponse = error(429, f"rate limit: at most {self.opts.rate_limit:g} requests "
                                                      f"a second per client; retry later",
                                                 {"Retry-After": "1"})
            else:
                resp = await handler(request)
        except PunctkitError as e:
            resp = error(400, str(e))
        except web.HTTPException as e:
            resp = error(e.status, e.text if e.status != 413 else
                         f"{REQUEST}: body over the limit of {self.opts.max_body} bytes (--max-body)")
        except Exception as e:  # noqa: BLE001 (a bug: answered, logged, the server goes on)
            resp = error(500, internal_error(e))
        self.requests += 1
        self.log(f"{request.remote} {request.method} {request.path_qs} {resp.status} "
                 f"{request.get('words', 0)} words {1000 * (time.perf_counter() - t0):.1f} ms")
        return resp

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
    runner = web.AppRunner(make_app(service), access_log=None, handle_signals=False)
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
        asyncio.run(run_service(service))
