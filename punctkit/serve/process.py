"""The `punctkit serve` process: the model loaded and served until SIGTERM or SIGINT (`serve`,
`run_service`); aiohttp's connections handled so that the errors its own parser finds are JSON
one-liners too (`JsonRequestHandler`, `ServiceRunner`); aiohttp's and asyncio's log records written to
the service's log, one line each (`route_framework_logs`)."""
from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from pathlib import Path
from typing import Any, Iterator

from aiohttp import web
from aiohttp.http import HttpProcessingError
from aiohttp.web import RequestHandler

from punctkit.files import PunctkitError, check_not_input
from punctkit.infer.engine import load_model
from punctkit.serve.app import Service, make_app
from punctkit.serve.errors import error, framework_message, printable
from punctkit.serve.limits import ServeOptions

FRAMEWORK_LOGGERS = ("aiohttp", "asyncio")  # their records become one line each of the service's log


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


async def run_service(service: Service) -> None:
    """Listen until SIGTERM or SIGINT, then finish the requests in flight and stop."""
    loop = asyncio.get_running_loop()
    service.queue = asyncio.Queue()
    batcher = asyncio.create_task(service.batcher())
    # handler_cancellation: a request whose client leaves is cancelled, its queued work dropped (app.Service.left)
    runner = ServiceRunner(make_app(service), handler_class(service), access_log=None, handle_signals=False,
                           handler_cancellation=True)
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
        stack.callback(service.pool.shutdown, cancel_futures=True)  # work still queued at exit is dropped
        stack.enter_context(route_framework_logs(service))
        asyncio.run(run_service(service))
