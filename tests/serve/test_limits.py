"""`punctkit serve` under hostile clients (issue 56, kind 8): malformed requests answered by one-line
JSON errors and logged in one line (never a traceback on stderr), floods of large bodies refused with
503 + Retry-After before they are read (the server's memory bounded), Host and Origin headers checked
against DNS rebinding (websocket upgrades too), and cards served without absolute paths.

Real server processes on free ports of 127.0.0.1 (`--port 0`), each stopped by SIGTERM at the end of its
test, over the small ONNX package of tests/fixtures/legacy (no training, no torch in the server)."""
from __future__ import annotations

import asyncio
import json
import logging
import re
import socket
import subprocess
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest

from punct_util import PK, one_line_message
from serve_util import Server

aiohttp = pytest.importorskip("aiohttp", reason="the serve extra (aiohttp) is not installed")
pytest.importorskip("onnxruntime", reason="the onnx extra (onnxruntime) is not installed")
from punctkit.files import PunctkitError  # noqa: E402
from punctkit.package import card_paths  # noqa: E402
from punctkit.serve import (  # noqa: E402
    Admission,
    HostCheck,
    framework_message,
    host_name,
    parse_hosts,
    printable,
    route_framework_logs,
)

PKT = Path(__file__).parents[1] / "fixtures" / "legacy" / "word_onnx.pkt"
WORDS = "so i think we should go now what do you think about it"
ABSOLUTE = re.compile(r"(?<![\w.:/])/(home|tmp|Users|root|work)/|[A-Za-z]:\\")


# ------------------------------------------------------------------ a server process

@pytest.fixture
def server(tmp_path):
    """A server with its own log, stopped at the end of the test; its stderr must stay empty."""
    started: list[Server] = []

    def start(*args: Any, pkt: Path = PKT) -> Server:
        s = Server(pkt, tmp_path / f"serve{len(started)}.log", *args)
        started.append(s)
        return s

    yield start
    for s in started:
        rc, err = s.stop()
        assert rc == 0 and err == "", err  # nothing on stderr: every line went to --log
        log = s.log.read_text()
        assert "Traceback" not in log and "\x1b" not in log
        assert all(re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ ", line) for line in log.splitlines()), log


def exchange(port: int, data: bytes, pause_after: int | None = None, timeout: float = 20) -> bytes:
    """Send raw bytes (a pause after the first `pause_after`, so the server reads them apart) and read
    the first answer: its head and Content-Length bytes (or until the server closes the connection)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        if pause_after is None:
            s.sendall(data)
        else:
            s.sendall(data[:pause_after])
            time.sleep(0.2)
            s.sendall(data[pause_after:])
        out = b""
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                chunk = s.recv(65536)
            except (ConnectionResetError, socket.timeout):
                break
            if not chunk:
                break
            out += chunk
            head, sep, body = out.partition(b"\r\n\r\n")
            length = re.search(rb"(?im)^content-length:\s*(\d+)\s*$", head)
            if sep and length and len(body) >= int(length.group(1)):
                break
        return out


def answer(raw: bytes) -> tuple[int, dict[str, str], bytes]:
    """(status, headers (lower-case names), body) of the first response in `raw`."""
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    assert lines[0].startswith("HTTP/1."), raw[:200]
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    if "content-length" in headers:
        body = body[:int(headers["content-length"])]
    return int(lines[0].split()[1]), headers, body


def json_error(headers: dict[str, str], body: bytes) -> str:
    """The message of a one-line JSON error body, checked by one_line_message."""
    assert headers["content-type"].startswith("application/json"), headers
    text = body.decode("utf-8")
    assert "\n" not in text.strip() and "Traceback" not in text, text
    return one_line_message(json.loads(text)["error"])


def request(method: str, path: str, headers: dict[str, str] | None = None, body: bytes = b"",
            host: str | None = "127.0.0.1") -> bytes:
    """A well-formed HTTP/1.1 request that closes its connection."""
    head = {**({"Host": host} if host is not None else {}), "Connection": "close",
            **({"Content-Length": str(len(body))} if body else {}), **(headers or {})}
    return (f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in head.items())).encode("latin-1") \
        + b"\r\n" + body


# ------------------------------------------------------------------ malformed requests

H = b"Host: 127.0.0.1\r\n"
MALFORMED: list[tuple[str, bytes, int | None, int, str]] = [  # (case, request, pause after, status, in error)
    ("not HTTP", b"GARBAGE\r\n\r\n", None, 400, "method"),
    ("binary request line", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", None, 400, "bad request"),
    ("bad version", b"GET /health HTTP/9.Z\r\n" + H + b"\r\n", None, 400, "bad request"),
    ("header without colon", b"GET /health HTTP/1.1\r\n" + H + b"Bad Header\r\n\r\n", None, 400, "header"),
    ("control character in a header", b"GET /health HTTP/1.1\r\n" + H + b"X-A: \x1b[2J\x07\r\n\r\n", None, 400,
     "bad request"),
    ("header line too long", b"GET /health HTTP/1.1\r\n" + H + b"X-A: " + b"a" * 20000 + b"\r\n\r\n", None, 400,
     "bad request"),
    ("too many headers", b"GET /health HTTP/1.1\r\n" + H + b"".join(b"X-%d: 1\r\n" % i for i in range(10000))
     + b"\r\n", None, 400, "bad request"),
    ("no Host in HTTP/1.1", b"GET /health HTTP/1.1\r\n\r\n", None, 400, "Host"),
    ("Content-Length not a number", b"POST /punctuate HTTP/1.1\r\n" + H + b"Content-Length: abc\r\n\r\n", None,
     400, "Content-Length"),
    ("two Content-Lengths", b"POST /punctuate HTTP/1.1\r\n" + H + b"Content-Length: 5\r\nContent-Length: 6\r\n\r\n"
     b"hello", None, 400, "Content-Length"),
    ("Content-Length and chunked", b"POST /punctuate HTTP/1.1\r\n" + H + b"Content-Length: 5\r\n"
     b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", None, 400, "Transfer-Encoding"),
    ("bad chunk size", b"POST /punctuate HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n"
     b"0\r\n\r\n", None, 400, "chunk"),
    ("bad chunk after a good one, read apart", b"POST /punctuate HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked"
     b"\r\n\r\n5\r\nhello\r\nzz\r\nhello\r\n0\r\n\r\n", 70, 400, "chunk"),
    ("chunk longer than its size", b"POST /punctuate HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n"
     b"2\r\nhello\r\n0\r\n\r\n", None, 400, "bad request"),
    ("unknown transfer coding", b"POST /punctuate HTTP/1.1\r\n" + H + b"Transfer-Encoding: gzip, zip\r\n\r\n"
     b"hello", None, 400, "Transfer-Encoding"),
    ("bad JSON", request("POST", "/punctuate", {"Content-Type": "application/json"}, b"{nope"), None, 400,
     "not valid JSON"),
    ("a charset that is no text encoding", request("POST", "/punctuate", {"Content-Type": "text/plain; "
     "charset=rot13"}, b"hello there"), None, 400, "not a text encoding"),
    ("an unknown charset", request("POST", "/punctuate", {"Content-Type": "text/plain; charset=klingon"},
                                   b"hello there"), None, 400, "klingon"),
    ("bytes not in the charset", request("POST", "/punctuate", {"Content-Type": "text/plain; charset=utf-8"},
                                         b"hello \xff\xfe there"), None, 400, "request:1"),
    ("a body that says it is gzip but is not", request("POST", "/punctuate", {"Content-Encoding": "gzip"},
                                                       b"hello there, not gzip at all"), None, 400, "bad request"),
    ("declared body over --max-body", request("POST", "/punctuate", {"Content-Length": "50000000"}), None, 413,
     "--max-body"),
    ("chunked body over --max-body", b"POST /punctuate HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n"
     b"Connection: close\r\n\r\n" + (b"FA0\r\n" + b"word " * 800 + b"\r\n") * 40 + b"0\r\n\r\n", None, 413,
     "--max-body"),
    ("unknown parameter", request("POST", "/punctuate?nope=1", body=b"hello"), None, 400, "unknown parameter"),
    ("unknown route", request("GET", "/nope/%1b[31m"), None, 404, "Not Found"),
    ("wrong method", request("DELETE", "/punctuate"), None, 405, "Method Not Allowed"),
    ("websocket route without an upgrade", request("GET", "/stream"), None, 400, "WebSocket"),
    ("bad websocket key", request("GET", "/stream", {"Upgrade": "websocket", "Connection": "Upgrade",
                                                     "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "x"}),
     None, 400, "Handshake error"),
]


def test_malformed_requests_are_one_line_json_errors_logged_in_one_line(server):
    """Every malformed request (aiohttp's own parser errors included, which never reach a route) is a
    one-line JSON error; the log has one escaped line for each, and stderr stays empty (the fixture)."""
    s = server("--max-body", "100KB")
    for case, data, pause, status, what in MALFORMED:
        got_status, headers, body = answer(exchange(s.port, data, pause))
        assert got_status == status, (case, got_status, body)
        message = json_error(headers, body)
        assert what.lower() in message.lower(), (case, message)
        assert not any(0x00 <= ord(c) < 0x20 for c in message), (case, message)
        if status == 405:
            assert headers["allow"] == "POST"
    time.sleep(0.3)
    log = s.log.read_text().splitlines()
    assert len([line for line in log if " 400 " in line]) >= len([m for m in MALFORMED if m[3] == 400])
    assert all("\x1b" not in line and "\x07" not in line for line in log)
    # still serving, on a new connection
    status, _, body = answer(exchange(s.port, request("POST", "/punctuate", body=WORDS.encode())))
    assert status == 200 and body.decode().strip().lower().replace(",", "").replace(".", "").replace("?", "") \
        .split() == WORDS.split()


# ------------------------------------------------------------------ admission control

def flood(url: str, clients: int, body: bytes) -> list[tuple[int, str | None, str]]:
    """`clients` POSTs of `body` at once: (status, Retry-After, body) of each."""
    async def one(s: Any) -> tuple[int, str | None, str]:
        async with s.post(url + "/punctuate", data=body) as r:
            return r.status, r.headers.get("Retry-After"), await r.text()

    async def run() -> list[tuple[int, str | None, str]]:
        timeout = aiohttp.ClientTimeout(total=240)
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), timeout=timeout) as s:
            return await asyncio.gather(*(one(s) for _ in range(clients)))

    return asyncio.run(run())


def test_a_flood_of_large_bodies_is_refused_with_503_and_memory_stays_bounded(server):
    """60 clients posting 1 MB each at once, with room for 2 in flight: the others get 503 with
    Retry-After before their body is read, and the server's peak memory grows by little (the 60
    bodies read and parsed at once took over 1 GB)."""
    s = server("--max-body", "2MB", "--max-queue", "2", "--max-queue-bytes", "100MB", "--batch-wait-ms", "0")
    line = (" " * 16).join(WORDS.split()) + "\n"
    body = (line * (1_000_000 // len(line) + 1))[:1_000_000].encode()
    assert answer(exchange(s.port, request("POST", "/punctuate", body=WORDS.encode())))[0] == 200  # warm
    before = s.peak_rss_kb()
    got = flood(s.url, 60, body)
    grown_mb = (s.peak_rss_kb() - before) / 1024
    statuses = [g[0] for g in got]
    assert set(statuses) <= {200, 503} and statuses.count(200) >= 1 and statuses.count(503) >= 30, statuses
    for status, retry, text in got:
        if status == 503:
            assert retry is not None and int(retry) >= 1
            assert json.loads(text)["error"].startswith("server busy:") and "\n" not in text
    assert grown_mb < 400, f"peak memory grew by {grown_mb:.0f} MB"
    health = json.loads(answer(exchange(s.port, request("GET", "/health")))[2])
    assert health["in_flight"] == 0 and health["refused_busy"] == statuses.count(503)
    assert answer(exchange(s.port, request("POST", "/punctuate", body=WORDS.encode())))[0] == 200  # recovered


def test_admission_counts_requests_and_bytes():
    """One request always passes; then requests past max_requests, or bytes past max_bytes, are refused;
    leaving gives the slot back. A chunked or compressed body counts as --max-body, a websocket as none."""
    adm = Admission(max_requests=3, max_bytes=1000, max_body=600)
    with adm.slot(600) as a:
        assert a and (adm.requests, adm.bytes) == (1, 600)
        with adm.slot(500) as b:
            assert not b and adm.refused == 1
        with adm.slot(400) as c, adm.slot(0) as d:
            assert c and d and (adm.requests, adm.bytes) == (3, 1000)
            with adm.slot(0) as e:
                assert not e  # past max_requests
    assert (adm.requests, adm.bytes, adm.refused) == (0, 0, 2)
    with adm.slot(10_000) as alone:
        assert alone  # nothing in flight: admitted whatever its size

    class Req:
        def __init__(self, path: str, length: int | None, headers: dict[str, str]):
            self.path, self.content_length, self.headers = path, length, headers

    assert adm.size(Req("/punctuate", 123, {})) == 123  # type: ignore[arg-type]
    assert adm.size(Req("/punctuate", None, {"Transfer-Encoding": "chunked"})) == 600  # type: ignore[arg-type]
    assert adm.size(Req("/punctuate", 10, {"Content-Encoding": "gzip"})) == 600  # type: ignore[arg-type]
    assert adm.size(Req("/stream", None, {})) == 0  # type: ignore[arg-type]


def test_admission_options_are_checked_in_one_line(tmp_path):
    for args, what in [(["--max-queue-bytes", "lots"], "--max-queue-bytes"),
                       (["--allow-host", "evil host/x"], "--allow-host"),
                       (["--allow-host", ""], "--allow-host")]:
        r = subprocess.run(PK + ["serve", "-m", str(PKT), "--port", "0", *args], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 1 and r.stderr.count("\n") == 1 and what in r.stderr, r.stderr
    r = subprocess.run(PK + ["serve", "-m", str(PKT), "--max-queue", "0"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "Traceback" not in r.stderr and "--max-queue" in r.stderr


# ------------------------------------------------------------------ Host and Origin (DNS rebinding)

ACCEPTED = ["localhost", "LOCALHOST", "localhost.", "localhost:8080", "127.0.0.1", "127.0.0.1:1", "127.0.0.2",
            "[::1]", "[::1]:8080", "my.lan", "My.Lan:8443", "10.1.2.3:80"]
REFUSED = ["evil.example", "evil.example:8080", "localhost.evil.example", "127.0.0.1.nip.io", "10.1.2.4",
           "my.lan.evil.example", "", "[::2]:80", "localhost:http", "local host"]


def test_host_header_is_checked_against_dns_rebinding(server):
    s = server("--allow-host", "my.lan", "--allow-host", "10.1.2.3")
    for host in ACCEPTED:
        status, _, body = answer(exchange(s.port, request("GET", "/health", host=host)))
        assert status == 200 and json.loads(body)["status"] == "ok", host
    for host in REFUSED:
        status, headers, body = answer(exchange(s.port, request("GET", "/health", host=host)))
        assert status in (403, 421, 400), host
        if status != 400:  # 400: aiohttp's parser refused the value itself
            assert "not allowed" in json_error(headers, body) and "--allow-host" in json_error(headers, body)
    status, headers, body = answer(exchange(s.port, request("POST", "/punctuate", body=WORDS.encode(),
                                                            host="evil.example")))
    assert status == 403 and "not allowed" in json_error(headers, body)
    status, _, body = answer(exchange(s.port, request("GET", "/model", host="rebound.evil.example")))
    assert status == 403 and b"inventory" not in body  # the card does not reach the page
    # a page of another site (Origin) is refused even with a loopback Host; the service's own are not
    for origin, ok in [("http://evil.example", False), ("null", False), ("http://localhost:3000", True),
                       ("http://127.0.0.1:9", True), ("https://my.lan", True)]:
        status, headers, body = answer(exchange(s.port, request("POST", "/punctuate", {"Origin": origin},
                                                                WORDS.encode())))
        assert status == (200 if ok else 403), (origin, body)
    # websocket upgrades too
    assert ws_status(s.url, {"Host": "evil.example"}) == 403
    assert ws_status(s.url, {"Origin": "http://evil.example"}) == 403
    assert ws_status(s.url, {"Host": f"localhost:{s.port}"}) == 200
    time.sleep(0.2)
    assert " 403 " in s.log.read_text()


def ws_status(url: str, headers: dict[str, str]) -> int:
    """200 when a /stream websocket opens with `headers` and answers `{"eof": true}`, else the status
    of the refused upgrade."""
    async def run() -> int:
        async with aiohttp.ClientSession() as http:
            try:
                async with http.ws_connect(url.replace("http://", "ws://") + "/stream", headers=headers) as ws:
                    await ws.send_str(json.dumps({"eof": True}))
                    reply = await asyncio.wait_for(ws.receive(), 30)
                    assert reply.type == aiohttp.WSMsgType.TEXT
                    return 200
            except aiohttp.WSServerHandshakeError as e:
                return e.status

    return asyncio.run(run())


def test_host_names_and_checks():
    assert host_name("LocalHost.:8080") == "localhost" and host_name("[::1]:80") == "::1"
    assert host_name("[0:0:0:0:0:0:0:1]") == "::1" and host_name("::1") == "::1"
    for bad in ("", "a b", "x:y", "[::1", "[::1]x", "a/b", "host:99999999"):
        assert host_name(bad) is None, bad
    check = HostCheck("127.0.0.1")
    assert all(check.accepts(host_name(h)) for h in ("localhost", "127.0.0.1:5", "[::1]", "127.9.9.9"))
    assert not any(check.accepts(host_name(h)) for h in ("evil.example", "0.0.0.0", "[::]"))
    assert HostCheck("0.0.0.0").accepts("0.0.0.0") and HostCheck("::").accepts("::")
    assert HostCheck("myhost.lan").accepts("myhost.lan")
    assert HostCheck("127.0.0.1", parse_hosts(["*"])).accepts("anything.example")
    assert parse_hosts(["Box.LAN", "[fe80::1]"]) == ("box.lan", "fe80::1")
    with pytest.raises(PunctkitError, match="--allow-host"):
        parse_hosts(["bad\x1bname"])


# ------------------------------------------------------------------ the card, the log, messages

def test_model_card_is_served_without_absolute_paths(server, tmp_path):
    """A package packed before absolute paths were kept out of cards still serves none of them."""
    pkt = tmp_path / "abs.pkt"
    with zipfile.ZipFile(PKT) as src, zipfile.ZipFile(pkt, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "punctkit.json":
                manifest = json.loads(data)
                manifest["card"]["training_data"] = "/home/alice/corpus/train (dev /home/alice/corpus/valid)"
                manifest["card"]["results"] = {"decode_test": {"f1": 50.0,
                                                               "source": "/home/alice/exp/x/decode_test/score.json"}}
                manifest["card"]["rebuild"] = "punctkit train --exp /home/alice/exp/x; see https://example.org/a/b"
                manifest["card"]["windows"] = "C:\\Users\\alice\\exp\\score.json"
                data = json.dumps(manifest).encode()
            dst.writestr(info.filename, data)
    s = server(pkt=pkt)
    status, headers, body = answer(exchange(s.port, request("GET", "/model")))
    card = json.loads(body)
    assert status == 200 and not ABSOLUTE.search(json.dumps(card)) and "alice" not in json.dumps(card), card
    assert card["results"]["decode_test"] == {"f1": 50.0, "source": "score.json"}
    assert card["training_data"] == "train (dev valid)"
    assert card["rebuild"] == "punctkit train --exp x; see https://example.org/a/b"
    assert card["windows"] == "score.json"


def test_card_paths_are_relative_at_pack_time(tmp_path, monkeypatch):
    """make_card writes paths relative to the working directory or the experiment's parent, and keeps
    only the name of one outside both."""
    from punctkit.package import make_card

    exp = tmp_path / "work" / "exp" / "x"
    (exp / "decode_test").mkdir(parents=True)
    (exp / "decode_test" / "score.json").write_text(json.dumps({"overall": {"precision": 1, "recall": 1, "f1": 1}}))
    (exp / "train.log").write_text(f"punctkit train: {tmp_path}/data/train (dev {tmp_path}/data/valid) -> {exp}\n")
    conf = {"model": {"type": "drnn_lwma"}, "frontend": {"kind": "word"}, "resolved": {"inventory": "4class"},
            "decode": {"window": 40}, "train": {"distill": {"probs": str(tmp_path / "teacher" / "probs")}}}
    monkeypatch.chdir(tmp_path / "work")
    card = make_card(exp, conf, exp / "model.avg.pt", [exp / "decode_test" / "score.json"], None,
                     {"rebuild": f"punctkit pack {exp} -o /opt/models/m.pkt"})
    text = json.dumps(card)
    assert str(tmp_path) not in text and "/opt/" not in text, text
    assert card["results"]["decode_test"]["source"] == "exp/x/decode_test/score.json"
    assert card["training_data"] == "train (dev valid)"
    assert card["distilled_from"]["probs"] == "probs"
    assert card["rebuild"] == "punctkit pack exp/x -o m.pkt"
    assert card_paths({"a": ["exp/x/score.json", 1, None, "1/2 and https://h/p"]}) == \
        {"a": ["exp/x/score.json", 1, None, "1/2 and https://h/p"]}


def test_framework_log_records_become_one_line_of_the_service_log():
    lines: list[str] = []

    class Sink:
        def log(self, line: str) -> None:
            lines.append(line)

    logger = logging.getLogger("aiohttp.server")
    handlers = list(logger.handlers)
    with route_framework_logs(Sink()):  # type: ignore[arg-type]
        try:
            raise ValueError("first line\nsecond line \x1b[31m")
        except ValueError:
            logger.exception("Error handling request from %s", "127.0.0.1")
        logging.getLogger("asyncio").error("Task exception was never retrieved\nmore")
        logger.debug("not logged")
    assert lines == ["aiohttp.server: Error handling request from 127.0.0.1: ValueError: first line",
                     "asyncio: Task exception was never retrieved more"]
    assert logger.handlers == handlers


def test_messages_are_one_printable_line():
    assert printable("a\x1b[2J\x07b\u202e\nc") == "a\\x1b[2J\\x07b\\u202e\\nc"
    assert framework_message(None, "Invalid header token:\n\n  b'Bad Header'\n       ^", 400) == \
        "bad request: Invalid header token: b'Bad Header'"
    assert framework_message(RuntimeError("boom\nmore"), None, 500) == "internal error: RuntimeError: boom"
