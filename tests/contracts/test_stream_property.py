"""Hostile input through the streaming and serving entry points (hypothesis; issue 33): random lines
through `punctuate --stream`'s line protocol (stream_lines), random bytes through the decoder it reads
stdin with (files.decode_lines), random bodies, content types and charsets through `POST /punctuate`,
random text messages through the `/stream` websocket. Each answer is a normal one or a one-line error
(PunctkitError; the server's JSON `{"error"}`), never an internal error; a line that cannot be read
comes after the words that were held, which are all written. The model is the legacy ONNX word
package (tests/fixtures/legacy): nothing is trained, and the server runs without torch.
"""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from punct_util import one_line_message
from punctkit.files import PunctkitError, decode_lines
from punctkit.infer.stream import PunctStream

pytest.importorskip("onnxruntime", reason="the onnx extra (onnxruntime) is not installed")
PKT = Path(__file__).parents[1] / "fixtures" / "legacy" / "word_onnx.pkt"
SETTINGS = settings(max_examples=100, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# ------------------------------------------------------------------ strategies

WORD = st.sampled_from(["so", "i", "think", "we", "go", "what", "hello,", "u.s.", "$5", "...", ",", "don't",
                        "ok?", "café", "日本", "(yes)"])
PLAIN = st.lists(WORD, max_size=8).map(" ".join)
KEYS = st.sampled_from(["text", "final", "partial", "eof", "words", "id"]) | st.text(max_size=3)
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6) | PLAIN,
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
                    max_leaves=8)
FINAL = st.builds(lambda text, final: json.dumps({"text": text, "final": final}), PLAIN, st.booleans())
DEPTH = st.integers(95, 3000)
HOSTILE = st.one_of(  # json alone: a stack overflow, an integer it cannot convert, half a UTF-16 pair
    DEPTH.map(lambda n: '{"text": ' + "[" * n + "]" * n + "}"),
    DEPTH.map(lambda n: "[" * n),
    DEPTH.map(lambda n: '{"text": "so", "x": ' + '{"a": ' * n + "1" + "}" * n + "}"),
    st.just('{"text": "so", "n": ' + "9" * 5000 + "}"),
    st.just('{"text": "caf\\ud800"}'))
LINE = st.one_of(PLAIN, FINAL, JSON.map(json.dumps), HOSTILE, st.text(max_size=20))
ENCODINGS = st.sampled_from([None, "utf-8", "latin-1", "utf-16", "utf-32", "shift_jis", "punycode", "idna",
                             "base64", "rot13", "zlib", "klingon"])
BYTES = st.one_of(st.binary(max_size=120),
                  st.lists(LINE, max_size=5).map(lambda ls: "\n".join(ls).encode()),
                  st.builds(lambda ls, enc: "\n".join(ls).encode(enc, "replace"), st.lists(PLAIN, max_size=4),
                            st.sampled_from(["utf-8-sig", "utf-16", "utf-16-be", "utf-32", "latin-1"])))


# ------------------------------------------------------------------ fixtures

@pytest.fixture(scope="module")
def word_onnx_engine():
    from punctkit import load_model

    return load_model(PKT, threads=1)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    pytest.importorskip("aiohttp", reason="the serve extra (aiohttp) is not installed")
    from serve_util import Server

    s = Server(PKT, tmp_path_factory.mktemp("serve") / "serve.log", "--max-body", 100_000)
    yield s
    s.stop()


def run_lines(punct, lines, fmt=None, lookahead=None, flush=False) -> tuple[list[str], str | None]:
    """The output lines of stream_lines, and its error (one line) if it stopped on one."""
    from punctkit.infer.stream import stream_lines

    out: list[str] = []
    try:
        for line in stream_lines(PunctStream(punct, lookahead), lines, fmt, flush):
            out.append(line)
    except PunctkitError as e:
        assert "\n" not in str(e)
        return out, str(e)
    return out, None


# ------------------------------------------------------------------ the line protocol of --stream

@SETTINGS
@given(lines=st.lists(LINE, max_size=8), fmt=st.sampled_from([None, "text", "jsonl"]),
       lookahead=st.sampled_from([0, 2, None]), flush=st.booleans())
def test_any_lines_are_answered_or_one_line_error_after_the_words_held(word_onnx_engine, lines, fmt, lookahead, flush):
    """Stopped at line k, the output is exactly that of the k-1 lines before it as a whole stream:
    the words held when the bad line came are written (committed as at an end), none is lost."""
    out, err = run_lines(word_onnx_engine, lines, fmt, lookahead, flush)
    assert all("\n" not in o for o in out)
    if err is not None:
        assert err.startswith("standard input line ")
        k = int(err.split()[3].rstrip(":"))
        assert run_lines(word_onnx_engine, lines[:k - 1], fmt, lookahead, flush) == (out, None)


@SETTINGS
@given(data=BYTES, encoding=ENCODINGS, fmt=st.sampled_from([None, "text"]))
def test_any_bytes_through_the_stdin_decoder(word_onnx_engine, data, encoding, fmt):
    """Bytes in any (named) encoding: lines, or one line naming the byte, the encoding that is not a text
    encoding, or the line that is not JSON; on a decoding error the lines before it all come out."""
    lines = (text for _, text in decode_lines(io.BytesIO(data), "stdin", encoding))
    out, err = run_lines(word_onnx_engine, lines, fmt)
    if err is None:
        return
    assert err.startswith(("stdin:", "standard input line ", "unknown encoding", "--encoding")), err
    if err.startswith("stdin:"):  # a decoding error at line k: the stream of the k-1 lines before it
        k = int(err.split(":")[1])
        good = [text for i, text in decode_lines(io.BytesIO(data), "stdin", encoding, (1, k - 1))]
        assert run_lines(word_onnx_engine, good, fmt) == (out, None)


# ------------------------------------------------------------------ the server

CTYPES = st.sampled_from(["text/plain", "application/json", "application/x-ndjson", "application/octet-stream",
                          "text/plain; charset=utf-8", "text/plain; charset=latin-1", "text/plain; charset=utf-16",
                          "text/plain; charset=utf-32", "text/plain; charset=shift_jis", "text/plain; charset=base64",
                          "text/plain; charset=rot13", "text/plain; charset=klingon", "text/csv; charset=punycode",
                          "application/vnd.x+json; charset=utf-16"])
QUERIES = st.sampled_from(["", "?format=jsonl", "?input_format=jsonl", "?input_format=whisper",
                           "?input_format=vosk", "?input_format=nemo", "?format=timed-json", "?keep_input_marks=1"])


@SETTINGS
@given(body=BYTES | st.lists(JSON | HOSTILE, max_size=3).map(lambda vs: "\n".join(map(str, vs)).encode()),
       ctype=CTYPES, query=QUERIES)
def test_any_body_is_answered_or_refused_in_one_json_line(server, body, ctype, query):
    from serve_util import post

    status, out_type, out = post(server.url + "/punctuate" + query, body, ctype)
    assert status in (200, 400), (status, out)
    if status == 400:
        assert out_type == "application/json"
        assert "/tmp" not in one_line_message(json.loads(out)["error"])


@settings(SETTINGS, max_examples=50)
@given(messages=st.lists(LINE, max_size=6), query=st.sampled_from(["", "?input_format=jsonl", "?lookahead=0",
                                                                   "?flush_on_final=true", "?input_format=text"]))
def test_any_messages_on_the_websocket_are_answered_as_the_protocol_does(server, word_onnx_engine, messages, query):
    """The websocket answers each message as the line protocol does in-process (a bad one: the words held,
    then a JSON error), and `{"eof": true}` with the rest; the server then closes normally (1000)."""
    from punctkit.decode.lookahead import parse_lookahead
    from punctkit.infer.stream import LineProtocol, PunctStream
    from punctkit.serve import is_eof
    from serve_util import ws_replies

    messages = [m for m in messages if not is_eof(m)]
    params = dict(q.split("=") for q in query[1:].split("&") if q)
    proto = LineProtocol(PunctStream(word_onnx_engine, parse_lookahead(params.get("lookahead"))),
                         params.get("input_format"), params.get("flush_on_final") == "true", "message")
    want: list = []
    for m in messages:
        try:
            answer = proto.line(m)
        except PunctkitError as e:
            want += [r for r in [proto.end()] if r is not None] + [{"error": str(e)}]
            continue
        want += [] if answer is None else [answer]
    got, code = ws_replies(server.url, messages, query)
    assert got == want + [proto.end() or ""] and code == 1000
    for r in got:
        if isinstance(r, dict):
            assert "/tmp" not in one_line_message(r["error"])
