"""`punctkit serve`: a real server process on a free port of 127.0.0.1, real HTTP requests, one tiny
DRNN-LWMA packed with an ONNX graph (so the server runs without torch)."""
from __future__ import annotations

import asyncio
import builtins
import codecs
import dataclasses
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from punct_util import PK
from serve_util import Server, post, ws_replies

aiohttp = pytest.importorskip("aiohttp", reason="the serve extra (aiohttp) is not installed")
pytest.importorskip("onnxruntime", reason="the onnx extra (onnxruntime) is not installed")
from label_util import words_labels
from punctkit import Engine, load_model  # noqa: E402
from punctkit import serve as serve_module  # noqa: E402
from punctkit.data.formats import read  # noqa: E402
from punctkit.files import PunctkitError  # noqa: E402
from punctkit.punctuator import punctuate_file  # noqa: E402
from punctkit.serve import Parsed, RateLimit, Request, label_batch, parse_rate, parse_size  # noqa: E402

MAX_BODY = 64_000


# ------------------------------------------------------------------ fixtures: a model, a server

@pytest.fixture(scope="module")
def packed(tiny_package, tmp_path_factory) -> dict[str, Any]:
    """The run's tiny DRNN-LWMA packed with --onnx (conftest.tiny_package), copied here; test2011 utterances."""
    d = tiny_package.copy_to(tmp_path_factory.mktemp("serve"))
    utts, _ = read(d / "test")
    return {"dir": d, "pkt": d / "m.pkt", "utts": [u.words for u in utts]}


@pytest.fixture(scope="module")
def server(packed):
    (packed["dir"] / "tmp").mkdir()
    s = Server(packed["pkt"], packed["dir"] / "serve.log", "--max-body", MAX_BODY, "--batch-wait-ms", 50,
               tmp=packed["dir"] / "tmp")
    yield s
    s.stop()


def get(url: str) -> tuple[int, Any]:
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.status, json.loads(r.read())


def timed_jsonl(uttid: str, words: list[str], t0: float = 0.0) -> str:
    """A JSON line with word times, as ASR services write it."""
    items = [{"word": w, "start": round(t0 + 0.3 * k, 2), "end": round(t0 + 0.3 * k + 0.25, 2)}
             for k, w in enumerate(words)]
    return json.dumps({"id": uttid, "words": items}) + "\n"


def expected(punct: Engine, tmp: Path, name: str, body: str, fmt: str = "readable") -> str:
    """What `punctuate` writes for `body` in `fmt`."""
    (tmp / name).write_text(body)
    punctuate_file(punct, tmp / name, tmp / f"{name}.out", fmt=fmt)
    return (tmp / f"{name}.out").read_text()


def text_body(utts: list[list[str]], k: int, lines: int = 3) -> str:
    """`lines` lines of test2011 words, from utterance k on."""
    return "".join(" ".join(u) + "\n" for u in utts[k:k + lines])


# ------------------------------------------------------------------ requests

def test_plain_text_equals_punctuate(server, packed, tiny_engine, tmp_path):
    """Lines of plain text are one stream, punctuated as `punctuate` does; the model does predict marks."""
    body = text_body(packed["utts"], 0, 4)
    status, ctype, out = post(server.url + "/punctuate", body.encode())
    assert (status, ctype) == (200, "text/plain")
    assert out == expected(tiny_engine, tmp_path, "a.txt", body)
    assert any(c in out for c in ",.?")
    assert out.split() != body.split()  # marks or case changed ...
    assert [w.strip(",.?").lower() for w in out.split()] == body.split()  # ... never the words
    marked = "So, if we keep these marks: what happens? " + body
    answers = []
    for query, keep in [("?keep_input_marks=true&capitalize=false", True), ("", False)]:
        (tmp_path / "m.txt").write_text(marked)
        punctuate_file(tiny_engine, tmp_path / "m.txt", tmp_path / "m.out", keep_input_marks=keep, capitalize=not keep)
        answers.append(post(server.url + "/punctuate" + query, marked.encode())[2])
        assert answers[-1] == (tmp_path / "m.out").read_text()
    # kept marks, and capitalize=false: every word as it came
    assert answers[0] != answers[1] and answers[0].startswith("So, if we keep these marks: what happens? i 'm")


def test_large_body_read_off_the_event_loop_equals_punctuate(server, packed, tiny_engine, tmp_path):
    """A body over INLINE_BYTES is read and written in a thread; the answer is still punctuate's."""
    from punctkit.serve import INLINE_BYTES

    body = text_body(packed["utts"], 0, 30) * 2
    assert INLINE_BYTES < len(body.encode()) < MAX_BODY
    status, _, out = post(server.url + "/punctuate", body.encode())
    assert status == 200 and out == expected(tiny_engine, tmp_path, "big.txt", body)
    assert len(out.split()) == len(body.split())


def test_ctm_body_is_detected_and_answered_as_punctuate_does(server, packed, tiny_engine, tmp_path):
    words = packed["utts"][7][:60]
    body = "".join(f"spk1_utt1 1 {0.3 * k:.2f} 0.25 {w} 0.9\n" for k, w in enumerate(words))
    status, _, out = post(server.url + "/punctuate?format=ctm", body.encode())
    assert status == 200 and out == expected(tiny_engine, tmp_path, "a.ctm", body, "ctm")
    assert [ln.split()[:4] for ln in out.splitlines()] == [ln.split()[:4] for ln in body.splitlines()]


def test_stm_body_is_answered_as_punctuate_does_and_a_batch_keeps_requests_apart(server, packed, tiny_engine, tmp_path):
    """An stm's segments are one stream a recording; two requests of the same recording in one batch are
    two streams, labelled as each is alone."""
    words = [w for u in packed["utts"][:6] for w in u][:80]
    body = "".join(f"talk 1 spk {2.5 * k:.2f} {2.5 * (k + 1):.2f} <o> {' '.join(words[20 * k:20 * (k + 1)])}\n"
                   for k in range(4))
    status, _, out = post(server.url + "/punctuate?format=stm", body.encode())
    assert status == 200 and out == expected(tiny_engine, tmp_path, "a.stm", body, "stm")
    assert [ln.split()[:6] for ln in out.splitlines()] == [ln.split()[:6] for ln in body.splitlines()]
    alone = label_batch(tiny_engine, [Request(serve_module.parse_body(tiny_engine, body.encode()))])[0]
    both = label_batch(tiny_engine, [Request(serve_module.parse_body(tiny_engine, body.encode())) for _ in range(2)])
    assert [d.labels for d in both[0]] == [d.labels for d in both[1]] == [d.labels for d in alone]


def test_timed_jsonl_answers_timed_json_keeping_every_word_and_time(server, packed, tiny_engine, tmp_path):
    body = timed_jsonl("utt1", packed["utts"][5]) + timed_jsonl("utt2", packed["utts"][6], 40.0)
    status, ctype, out = post(server.url + "/punctuate", body.encode(), "application/json")
    assert status == 200 and ctype in ("application/json", "application/x-ndjson")
    got: list[tuple[str, float, float]] = []

    def words(x: Any) -> None:  # every word object, in order, wherever the format puts it
        if isinstance(x, dict):
            if "word" in x and "start" in x:
                got.append((x["word"], x["start"], x["end"]))
            for v in x.values():
                words(v)
        elif isinstance(x, list):
            for v in x:
                words(v)

    for line in out.splitlines():
        words(json.loads(line))
    want = [(w["word"], w["start"], w["end"]) for line in body.splitlines() for w in json.loads(line)["words"]]
    assert got == want
    # any output format by name; `uttid text` lines for readable
    status, _, readable = post(server.url + "/punctuate?format=readable", body.encode(), "application/json")
    assert status == 200 and readable == expected(tiny_engine, tmp_path, "b.jsonl", body)
    assert [ln.split()[0] for ln in readable.splitlines()] == ["utt1", "utt2"]


def test_charsets_are_read_as_every_input_is(server):
    """A body is decoded by punctkit's one decoder, in the request's charset: a text encoding (not base64 or
    rot13), utf-16 big-endian without a BOM (RFC 2781); errors name the request's line and its charset."""
    words = "so i think the café is good"
    for body, ctype in [(words.encode("latin-1"), "text/plain; charset=latin-1"),
                        (words.encode("utf-16-be"), "text/plain; charset=utf-16"),
                        (words.encode("utf-16"), "text/plain; charset=UTF-16"),  # BOM: its byte order
                        (words.encode("utf-32-be"), "text/plain; charset=utf-32"),
                        (codecs.BOM_UTF8 + words.encode(), "text/plain"),
                        (codecs.BOM_UTF8 + json.dumps({"id": "u1", "text": words}).encode(),
                         "application/json; charset=latin-1")]:  # JSON is UTF-8 (or UTF-16/32 by its BOM)
        status, _, out = post(server.url + "/punctuate?format=readable", body, ctype)
        got = out.split()[1:] if ctype.startswith("application/json") else out.split()  # after the id
        assert status == 200 and [w.strip(",.?").lower() for w in got] == words.split(), (ctype, out)
    for body, ctype, says in [
            (b"so\ni think caf\xe9", "text/plain", "request:2: byte 0xe9 at offset 14 is not UTF-8; name its charset "
                                                   "(e.g. charset=latin-1) or send UTF-8"),
            (b"so\n\x81\x20", "text/plain; charset=shift_jis", "request:2: byte 0x81 at offset 3 is not shift_jis;"),
            (b"c28gaQ==", "text/plain; charset=base64", "charset 'base64' is not a text encoding"),
            (b"fb v guvax", "text/plain; charset=rot13", "charset 'rot13' is not a text encoding"),
            (b"so", "text/plain; charset=klingon", "unknown encoding 'klingon' (charset;")]:
        status, ctype_out, out = post(server.url + "/punctuate", body, ctype)
        assert (status, ctype_out) == (400, "application/json"), out
        assert json.loads(out)["error"].startswith(says), out


def test_deep_json_is_a_json_error(server):
    """JSON nested thousands deep overflows json's stack (it was an HTTP 500): one line naming the line."""
    deep = '{"id": "u1", "words": ' + "[" * 5000 + "]" * 5000 + "}\n"
    for ctype, says in [("application/json", "request:2: not valid JSON (arrays and objects nested more than 100 "
                                             "deep at column 122)"),
                        ("text/plain", "request:2: not valid JSON (arrays and objects nested more than 100 deep, "
                                       "column 122)")]:  # detected as JSON lines, whose reader names it
        status, _, out = post(server.url + "/punctuate", ('{"id": "u0", "text": "so"}\n' + deep).encode(), ctype)
        assert status == 400 and json.loads(out)["error"].startswith(says), out


def test_bad_input_is_a_json_error(server):
    for body, ctype, where in [(b'{"id": "u1", "words": [\n', "application/json", "request:1: not valid JSON"),
                               (b'{"id": "u1"}\n{"id": \n', "application/x-ndjson", "request:2: not valid JSON"),
                               (b'{"id": "u1", "words": 3}\n', "application/json", "request:1 (utterance u1)"),
                               (b"so\tO\nwe\tCOMMA\ngo\tPERIOD\n", "text/plain", "request: looks like twocol")]:
        status, ctype_out, out = post(server.url + "/punctuate", body, ctype)
        assert (status, ctype_out) == (400, "application/json"), out
        err = json.loads(out)["error"]
        assert err.startswith(where) and "\n" not in err and "/tmp" not in err
    for query, what in [("?format=nope", "unknown output format 'nope'"), ("?fromat=jsonl", "unknown parameter"),
                        ("?format=ctm", "needs word times")]:
        status, _, out = post(server.url + "/punctuate" + query, b"hello there")
        assert status == 400 and what in json.loads(out)["error"]


def test_ids_of_lines_without_ids_name_the_request_the_same_on_every_request(server):
    """kaldi_text and jsonl answers name a body's lines that have no id `request-LINE`, as punctuate names
    stdin's `stdin-LINE` (never after a temporary file): the same ids for the same body every time."""
    body = b"so i think we should go now\n\nwhat do you think about it\n"
    answers = {fmt: [post(server.url + f"/punctuate?format={fmt}", body) for _ in range(2)]
               for fmt in ("kaldi_text", "jsonl")}
    for fmt, (first, again) in answers.items():
        assert first[0] == 200 and first == again, fmt
    kaldi, jsonl = answers["kaldi_text"][0][2], answers["jsonl"][0][2]
    assert [ln.split()[0] for ln in kaldi.splitlines()] == ["request-000001", "request-000003"]  # words: lines 1, 3
    assert [json.loads(ln)["id"] for ln in jsonl.splitlines()] == ["request-000001", "request-000002",
                                                                    "request-000003"]
    body = b'{"text": "so i think we should go"}\n{"id": "u7", "text": "what do you think"}\n'
    status, _, out = post(server.url + "/punctuate?format=kaldi_text", body, "application/json")
    assert status == 200 and [ln.split()[0] for ln in out.splitlines()] == ["request-000001", "u7"]


def test_serve_makes_no_file(server, packed):
    """Bodies are read and answers written in memory: nothing appears in the server's TMPDIR while it
    answers every kind of request (onnxruntime's `.ses`, written as the model loads, is all it holds),
    and the service has no work directory."""
    before = sorted(os.listdir(server.tmp))
    timed = timed_jsonl("utt1", packed["utts"][5]).encode()
    plain = text_body(packed["utts"], 0, 2).encode()
    for query, body, ctype in [("", plain, "text/plain"), ("?format=kaldi_text", plain, "text/plain"),
                               ("?format=text", plain, "text/plain"), ("?format=punctuator2", plain, "text/plain"),
                               ("?format=jsonl", plain, "text/plain"), ("?format=srt", timed, "application/json"),
                               ("?format=ctm", timed, "application/json"), ("", timed, "application/json")]:
        assert post(server.url + "/punctuate" + query, body, ctype)[0] == 200, query
    assert post(server.url + "/punctuate", b'{"id": "u1", "words": 3}\n', "application/json")[0] == 400
    after = sorted(os.listdir(server.tmp))
    assert after == before and [n for n in after if n != ".ses"] == []
    assert "workdir" not in {f.name for f in dataclasses.fields(serve_module.Service)}


def test_bodies_are_read_and_answers_written_without_opening_a_file(tiny_engine, packed, monkeypatch):
    """In process: reading a body and writing it in every output format opens and makes no file."""
    from punctkit.punctuator import OUTPUT_FORMATS

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"serve opened or made a file: {args[:1]}")

    for mod, name in [(builtins, "open"), (io, "open"), (os, "open"), (tempfile, "mkstemp"), (tempfile, "mkdtemp"),
                      (tempfile, "NamedTemporaryFile"), (tempfile, "TemporaryFile")]:
        monkeypatch.setattr(mod, name, refuse)
    written = set()
    for body, as_json in [(text_body(packed["utts"], 0, 2).encode(), False),
                          (timed_jsonl("utt1", packed["utts"][5]).encode(), True)]:
        parsed = serve_module.parse_body(tiny_engine, body, as_json=as_json)
        labelled = label_batch(tiny_engine, [Request(parsed)])[0]
        for name in OUTPUT_FORMATS:
            try:
                fmt = serve_module.output_format(name, parsed)
            except PunctkitError:  # a directory; or needs times the plain text has not
                continue
            assert serve_module.render(tiny_engine, parsed, labelled, fmt), name
            written.add(name)
    assert {"readable", "kaldi_text", "text", "punctuator2", "twocol", "jsonl", "srt", "timed-json"} <= written


def test_oversized_body_is_413(server):
    big = b"word " * (MAX_BODY // 5 + 10)
    status, ctype, out = post(server.url + "/punctuate", big)
    assert (status, ctype) == (413, "application/json") and "limit" in json.loads(out)["error"]

    async def chunked() -> tuple[int, str]:  # no Content-Length: stopped while read
        async def gen():
            for _ in range(MAX_BODY // 1000 + 2):
                yield b"word " * 200
        async with aiohttp.ClientSession() as s:
            async with s.post(server.url + "/punctuate", data=gen()) as r:
                return r.status, await r.text()

    status, out = asyncio.run(chunked())
    assert status == 413 and "error" in json.loads(out)
    assert post(server.url + "/punctuate", b"so i think we should go now")[0] == 200  # still serving


def test_16_concurrent_clients_get_punctuates_labels_in_shared_batches(server, packed, tiny_engine, tmp_path):
    """Requests batched into shared forward passes answer exactly what `punctuate` writes for each alone."""
    utts = packed["utts"]  # 100 words each: requests of 2 lines or 2 utterances of 50 words
    halves = [(u[:50], u[50:]) for u in utts[:16]]
    bodies = [(f"{' '.join(a)}\n{' '.join(b)}\n", "text/plain", "readable") if k % 2 else
              (timed_jsonl(f"u{k}a", a) + timed_jsonl(f"u{k}b", b), "application/json", "jsonl")
              for k, (a, b) in enumerate(halves)]
    want = [expected(tiny_engine, tmp_path, f"c{k}", body, fmt) for k, (body, _, fmt) in enumerate(bodies)]
    _, before = get(server.url + "/health")

    async def client(s: Any, body: str, ctype: str, fmt: str) -> tuple[int, str]:
        async with s.post(server.url + f"/punctuate?format={fmt}", data=body.encode(),
                          headers={"Content-Type": ctype}) as r:
            return r.status, await r.text()

    async def run() -> list[tuple[int, str]]:
        async with aiohttp.ClientSession() as s:
            return await asyncio.gather(*(client(s, *b) for b in bodies))

    got = asyncio.run(run())
    assert [g[0] for g in got] == [200] * 16
    assert [g[1] for g in got] == want
    assert sum(w.count(",") + w.count(".") + w.count("?") for w in want) > 10
    _, after = get(server.url + "/health")
    assert after["requests"] - before["requests"] >= 16
    assert after["batches"] - before["batches"] < 16  # some requests shared a forward pass


def ws_session(url: str, messages: list[str], query: str = "") -> list[Any]:
    """The replies of the /stream websocket to `messages` (each answered or not), then to `{"eof": true}`:
    text replies as strings, JSON errors as dicts."""
    import aiohttp

    async def run() -> list[Any]:
        got: list[Any] = []
        async with aiohttp.ClientSession() as http:
            async with http.ws_connect(url.replace("http://", "ws://") + "/stream" + query) as ws:
                for m in messages + [json.dumps({"eof": True})]:
                    await ws.send_str(m)
                    if m.lstrip().startswith('{"text"') and '"final": false' in m:
                        continue  # partials are not answered
                    reply = await asyncio.wait_for(ws.receive(), 60)
                    got.append(json.loads(reply.data) if reply.data.startswith("{") else reply.data)
        return got

    return asyncio.run(run())


def test_stream_websocket_equals_punctuate_stream(server, packed, tiny_engine):
    """The websocket answers each message as `punctuate --stream` answers each line: same committed
    words, look-ahead respected, the rest at eof; partials unanswered; bad JSON is a JSON error."""
    from punctkit.infer.stream import PunctStream, stream_lines

    words = [w for u in packed["utts"][:3] for w in u][:120]
    lines = [" ".join(words[k:k + 7]) for k in range(0, len(words), 7)]
    want = list(stream_lines(PunctStream(tiny_engine, 2), lines + []))
    got = ws_session(server.url, lines, "?lookahead=2")
    assert got == want
    assert " ".join(" ".join(got).split()).lower().replace(",", "").replace(".", "").replace("?", "").split() \
        == [w.lower() for w in words]
    assert got[0] == " ".join(s for _, _, s in PunctStream(tiny_engine, 2).feed(lines[0]))  # 5 of 7 words committed
    msgs = [json.dumps({"text": " ".join(words[:10]), "final": False}),
            json.dumps({"text": " ".join(words[:10]), "final": True}), "{not json"]
    got = ws_session(server.url, msgs, "?lookahead=0")
    assert isinstance(got[1], dict) and "not JSON" in got[1]["error"]
    assert got[2] == ""  # look-ahead 0: the final committed every word, nothing is held at eof
    assert got[0] == " ".join(s for _, _, s in PunctStream(tiny_engine, 0).run([words[:10]]))


def test_stream_websocket_sends_the_words_held_then_the_error(server, packed, tiny_engine):
    """A message that cannot be read (JSON nested thousands deep: json alone overflows the stack, which
    was an HTTP 500 written into the open websocket; a binary message) is answered by the words still
    held, then a JSON error; the talk goes on in a new context and ends normally."""
    from punctkit.infer.stream import PunctStream

    words = [w for u in packed["utts"][:1] for w in u][:20]
    final = json.dumps({"text": " ".join(words[:10]), "final": True})
    deep = '{"text": ' + "[" * 5000 + "]" * 5000 + "}"
    got, code = ws_replies(server.url, [final, deep, b"\x00binary", final], "?input_format=jsonl")
    held = " ".join(s for _, _, s in PunctStream(tiny_engine).run([words[:10]]))
    assert got[:2] == ["", held]  # unlimited look-ahead: the final committed nothing; held: all 10 words
    assert got[2]["error"].startswith("message line 2: not JSON (arrays and objects nested more than 100 deep")
    assert got[3] == {"error": "send text messages (plain words or JSON lines)"}  # nothing held then
    assert got[4:] == ["", held] and code == 1000  # a new context: the same words, the same answer
    assert get(server.url + "/health")[0] == 200


def test_health_and_model(server, tiny_engine):
    status, health = get(server.url + "/health")
    assert status == 200
    assert health["status"] == "ok" and health["backend"] == "onnx" and health["model_file"] == "m.pkt"
    assert health["torch_loaded"] is False  # the ONNX backend: the server process never imported torch
    assert health["uptime_s"] > 0 and health["requests"] >= 1
    status, card = get(server.url + "/model")
    assert status == 200 and card == tiny_engine.card and card["onnx"] == "float32"


def test_log_has_one_line_per_request(server):
    n = len(server.log.read_text().splitlines())
    post(server.url + "/punctuate", b"hello there how are you")
    post(server.url + "/punctuate?format=nope", b"x")
    time.sleep(0.2)
    new = server.log.read_text().splitlines()[n:]
    assert len(new) == 2
    assert new[0].split()[2:6] == ["POST", "/punctuate", "200", "5"] and new[0].endswith(" ms")
    assert new[1].split()[2:6] == ["POST", "/punctuate?format=nope", "400", "0"]


# ------------------------------------------------------------------ limits and the process

def test_rate_limit_answers_429_and_sigterm_stops_cleanly(packed, tmp_path):
    log = tmp_path / "serve.log"
    log.write_text("a line written before\n")  # the log is appended to, never replaced
    s = Server(packed["pkt"], log, "--rate-limit", "1/s")
    try:
        codes = [post(s.url + "/punctuate", b"hello there")[0] for _ in range(4)]
        assert codes[0] == 200 and 429 in codes
        status, ctype, out = post(s.url + "/punctuate", b"hello there")
        if status == 429:
            assert ctype == "application/json" and "rate limit" in json.loads(out)["error"]
        assert get(s.url + "/health")[0] == 200  # health checks are not limited
    finally:
        rc, err = s.stop()
    assert rc == 0, err
    text = log.read_text()
    assert text.startswith("a line written before\n")
    assert "serve: stopped after" in text and "Traceback" not in err


def test_start_errors_are_one_line(server, packed, tmp_path):
    port = server.url.rsplit(":", 1)[1]
    for args, what in [(["-m", packed["pkt"], "--port", port], "cannot listen on 127.0.0.1:"),
                       (["-m", packed["pkt"], "--max-body", "lots"], "--max-body"),
                       (["-m", packed["pkt"], "--log", packed["pkt"]], "is also an input")]:
        r = subprocess.run(PK + ["serve", *map(str, args)], capture_output=True, text=True, timeout=60)
        assert r.returncode == 1 and r.stderr.count("\n") == 1 and what in r.stderr, r.stderr
    code = "import sys; sys.modules['aiohttp'] = None; from punctkit.cli import main; main()"
    r = subprocess.run([sys.executable, "-c", code, "serve", "-m", str(packed["pkt"])], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 1 and r.stderr.startswith("punctkit: error: punctkit serve needs aiohttp, ") \
        and r.stderr.endswith(": pip install 'punctkit[serve]'\n") and r.stderr.count("\n") == 1, r.stderr


# ------------------------------------------------------------------ batching, in process

def batch_labels(punct, jobs):
    """`label_batch` over requests of independent streams ((words, None) each): each stream's labels."""
    from types import SimpleNamespace

    from punctkit.infer.engine import as_unit

    requests = [Request(Parsed(SimpleNamespace(one_stream=False), [as_unit(w) for w, _ in job],
                               sum(len(w) for w, _ in job))) for job in jobs]
    return [[d.labels for d in done] for done in label_batch(punct, requests)]


@settings(max_examples=15, deadline=None)
@given(cuts=st.lists(st.integers(0, 12), min_size=1, max_size=6), lengths=st.lists(st.integers(0, 90), min_size=1,
                                                                                   max_size=12))
def test_batching_never_changes_a_label(packed, tiny_engine, cuts, lengths):
    """Streams of any lengths, split into requests anyhow: one shared call == each stream alone."""
    pool = [w for u in packed["utts"] for w in u]
    streams, at = [], 0
    for n in lengths:
        streams.append((pool[at:at + n], None))
        at += n
    bounds = sorted({min(c, len(streams)) for c in cuts} | {0, len(streams)})
    jobs = [streams[a:b] for a, b in zip(bounds, bounds[1:])]
    got = batch_labels(tiny_engine, jobs)
    assert [len(j) for j in got] == [len(j) for j in jobs]
    assert [lab for j in got for lab in j] == [words_labels(tiny_engine, w) for w, _ in streams]


def test_long_input_is_punctuated_in_chunks(packed):
    """An input far over the chunk size comes back labelled word for word, as one whole-stream decode."""
    small = load_model(packed["pkt"], threads=1, chunk_words=50)
    whole = load_model(packed["pkt"], threads=1)
    words = [w for u in packed["utts"][:20] for w in u]
    assert len(words) > 300
    got = batch_labels(small, [[(words[:7], None)], [(words, None)]])
    assert got == [[words_labels(whole, words[:7])], [words_labels(whole, words)]]
    assert sum(lab != "O" for lab in got[1][0]) > 5


def test_int8_package_batched_differs_from_alone_on_under_half_a_percent_of_words(packed, tmp_path):
    """int8 activations are quantized per batch, so sharing a batch may move a label, rarely."""
    from punctkit.packing import pack

    pack(packed["dir"] / "exp", tmp_path / "m8.pkt", onnx=True, int8=True)
    p8 = load_model(tmp_path / "m8.pkt", threads=1)
    assert p8.card["onnx"] == "int8"
    jobs = [[(u[:50], None), (u[50:], None)] for u in packed["utts"]]
    batched = [lab for job in batch_labels(p8, jobs) for labels in job for lab in labels]
    alone = [lab for job in jobs for words, _ in job for lab in words_labels(p8, words)]
    assert len(batched) == len(alone) == 3000
    assert sum(a != b for a, b in zip(batched, alone)) < 0.005 * len(alone)


def test_sizes_and_rates():
    assert parse_size("1MB") == 1_000_000 and parse_size("64KiB") == 65536 and parse_size("512") == 512
    assert parse_size("1.5kb") == 1500
    assert parse_rate(None) is None and parse_rate("10/s") == parse_rate("10") == 10.0
    for bad in ("", "MB", "-1", "0", "1TB"):
        with pytest.raises(PunctkitError, match="--max-body"):
            parse_size(bad)
    with pytest.raises(PunctkitError, match="--rate-limit"):
        parse_rate("fast")


@given(rate=st.floats(0.5, 50), gaps=st.lists(st.floats(0, 0.5), min_size=1, max_size=60))
def test_rate_limit_never_allows_more_than_the_rate(rate, gaps):
    """Over any span of time a client gets at most burst + rate * span requests, and the first is allowed."""
    lim, now, allowed = RateLimit(rate), 0.0, []
    for g in gaps:
        now += g
        if lim.allow("c", now):
            allowed.append(now)
    assert allowed and allowed[0] == gaps[0]
    for i, t in enumerate(allowed):
        for j in range(i, len(allowed)):
            assert j - i + 1 <= lim.burst + rate * (allowed[j] - t) + 1e-6


def test_serve_module_does_not_import_torch():
    r = subprocess.run([sys.executable, "-c", "import sys, punctkit.serve; print('torch' in sys.modules)"],
                       capture_output=True, text=True, env={**os.environ}, timeout=60)
    assert r.stdout.strip() == "False", r.stderr


def test_side_by_side_ensemble_package_streams_on_the_websocket(packed, tiny_engine):
    """An ensemble package of ONNX members over one frontend is served and streamed (/stream) as its
    one tagger: the model with itself streams as the model."""
    from punctkit.infer.stream import PunctStream, stream_lines
    from punctkit.packing import pack_ensemble

    d = packed["dir"]
    pack_ensemble([d / "exp", d / "exp"], d / "ens.pkt", "0.5,0.5", onnx=True)
    words = [w for u in packed["utts"][:3] for w in u][:120]
    lines = [" ".join(words[k:k + 7]) for k in range(0, len(words), 7)]
    s = Server(d / "ens.pkt", d / "serve_ens.log")
    try:
        got = ws_session(s.url, lines, "?lookahead=2")
    finally:
        s.stop()
    assert got == list(stream_lines(PunctStream(tiny_engine, 2), lines))
    assert sum(x.count(",") + x.count(".") + x.count("?") for x in got) > 3  # the model writes marks
