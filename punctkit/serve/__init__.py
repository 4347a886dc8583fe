"""`punctkit serve`: punctuation as an HTTP service over a packed model (or an ensemble package).

    punctkit serve -m model.pkt [--host 127.0.0.1] [--port 8080]

Routes (`routes`, the route table): `GET /` (a page where a person pastes text or chooses a transcript
file and sees it punctuated, page.py), `POST /punctuate` (the body is plain text or any input `punctuate`
reads, found by the format registry's detection over the body; the output format is the
`format` query parameter), `GET /health`, `GET /model` (the package's card), `GET /stream` (a websocket:
`punctuate --stream`'s line protocol over messages, `Service.stream`).

Built on aiohttp: one well-kept library that is both the HTTP server and a websocket
server (the streaming endpoint is one more row in `routes`), with no separate ASGI
server to install, and whose asyncio client is the benchmark's load generator
(utils/serve_load.py). A plain `pip install punctkit` installs it (setup.cfg).

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

The files, one job each: `limits.py` (options, Host check, rate limit, admission), `bodies.py` (a body
read, labelled and written, no HTTP), `app.py` (the service, its routes and middleware, the websocket),
`process.py` (the server process, its connections and logs), `errors.py` (one-line JSON errors), `page.py`
(the page, page.html, and its Content-Security-Policy).
"""
from punctkit.serve.app import INLINE_BYTES, Service, is_eof, make_app, routes
from punctkit.serve.bodies import Parsed, Request, label_batch, output_format, parse_body, render
from punctkit.serve.errors import framework_message, printable
from punctkit.serve.limits import (
    Admission,
    HostCheck,
    RateLimit,
    ServeOptions,
    host_name,
    parse_hosts,
    parse_rate,
    parse_size,
)
from punctkit.serve.process import route_framework_logs, serve

__all__ = ["INLINE_BYTES", "Admission", "HostCheck", "Parsed", "RateLimit", "Request", "ServeOptions", "Service",
           "framework_message", "host_name", "is_eof", "label_batch", "make_app", "output_format", "parse_body",
           "parse_hosts", "parse_rate", "parse_size", "printable", "render", "route_framework_logs", "routes",
           "serve"]
