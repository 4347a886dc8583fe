"""The aiohttp application of `punctkit serve`: the `Service` (the loaded model, the batch queue and the
counters), its routes (`routes`: the page GET /, POST /punctuate, GET /health, GET /model and the
websocket GET /stream), and the middleware every request goes through (host check, rate limit, admission, JSON
errors, one log line). Requests are batched: each is read into utterances (in a thread when large) and
queued, and the batcher labels every queued request in one call on the model's thread. A request whose
client leaves is cancelled (aiohttp's handler cancellation, `process.run_service`): its queued work is
dropped and it is logged as `client gone` (`Service.left`)."""
from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Awaitable, Callable

from aiohttp import WSMsgType, web
from aiohttp.http import HttpProcessingError

from punctkit.data.formats import get_format
from punctkit.decode.lookahead import parse_lookahead
from punctkit.files import PunctkitError, parse_json
from punctkit.infer.engine import Engine, Labelled
from punctkit.package import card_paths
from punctkit.punctuator import OUTPUT_FORMATS
from punctkit.serve.bodies import REQUEST, Dropped, Request, label_batch, output_format, parse_body, render
from punctkit.serve.errors import error, framework_message, internal_error, printable
from punctkit.serve.limits import ADMITTED, RETRY_AFTER, Admission, HostCheck, RateLimit, ServeOptions
from punctkit.serve.page import FORMAT_HEADER, build_page

if TYPE_CHECKING:
    from punctkit.infer.stream import LineProtocol

PARAMS = ("format", "input_format", "keep_input_marks", "capitalize", "recase")
STREAM_PARAMS = ("lookahead", "input_format", "flush_on_final", "capitalize", "recase")
EOF_MESSAGE = {"eof": True}  # a /stream client's last message: the words still held come back, then close
JSON_TYPES = ("application/json", "application/x-ndjson", "application/jsonl", "application/x-jsonlines")
MEDIA = {"jsonl": "application/x-ndjson", "timed-json": "application/x-ndjson", "srt": "application/x-subrip",
         "vtt": "text/vtt"}
INLINE_BYTES = 16_384  # bodies read and written on the event loop (larger: in a thread)
TRUE, FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


@dataclass
class Job:
    """A request waiting for its labels; `left` is set (for the model's thread to see) when its handler
    was cancelled, its client having left."""

    request: Request
    done: asyncio.Future
    left: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.done.add_done_callback(self._cancelled)

    def _cancelled(self, done: asyncio.Future) -> None:
        """`done`'s callback: a cancelled future (its handler cancelled) sets `left`."""
        if done.cancelled():
            self.left.set()


@dataclass
class Tally:
    """The messages of one /stream websocket: received, and answered (or needing no answer)."""

    received: int = 0
    answered: int = 0

    def dropped(self) -> str:
        """What was dropped when its client left, for the log."""
        n = self.received - self.answered
        return f"{n} message{'' if n == 1 else 's'} dropped"


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
    clients_gone: int = 0  # requests (and websockets) whose client left before its answer
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
        one call on the model thread and hand each its labels. Jobs whose client left are dropped."""
        assert self.queue is not None
        while True:
            job = await self.queue.get()
            if job.left.is_set():
                continue
            jobs = [job]
            if self.queue.empty() and self.opts.batch_wait_ms > 0:
                await asyncio.sleep(self.opts.batch_wait_ms / 1000)
            size = job.request.parsed.words
            while size < self.punct.chunk_words and not self.queue.empty():
                job = self.queue.get_nowait()
                if not job.left.is_set():
                    jobs.append(job)
                    size += job.request.parsed.words
            jobs = [j for j in jobs if not j.left.is_set()]  # some may have left while the batch waited
            if jobs:
                self.batches += 1
                await self.run_batch(jobs)

    async def run_batch(self, jobs: list[Job]) -> None:
        """Label `jobs` together; if that fails, each alone, so one bad request fails alone. Labelling
        stops at the next chunk of words once every job's client has left (`label_batch`: `Dropped`)."""
        loop = asyncio.get_running_loop()
        try:
            results = await loop.run_in_executor(self.pool, label_batch, self.punct, [j.request for j in jobs],
                                                 lambda: all(j.left.is_set() for j in jobs))
        except Dropped:
            return
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

    @property
    def name(self) -> str:
        """The model's name (its card's, else its file's), as /health and the page show it."""
        return self.punct.card.get("name") or self.model_path.stem

    # --- routes
    async def page(self, request: web.Request) -> web.Response:
        """GET /: the page where a person pastes text or chooses a transcript file and sees it punctuated
        (page.py), under its Content-Security-Policy."""
        page = build_page((self.name,), self.opts.max_body)
        return web.Response(text=page.html, content_type="text/html", charset="utf-8", headers=page.headers)

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
        return web.Response(text=text, content_type=MEDIA.get(fmt.name, "text/plain"), charset="utf-8",
                            headers={FORMAT_HEADER: fmt.name})

    async def stream(self, request: web.Request) -> web.StreamResponse:
        """GET /stream (websocket): `punctuate --stream` over messages. Each text message is one input
        line (plain words, or JSON `{"text": ..., "final": true|false}`); each plain message or final is
        answered by one message with the words it committed (empty when none), partials by none;
        `{"eof": true}` is answered by the words still held, then the server closes. Query: lookahead,
        input_format (text|jsonl), flush_on_final, capitalize, recase. A message that cannot be read is answered
        by the words still held (when there are any), then a JSON message `{"error": ...}`; the next
        message starts a new context. Even a bug is told in a JSON message (never an HTTP answer written
        into the websocket), and then the server closes. When the client leaves (its connection lost, or an
        answer that cannot be written), the messages not answered are dropped and the websocket is logged
        as `client gone` (`Service.left`)."""
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
        tally = Tally()
        try:
            await self.talk(ws, proto, tally)
        except ConnectionError:  # an answer could not be written: the client has gone
            request["gone"] = tally.dropped()
        except asyncio.CancelledError:  # aiohttp cancels the handler when the connection is lost
            if client_gone(request):
                request["gone"] = tally.dropped()
            raise
        except Exception as e:  # noqa: BLE001 (a bug: told to the client in the websocket's own terms)
            self.log(f"/stream: {internal_error(e)}")
            with contextlib.suppress(Exception):
                await ws.send_json({"error": internal_error(e)})
        finally:
            request["words"] = state.arrived
            self.words += state.arrived
        if "gone" not in request:
            await ws.close()
        return ws

    async def talk(self, ws: web.WebSocketResponse, proto: LineProtocol, tally: Tally) -> None:
        """The messages of one /stream websocket, each answered through `proto` on the
        model's thread, until `{"eof": true}` or the client closes (`stream`); counted in `tally`."""
        loop = asyncio.get_running_loop()
        async for msg in ws:
            tally.received += 1
            try:
                if msg.type != WSMsgType.TEXT:
                    raise PunctkitError("send text messages (plain words or JSON lines)")
                if is_eof(msg.data):
                    rest = await loop.run_in_executor(self.pool, proto.end)
                    await ws.send_str(rest or "")
                    tally.answered += 1
                    return
                out = await loop.run_in_executor(self.pool, proto.line, msg.data)
            except PunctkitError as e:
                rest = await loop.run_in_executor(self.pool, proto.end)  # the words held go out first
                if rest is not None:
                    await ws.send_str(rest)
                await ws.send_json({"error": str(e)})
                tally.answered += 1
                continue
            if out is not None:
                await ws.send_str(out)
            tally.answered += 1

    async def health(self, request: web.Request) -> web.Response:
        """GET /health: status, model, backend, uptime and counters."""
        return web.json_response({
            "status": "ok", "model": self.name,
            "model_file": self.model_path.name, "backend": self.punct.backend,
            "uptime_s": round(time.time() - self.started, 3), "requests": self.requests, "words": self.words,
            "batches": self.batches, "torch_loaded": "torch" in sys.modules,
            "in_flight": self.admission.requests, "refused_busy": self.admission.refused,
            "clients_gone": self.clients_gone})

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
        except asyncio.CancelledError:  # the client left (aiohttp cancels its handler), or the server stops
            if client_gone(request):
                self.left(request, t0)
            raise
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
            if client_gone(request):  # not a bug: the client left as its body was read (nobody to answer)
                request["gone"] = "request dropped"
        if "gone" in request:
            self.left(request, t0)
            return resp
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

    def left(self, request: web.Request, t0: float) -> None:
        """Count and log (one line, `client gone: ...`) a request whose client left before its answer:
        its work was dropped (`request["gone"]` says what, else the request)."""
        self.requests += 1
        self.clients_gone += 1
        self.log(f"client gone: {request.method} {printable(request.path_qs)} ({request.remote}), "
                 f"{request.get('gone', 'request dropped')} after {1000 * (time.perf_counter() - t0):.1f} ms "
                 f"({request.get('words', 0)} words)")

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


def client_gone(request: web.BaseRequest) -> bool:
    """Whether the request's client has gone: its connection was lost (aiohttp drops the transport)."""
    return request.transport is None


def is_eof(text: str) -> bool:
    """Whether a /stream message is the end-of-talk message `{"eof": true}`."""
    if not text.lstrip().startswith("{"):
        return False
    with contextlib.suppress(ValueError):
        return parse_json(text) == EOF_MESSAGE
    return False


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


async def read_body(request: web.Request, limit: int) -> bytes:
    """The request body, refused (413) beyond `limit` bytes before it is read when its length is declared."""
    if request.content_length is not None and request.content_length > limit:
        raise web.HTTPRequestEntityTooLarge(max_size=limit, actual_size=request.content_length)
    return await request.read()  # aiohttp's client_max_size stops an undeclared (chunked) body at the limit


def routes(service: Service) -> list[web.RouteDef]:
    """The route table (`/` is the page, page.py; `/stream` is the streaming websocket)."""
    return [
        web.get("/", service.page),
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
