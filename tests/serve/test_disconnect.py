"""`punctkit serve` and clients who leave (issue 78, kind 6): a request whose client is gone is cancelled, its
queued work dropped, and it is logged as `client gone: ...` (never `internal error`); the server is idle again
at once and a SIGINT after is prompt. Real server processes on free ports of 127.0.0.1 with the shipped model
(`-m fast`, no torch), test2011's words as 3,000-word /stream messages and 50,000-word POST bodies."""
from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import signal
import socket
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from conftest import IWSLT
from serve_util import Server, post

aiohttp = pytest.importorskip("aiohttp", reason="the serve extra (aiohttp) is not installed")
pytest.importorskip("onnxruntime", reason="the onnx extra (onnxruntime) is not installed")
from punctkit import load_model  # noqa: E402
from punctkit.serve import Request, label_batch, parse_body  # noqa: E402
from punctkit.serve.bodies import Dropped  # noqa: E402

SMALL = b"so i think we should go now what do you think about it"


@pytest.fixture(scope="module")
def words() -> list[str]:
    """test2011's words (its first column)."""
    if not (IWSLT / "test2011").is_file():
        pytest.skip(f"IWSLT reference data not found at {IWSLT}")
    return [ln.split()[0] for ln in (IWSLT / "test2011").read_text().splitlines() if ln.strip()]


@pytest.fixture
def server(tmp_path):
    """A server of the shipped model with its own log; at the end its stderr must be empty and its log free
    of bugs and tracebacks."""
    started: list[Server] = []

    def start() -> Server:
        s = Server("fast", tmp_path / f"serve{len(started)}.log")
        started.append(s)
        return s

    yield start
    for s in started:
        rc, err = s.stop()
        assert rc == 0 and err == "", err
        log = s.log.read_text()
        assert "internal error" not in log and "Traceback" not in log, log
        assert all(re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ ", line) for line in log.splitlines()), log


def health(s: Server) -> dict[str, Any]:
    with urllib.request.urlopen(s.url + "/health", timeout=30) as r:
        return json.loads(r.read())


def wait_for(what: Any, timeout: float) -> Any:
    """`what()` once it is true, polled until `timeout` seconds (then its last value)."""
    deadline = time.time() + timeout
    while not (got := what()) and time.time() < deadline:
        time.sleep(0.05)
    return got


def gone_lines(s: Server, route: str) -> list[str]:
    return [ln for ln in s.log.read_text().splitlines() if f"client gone: {route} " in ln]


def body_of(words: list[str], n: int) -> bytes:
    """`n` words of test2011 (repeated), 100 words a line."""
    w = (words * (n // len(words) + 1))[:n]
    return "".join(" ".join(w[i:i + 100]) + "\n" for i in range(0, n, 100)).encode()


def leave_posts(s: Server, body: bytes, n: int) -> None:
    """`n` clients post `body` and close their sockets once the server is labelling, before any answer."""
    socks = []
    head = (f"POST /punctuate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()
    for _ in range(n):
        c = socket.create_connection(("127.0.0.1", s.port), timeout=30)
        c.sendall(head + body)
        socks.append(c)
    assert wait_for(lambda: health(s)["batches"] >= 1, 30)  # the model is at work on them
    for c in socks:
        c.settimeout(0)
        with pytest.raises(BlockingIOError):
            c.recv(1)  # no answer yet: its client leaves before it
        c.close()


# ------------------------------------------------------------------ /stream

def test_stream_client_gone(server, words):
    """A /stream client sends ten 3,000-word messages and drops its connection: one `client gone` line naming
    the messages dropped (not `internal error`), and the server is idle at once."""
    s = server()
    messages = [" ".join((words * 3)[k * 3000:(k + 1) * 3000]) for k in range(10)]

    async def talk_and_leave() -> None:
        async with aiohttp.ClientSession() as http:
            ws = await http.ws_connect(s.url.replace("http://", "ws://") + "/stream")
            for m in messages:
                await ws.send_str(m)
            await asyncio.sleep(0.2)
            ws._response.connection.transport.abort()  # gone without a close frame

    asyncio.run(talk_and_leave())
    lines = wait_for(lambda: gone_lines(s, "GET /stream"), 15)
    assert len(lines) == 1, s.log.read_text()
    assert re.search(r"\(127\.0\.0\.1\), [1-9]\d* messages? dropped", lines[0]), lines
    t0 = time.time()
    status, _, text = post(s.url + "/punctuate", SMALL)
    assert status == 200 and text.startswith("So I think"), text
    assert time.time() - t0 < 8  # the gone client's messages are not labelled (10 x 3,000 words before)
    assert health(s)["clients_gone"] == 1


def test_stream_normal_close_is_not_gone(server, words):
    """A client that ends its talk ({"eof": true}) is logged as a request (101), never as gone."""
    from serve_util import ws_replies

    s = server()
    replies, code = ws_replies(s.url, [" ".join(words[:50])])
    assert code == 1000 and len(replies) == 2
    assert wait_for(lambda: "GET /stream 101 50 words" in s.log.read_text(), 10), s.log.read_text()
    assert not gone_lines(s, "GET /stream") and health(s)["clients_gone"] == 0


# ------------------------------------------------------------------ POST /punctuate

def test_post_clients_gone(server, words):
    """Six 50,000-word POSTs whose clients close their sockets before the answer: each logged `client gone`
    (request dropped), none labelled to the end, and a small request after is answered within seconds."""
    s = server()
    leave_posts(s, body_of(words, 50_000), 6)
    lines = wait_for(lambda: len(gone_lines(s, "POST /punctuate")) == 6 and gone_lines(s, "POST /punctuate"), 15)
    assert lines and all("request dropped" in ln for ln in lines), s.log.read_text()
    t0 = time.time()
    status, _, text = post(s.url + "/punctuate", SMALL)
    assert status == 200 and text.startswith("So I think"), text
    assert time.time() - t0 < 8  # 300,000 words (over 20 s of labelling) were dropped, not labelled
    h = health(s)
    assert h["clients_gone"] == 6 and h["in_flight"] == 0 and h["words"] == len(SMALL.split())
    assert " 200 50000 words" not in s.log.read_text()


def test_sigint_after_clients_left(server, words):
    """SIGINT just after six large POSTs' clients left: the server stops within seconds (it does not label
    their words first), exit status 0."""
    s = server()
    leave_posts(s, body_of(words, 50_000), 6)
    time.sleep(0.2)
    t0 = time.time()
    s.proc.send_signal(signal.SIGINT)
    s.proc.wait(timeout=60)
    assert time.time() - t0 < 8 and s.proc.returncode == 0  # the fixture checks its stderr and log
    log = s.log.read_text()
    assert "serve: stopped" in log and "client gone: POST /punctuate" in log, log


# ------------------------------------------------------------------ label_batch stops for dropped requests

def test_label_batch_stops_when_dropped(words):
    """`label_batch` with `dropped` saying True stops before decoding (`Dropped`); saying False, the labels are
    those without it (an 8,000-word stream decoded 2,000 words at a time: in segments, each asked first)."""
    punct = dataclasses.replace(load_model("fast", threads=1), chunk_words=2000)
    request = Request(parse_body(punct, body_of(words, 8000)))
    asked: list[int] = []

    def never() -> bool:
        asked.append(1)
        return False

    with pytest.raises(Dropped):
        label_batch(punct, [request], lambda: True)
    got = label_batch(punct, [request], never)[0]
    assert len(asked) >= 4  # once a segment of chunk_words
    assert [d.labels for d in got] == [d.labels for d in label_batch(punct, [request])[0]]


def test_clients_gone_documented():
    doc = (Path(__file__).parents[2] / "docs" / "serving.md").read_text()
    assert "client gone" in doc and "clients_gone" in doc
