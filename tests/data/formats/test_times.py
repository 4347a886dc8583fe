"""Impossible times (issue 78, kind 3): what a time is (punctkit.data.formats.times: finite, not negative, at
most MAX_SECONDS), checked where every reader reads one, and every subtitle written valid.

- A time out of range (1e308, -1, NaN, Infinity, 1e999, an integer beyond a float) in any JSON format that
  carries times, in a CTM, stm, NLP or whisper-tsv field, or a subtitle's hours is a one-line error naming
  the file and line, never an internal error; the server answers it with a 400.
- Times that go backwards (a cue ending before it starts, segments or words out of order) are moved forward
  by the writers, said once on stderr with a count: every SRT and WebVTT written parses with a strict parser
  (`srt`, `webvtt-py`) and a check of our own, each cue ending after it starts and none starting before the
  cue before it; the words pass through.
"""
from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from punct_util import cli, cli_error, units_of
from punctkit.data.formats import REGISTRY, detect_format
from punctkit.data.formats.times import MAX_SECONDS, Timeline, TimeRepairs, checked, seconds
from punctkit.data.labels import get_inventory
from punctkit.files import PunctkitError

srt = pytest.importorskip("srt", reason="the test extra (srt) is not installed")
webvtt = pytest.importorskip("webvtt", reason="the test extra (webvtt-py) is not installed")

# a small valid document of every JSON format that carries times, `@T@` one of its times (in the format's own
# unit: seconds, milliseconds, ticks; inside a string where the format writes times as strings)
JSON_DOCS = {
    "jsonl": '{"id": "u1", "words": [{"word": "hello", "start": 0.1, "end": 0.4}, '
             '{"word": "there", "start": @T@, "end": 0.9}]}\n',
    "whisper": '{"text": " hello there", "segments": [{"start": 0.0, "end": 1.0, "text": " hello there", "words": '
               '[{"word": " hello", "start": 0.0, "end": 0.4, "probability": 0.9}, '
               '{"word": " there", "start": 0.5, "end": @T@, "probability": 0.9}]}]}',
    "whisper-segments": '[{"start": 0.0, "end": 0.4, "text": " hello"}, {"start": @T@, "end": 1.0, "text": " there"}]',
    "whisper.cpp": '{"transcription": [{"offsets": {"from": 0, "to": 400}, "text": " hello"}, '
                   '{"offsets": {"from": 500, "to": @T@}, "text": " there"}]}',
    "vosk": '{"result": [{"word": "hello", "start": 0.1, "end": 0.4, "conf": 1.0}, '
            '{"word": "there", "start": @T@, "end": 0.9, "conf": 1.0}], "text": "hello there"}\n',
    "deepspeech": '{"transcripts": [{"confidence": -1.0, "words": [{"word": "hello", "start_time": 0.1, '
                  '"duration": 0.3}, {"word": "there", "start_time": 0.5, "duration": @T@}]}]}',
    "azure-speech": '{"RecognitionStatus": "Success", "Offset": 1000000, "Duration": 9000000, "DisplayText": "Hello '
                    'there.", "NBest": [{"Lexical": "hello there", "Words": [{"Word": "hello", "Offset": 1000000, '
                    '"Duration": 3000000}, {"Word": "there", "Offset": @T@, "Duration": 4000000}]}]}\n',
    "pocketsphinx": '{"b": 0.0, "d": 1.0, "p": 1.0, "t": "hello there", "w": [{"b": 0.1, "d": 0.3, "p": 1.0, '
                    '"t": "hello"}, {"b": 0.5, "d": @T@, "p": 1.0, "t": "there"}]}\n',
    "rev": '{"monologues": [{"speaker": 0, "elements": [{"type": "text", "value": "hello", "ts": 0.1, "end_ts": 0.4}, '
           '{"type": "punct", "value": " "}, {"type": "text", "value": "there", "ts": @T@, "end_ts": 0.9}]}]}',
    "aws": '{"jobName": "j", "results": {"transcripts": [{"transcript": "hello there"}], "items": [{"type": '
           '"pronunciation", "start_time": "0.1", "end_time": "0.4", "alternatives": [{"confidence": "0.9", '
           '"content": "hello"}]}, {"type": "pronunciation", "start_time": "@T@", "end_time": "0.9", '
           '"alternatives": [{"confidence": "0.9", "content": "there"}]}]}}',
    "speechmatics": '{"format": "2.9", "job": {}, "results": [{"type": "word", "start_time": 0.1, "end_time": 0.4, '
                    '"alternatives": [{"content": "hello", "confidence": 1.0}]}, {"type": "word", "start_time": 0.5, '
                    '"end_time": @T@, "alternatives": [{"content": "there", "confidence": 1.0}]}]}',
    "google": '{"results": [{"alternatives": [{"transcript": "hello there", "confidence": 0.9, "words": [{"startTime": '
              '"0.100s", "endTime": "0.400s", "word": "hello"}, {"startTime": "@T@s", "endTime": "0.900s", '
              '"word": "there"}]}], "languageCode": "en-us"}]}',
    "watson": '{"result_index": 0, "results": [{"final": true, "alternatives": [{"transcript": "hello there", '
              '"timestamps": [["hello", 0.1, 0.4], ["there", @T@, 0.9]]}]}]}',
    "deepgram": '{"metadata": {"channels": 1}, "results": {"channels": [{"alternatives": [{"transcript": '
                '"hello there", "words": [{"word": "hello", "start": 0.1, "end": 0.4}, {"word": "there", "start": 0.5, '
                '"end": @T@}]}]}]}}',
    "assemblyai": '{"id": "x", "status": "completed", "audio_url": "https://example.org/a.mp3", '
                  '"text": "hello there", "words": [{"text": "hello", "start": 100, "end": 400}, '
                  '{"text": "there", "start": @T@, "end": 900}]}',
    "huggingface": '{"text": " hello there", "chunks": [{"text": " hello", "timestamp": [0.1, 0.4]}, '
                   '{"text": " there", "timestamp": [0.5, @T@]}]}',
    "azure": '{"source": "a.wav", "recognizedPhrases": [{"channel": 0, "offsetInTicks": 1000000, "nBest": [{"lexical": '
             '"hello there", "words": [{"word": "hello", "offsetInTicks": 1000000, "durationInTicks": 3000000}, '
             '{"word": "there", "offsetInTicks": @T@, "durationInTicks": 4000000}]}]}]}',
}
FORMAT = {"whisper-segments": "whisper", "whisper.cpp": "whisper"}  # the format of a variant
# a valid time in every format's unit (seconds, milliseconds, ticks: all within the document's span)
GOOD = {"whisper.cpp": "900", "assemblyai": "500", "azure-speech": "5000000", "azure": "5000000"}
# impossible times as JSON writes them (Python's json reads NaN and Infinity, and 1e999 as inf), and an integer
# that no float holds
BAD = ["1e308", "-1", "NaN", "Infinity", "-Infinity", "1e999", "1" + "0" * 400]


INV = get_inventory("4class")


def read_units(fmt: str, p: Path) -> list:
    """The units of `p` as punctuate's reader of `fmt` reads them."""
    return units_of(REGISTRY[fmt], p, INV)


@pytest.mark.parametrize("n, kind", list(enumerate(sorted(JSON_DOCS))))
def test_an_impossible_time_in_a_json_format_is_a_one_line_error(n, kind, tmp_path):
    """Each JSON format: the document reads and is written as subtitles with a good time in the place; with
    an impossible one its reader refuses it, one line naming the file, its line and the time; punctuate (to
    vtt, srt, timed-json, jsonl, by turns) fails with that line on stderr, never an internal error."""
    doc, fmt = JSON_DOCS[kind], FORMAT.get(kind, kind)
    good = tmp_path / "good.json"
    good.write_text(doc.replace("@T@", GOOD.get(kind, "0.5")))
    assert detect_format(good) == fmt and [w for u in read_units(fmt, good) for w in u.words] == ["hello", "there"]
    strict_vtt(cli("punctuate", good, "--format", "vtt").stdout)
    for k, bad in enumerate(BAD):
        p = tmp_path / f"bad{k}.json"
        p.write_text(doc.replace("@T@", bad))
        with pytest.raises(PunctkitError) as e:
            read_units(fmt, p)
        message = str(e.value)
        assert "\n" not in message and re.match(rf"{re.escape(str(p))}:1\b", message), message
        assert f"from 0 to {MAX_SECONDS} seconds" in message and "correct that time" in message, message
        if k in (n % len(BAD), (n + 3) % len(BAD)):  # two of them through the command, each output by turns
            out = ("vtt", "srt", "timed-json", "jsonl")[(n + k) % 4]
            err = cli_error(cli("punctuate", p, "--format", out, ok=False), at=p.name)
            assert err == f"punctkit: error: {message}", err


@pytest.mark.parametrize("fmt, body, line", [
    ("ctm", "u1 1 0.10 0.30 hello\nu1 1 @T@ 0.30 there\n", 2),
    ("ctm", "u1 1 0.10 0.30 hello\nu1 1 0.50 @T@ there\n", 2),
    ("stm", "talk 1 spk 0.00 @T@ <o,f0,male> hello there\n", 1),
    ("nlp", "token|speaker|ts|endTs|punctuation|prepunctuation|case|tags|oldTs|oldEndTs|ali_comment\n"
            "hello|0|0.1|0.4||||[]|||\nthere|0|@T@|0.9||||[]|||\n", 3),
    ("whisper-tsv", "start\tend\ttext\n0\t400\thello\n500\t@T@\tthere\n", 3),
])
def test_an_impossible_time_in_a_text_format_is_a_one_line_error(fmt, body, line, tmp_path):
    """CTM, stm, NLP and whisper-tsv fields: a good time reads; `nan`, `inf`, `1e999`, `-1`, a time past
    MAX_SECONDS and a number of 400 digits are one-line errors naming the file and line."""
    good = tmp_path / "good.txt"
    good.write_text(body.replace("@T@", "900" if fmt == "whisper-tsv" else "0.9"))
    assert "-->" in cli("punctuate", good, "--input-format", fmt, "--format", "srt").stdout
    bad = ["nan", "inf", "1e999", "-1", str(MAX_SECONDS * 1000 + 1 if fmt == "whisper-tsv" else MAX_SECONDS + 1),
           "9" * 400]
    for k, t in enumerate(bad):
        if fmt == "whisper-tsv" and not t.isdigit():
            continue  # its rows take digits only: another error, tested in test_cues
        p = tmp_path / f"bad{k}.txt"
        p.write_text(body.replace("@T@", t))
        with pytest.raises(PunctkitError, match=rf"^{re.escape(str(p))}:{line}\b.*from 0 to {MAX_SECONDS} seconds"):
            read_units(fmt, p)
        if k % 2 == 0:
            err = cli_error(cli("punctuate", p, "--input-format", fmt, "--format", "vtt", ok=False), at=p.name)
            assert f"{p.name}:{line}" in err and "correct that time" in err, err


def test_a_subtitle_time_past_the_bound_is_a_one_line_error(tmp_path):
    """A cue whose hours put it past MAX_SECONDS (SRT's hours have any number of digits) is refused at its
    timing line; the latest time allowed reads and is written back as a valid cue."""
    p = tmp_path / "far.srt"
    p.write_text("1\n00:00:01,000 --> 00:00:02,000\nhello\n\n2\n" + "9" * 30 + ":00:00,000 --> "
                 + "9" * 30 + ":00:01,000\nthere\n")
    err = cli_error(cli("punctuate", p, "--format", "vtt", ok=False), at="far.srt")
    assert "far.srt:6" in err and "cue's start" in err
    last = tmp_path / "last.srt"
    hours = MAX_SECONDS // 3600
    rest = MAX_SECONDS - hours * 3600
    stamp = f"{hours}:{rest // 60:02d}:{rest % 60:02d},000"
    last.write_text(f"1\n00:00:01,000 --> {stamp}\nhello there\n")
    out = cli("punctuate", last, "--format", "srt").stdout
    cues = strict_srt(out)
    assert cues[-1][1] == MAX_SECONDS


# ---------------------------------------------------------------- times that go backwards

# each input has times that go backwards: a cue or word ending before it starts, units or words out of order
BACKWARDS = {
    "srt": "1\n00:00:05,000 --> 00:00:03,000\nhello there how are you\n\n2\n00:00:01,000 --> 00:00:02,000\n"
           "fine thanks\n\n3\n00:00:04,000 --> 00:00:04,000\nand you\n",
    "vtt": "WEBVTT\n\n00:00:05.000 --> 00:00:03.000\nhello there how are you\n\n00:01.000 --> 00:02.000\n"
           "fine thanks\n\n00:00:09.000 --> 00:00:10.000\nand you\n",
    "whisper": json.dumps({"text": "", "segments": [
        {"start": 4.0, "end": 5.0, "text": " hello there how", "words": [
            {"word": " hello", "start": 4.0, "end": 3.5}, {"word": " there", "start": 3.0, "end": 3.2},
            {"word": " how", "start": 4.6, "end": 4.6}]},
        {"start": 1.0, "end": 2.0, "text": " are you fine thanks", "words": [
            {"word": " are", "start": 1.0, "end": 1.2}, {"word": " you", "start": 1.3, "end": 1.3},
            {"word": " fine", "start": 1.5, "end": 1.1}, {"word": " thanks", "start": 0.2, "end": 0.1}]}]}),
    "whisper-tsv": "start\tend\ttext\n5000\t3000\thello there how are you\n1000\t2000\tfine thanks\n"
                   "1500\t1500\tand you\n",
    "deepgram": json.dumps({"metadata": {}, "results": {"channels": [{"alternatives": [{"transcript": "", "words": [
        {"word": w, "start": s, "end": e} for w, s, e in [
            ("hello", 2.0, 2.5), ("there", 1.0, 0.5), ("how", 3.0, 3.0), ("are", 0.0, 0.1), ("you", 2.9, 2.8),
            ("fine", 7.0, 7.4), ("thanks", 6.0, 6.5)]]}]}]}}),
    "ctm": "u1 1 2.00 0.50 hello\nu1 1 1.00 0.00 there\nu1 1 3.00 0.20 how\nu1 1 0.50 0.10 are\n"
           "u2 1 0.00 0.30 you\nu2 1 0.40 0.00 fine\nu2 1 0.40 0.20 thanks\n",
    "jsonl": "".join(json.dumps({"id": f"u{k}", "words": [{"word": w, "start": s, "end": e} for w, s, e in ws]}) + "\n"
                     for k, ws in enumerate([[("hello", 9.0, 8.0), ("there", 2.0, 2.0)],
                                             [("how", 1.0, 1.5), ("are", 0.0, 0.0), ("you", 0.0, 9.0)]], 1)),
}
SUFFIX = {"whisper": ".json", "deepgram": ".json", "jsonl": ".jsonl", "whisper-tsv": ".tsv"}
TIMING = {"srt": re.compile(r"^(\d{2,}):(\d{2}):(\d{2}),(\d{3}) --> (\d{2,}):(\d{2}):(\d{2}),(\d{3})$"),
          "vtt": re.compile(r"^(\d{2,}):(\d{2}):(\d{2})\.(\d{3}) --> (\d{2,}):(\d{2}):(\d{2})\.(\d{3})$")}


def own_check(text: str, fmt: str) -> list[tuple[float, float]]:
    """Our own strict reading of a subtitle file: every timing line `HH:MM:SS,mmm --> HH:MM:SS,mmm` (`.` in
    WebVTT) with minutes and seconds under 60, each cue ending after it starts, no cue starting before the one
    before it; (start, end) of each cue."""
    out = []
    for line in text.splitlines():
        if "-->" not in line:
            continue
        m = TIMING[fmt].match(line)
        assert m, line
        g = [int(x) for x in m.groups()]
        assert all(x < 60 for x in (g[1], g[2], g[5], g[6])), line
        a = g[0] * 3600 + g[1] * 60 + g[2] + g[3] / 1000
        b = g[4] * 3600 + g[5] * 60 + g[6] + g[7] / 1000
        assert a < b, line
        assert not out or out[-1][0] <= a, line
        out.append((a, b))
    assert out
    return out


def strict_srt(text: str) -> list[tuple[float, float]]:
    """The cues of an SRT text as the `srt` package reads it, errors not ignored, checked as `own_check`."""
    cues = list(srt.parse(text, ignore_errors=False))
    spans = [(c.start.total_seconds(), c.end.total_seconds()) for c in cues]
    assert all(a < b for a, b in spans) and all(x[0] <= y[0] for x, y in zip(spans, spans[1:])), spans
    assert [n for n, _ in enumerate(cues, 1)] == [c.index for c in cues]
    assert spans == own_check(text, "srt")
    return spans


def strict_vtt(text: str) -> list[tuple[float, float]]:
    """The cues of a WebVTT text as `webvtt-py` reads it (a malformed file raises), checked as `own_check`."""
    cues = list(webvtt.from_buffer(io.StringIO(text)))
    spans = [(c.start_in_seconds + int(c.start[-3:]) / 1000, c.end_in_seconds + int(c.end[-3:]) / 1000)
             for c in cues]
    assert all(a < b for a, b in spans) and all(x[0] <= y[0] for x, y in zip(spans, spans[1:])), spans
    assert spans == own_check(text, "vtt")
    return spans


def bare(text: str) -> list[str]:
    """The words of cue text, lower case, without marks."""
    return [w.strip(",.?!;:").lower() for w in text.split() if w.strip(",.?!;:")]


@pytest.mark.parametrize("kind", sorted(BACKWARDS))
def test_times_that_go_backwards_make_valid_subtitles(kind, tmp_path):
    """Backwards times in srt, vtt, Whisper, whisper-tsv, Deepgram, CTM and JSON lines: the srt and vtt written
    parse strictly, monotone, each cue ending after it starts; the words pass through; stderr says once how
    many words were moved."""
    p = tmp_path / f"in{SUFFIX.get(kind, '.' + kind)}"
    p.write_text(BACKWARDS[kind])
    words = [u.words for u in read_units(kind, p)]
    for fmt, strict in (("srt", strict_srt), ("vtt", strict_vtt)):
        r = cli("punctuate", p, "--input-format", kind, "--format", fmt)
        strict(r.stdout)
        text = "\n".join(ln for ln in r.stdout.splitlines()
                         if ln and "-->" not in ln and not ln.isdigit() and ln != "WEBVTT")
        assert bare(text) == [w for ws in words for w in ws]
        warnings = [ln for ln in r.stderr.splitlines() if "went backwards" in ln]
        assert len(warnings) == 1 and re.search(r"warning: times of [1-9]\d* words? went backwards", warnings[0]), \
            r.stderr
    timed = [json.loads(ln) for ln in cli("punctuate", p, "--input-format", kind, "--format",
                                          "timed-json").stdout.splitlines()]
    for s in timed:
        spans = [(w["start"], w["end"]) for w in s["words"] if w["start"] is not None]
        assert all(a <= b for a, b in spans) and all(x[0] <= y[0] for x, y in zip(spans, spans[1:]))


def test_times_in_order_are_written_unchanged_and_nothing_is_said(tmp_path):
    """Whisper words in order: the cues' times are the words' own and no warning is given."""
    doc = {"text": "", "segments": [{"start": 0.5, "end": 2.0, "text": " hello there. fine thanks", "words": [
        {"word": " hello", "start": 0.5, "end": 0.9}, {"word": " there.", "start": 1.0, "end": 1.2},
        {"word": " fine", "start": 1.5, "end": 1.6}, {"word": " thanks", "start": 1.7, "end": 2.0}]}]}
    p = tmp_path / "w.json"
    p.write_text(json.dumps(doc))
    r = cli("punctuate", p, "--format", "srt", "--keep-input-marks")
    spans = strict_srt(r.stdout)
    assert spans[0] == (0.5, 1.2) and spans[-1][1] == 2.0 and "backwards" not in r.stderr


def test_the_writers_timeline():
    """Timeline.span moves a word forward (not before the previous start, not ending before its start) and
    counts it; Timeline.cue gives whole milliseconds, monotone, ending at least 1 ms after the start."""
    repairs = TimeRepairs()
    t = Timeline(repairs)
    assert t.span(1.0, 2.0) == (1.0, 2.0) and repairs.moved == 0
    assert t.span(0.5, 0.7) == (1.0, 1.0) and repairs.moved == 1
    assert t.span(3.0, 2.0) == (3.0, 3.0) and repairs.moved == 2
    assert t.span(3.0, 3.0) == (3.0, 3.0) and repairs.moved == 2  # a word of no length is no repair
    assert t.cue(1.0, 1.0) == (1000, 1001)
    assert t.cue(1.0004, 1.0004) == (1000, 1001)
    assert t.cue(0.2, 5.0) == (1000, 5000)
    assert "times of 2 words went backwards" in repairs.warning() and TimeRepairs().warning() == ""


def test_what_a_time_is():
    """times.seconds: a number or a number as a string, in its unit, finite, 0 to MAX_SECONDS; else a one-line
    error at the place."""
    assert seconds("1.5", "f:1") == 1.5 and seconds(1500, "f:1", per=1000) == 1.5 and seconds(0, "f:1") == 0
    assert seconds(MAX_SECONDS, "f:1") == MAX_SECONDS and checked(2.5, "f:1") == 2.5
    for bad in (float("nan"), float("inf"), -1, MAX_SECONDS + 1, "abc", "1e999", True, None, [1], 10 ** 400):
        with pytest.raises(PunctkitError, match=r"^f:7 \(word 2\): the start must be a time from 0 to"):
            seconds(bad, "f:7 (word 2)", "the start")


# ---------------------------------------------------------------- the server

def test_the_server_answers_an_impossible_time_with_a_400(tmp_path):
    """POST a Whisper body with an impossible time: 400 and the one-line message naming the request's line; a
    body whose times go backwards: 200 and a valid WebVTT."""
    pytest.importorskip("aiohttp", reason="the serve extra (aiohttp) is not installed")
    from serve_util import Server, post

    server = Server("fast", tmp_path / "serve.log")
    try:
        answers = [post(server.url + "/punctuate?format=vtt", JSON_DOCS["whisper"].replace("@T@", bad).encode(),
                        "application/json") for bad in ("1e308", "NaN", "-1")]
        answers.append(post(server.url + "/punctuate?format=srt",
                            JSON_DOCS["deepgram"].replace("@T@", "Infinity").encode()))
        status, _, body = post(server.url + "/punctuate?format=vtt", BACKWARDS["whisper"].encode(), "application/json")
    finally:
        server.stop()
    for code, ctype, text in answers:
        message = json.loads(text)["error"]
        assert code == 400 and ctype == "application/json" and "\n" not in message, text
        assert message.startswith("request:1") and "from 0 to 10000000 seconds" in message and "internal" not in message
    assert status == 200
    strict_vtt(body)
