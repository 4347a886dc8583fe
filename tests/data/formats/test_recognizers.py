"""Recognizer outputs in (Whisper JSON, NeMo manifests, Vosk results: punctkit/data/formats/recognizers.py):
each read from a small sample written to the tool's documented schema, told apart by content
(a `.json` name says nothing), malformed files one-line errors naming file and line; and the
writers that show probabilities (jsonl, twocol), with hand-made probability rows.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from punct_util import cli, raised_error, units_of
from punctkit.data.formats import REGISTRY, detect_format, read
from punctkit.data.formats.asr import jsonl_out
from punctkit.data.formats.base import OutputOptions, given_words
from punctkit.data.formats.labelled import twocol_emit
from punctkit.data.formats.recognizers import nemo_out, nemo_units, vosk_units, whisper_units
from punctkit.data.labels import INVENTORIES, O, default_substitution
from punctkit.files import PunctkitError
from punctkit.infer.engine import Labelled

INV = INVENTORIES["4class"]
RULES = default_substitution(INV)
LEGACY = Path(__file__).parents[2] / "fixtures" / "legacy" / "word.pkt"  # a packed word model (tests/fixtures/legacy)


def w(word: str, start: float | None, end: float | None, **extra: object) -> dict:
    item: dict = {"word": word, **extra}
    if start is not None:
        item["start"], item["end"] = start, end
    return item


# openai-whisper `--word_timestamps True --output_format json`: words with Whisper's leading spaces,
# marks and case the recognizer wrote; a segment without `words`, an empty one, a WhisperX word without times
WHISPER = {
    "text": " So, what do you think? I mean 20 people", "language": "en",
    "segments": [
        {"id": 0, "seek": 0, "start": 0.0, "end": 1.9, "text": " So, what do you think?", "tokens": [50364, 407],
         "temperature": 0.0, "avg_logprob": -0.2, "compression_ratio": 1.1, "no_speech_prob": 0.01,
         "words": [w(" So,", 0.0, 0.4, probability=0.91), w(" what", 0.4, 0.7, probability=0.98),
                   w(" do", 0.7, 0.8, probability=0.99), w(" you", 0.8, 1.0, probability=0.99),
                   w(" think?", 1.0, 1.9, probability=0.97)]},
        {"id": 1, "seek": 0, "start": 2.0, "end": 3.0, "text": " I mean"},
        {"id": 2, "seek": 0, "start": 3.0, "end": 3.0, "text": "", "words": []},
        {"id": 3, "start": 3.1, "end": 4.0, "text": " 20 people",
         "words": [w(" 20", None, None, score=0.5), w(" people", 3.5, 4.0, score=0.9)]},
    ],
}
NEMO = [{"audio_filepath": "/data/a.wav", "duration": 2.5, "text": "the reference",
         "pred_text": "so what do you think"},
        {"audio_filepath": "/data/b.wav", "duration": 1.0, "text": "i mean twenty people", "lang": "en"}]
# Vosk as its examples print rec.PartialResult(), rec.Result(), rec.FinalResult(): pretty-printed objects
VOSK_RESULT = {"result": [{"conf": 1.0, "end": 1.11, "start": 0.87, "word": "so"},
                          {"conf": 0.82, "end": 1.53, "start": 1.11, "word": "what"}], "text": "so what"}
VOSK_FINAL = {"result": [{"conf": 1.0, "end": 2.4, "start": 2.0, "word": "think"}], "text": "think"}


def vosk_text(objs: list[dict], indent: int | None = 2) -> str:
    return "\n".join(json.dumps(o, indent=indent) for o in objs) + "\n"


def write(tmp_path: Path, text: str, name: str = "asr.json") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


# ------------------------------------------------------------------ Whisper

@pytest.mark.parametrize("indent", [None, 2])
def test_whisper_segments_words_and_times(tmp_path, indent):
    p = write(tmp_path, json.dumps(WHISPER, indent=indent))
    units = units_of(whisper_units, p, INV, RULES)
    assert [u.uttid for u in units] == ["asr.json-000001", "asr.json-000002", "asr.json-000003", "asr.json-000004"]
    assert not any(u.has_id for u in units)
    # leading spaces stripped, words as Whisper wrote them otherwise; its marks are input marks
    assert [given_words(u) for u in units] == [
        ["So,", "what", "do", "you", "think?"], ["I", "mean"], [], ["20", "people"]]
    assert units[0].words == ["so", "what", "do", "you", "think"]
    assert units[0].marks == ["COMMA", O, O, O, "QUESTION"]
    assert [(r["start_s"], r["end_s"]) for r in units[0].records] == [(0.0, 0.4), (0.4, 0.7), (0.7, 0.8),
                                                                      (0.8, 1.0), (1.0, 1.9)]
    # a segment without words: its text's words, each a share of its time by its length; a word without
    # times keeps none
    assert [(r["start_s"], r["end_s"]) for r in units[1].records] == [(2.0, 2.2), (2.2, 3.0)]
    assert [(r["start_s"], r["end_s"]) for r in units[3].records] == [(None, None), (3.5, 4.0)]
    assert units[0].source["avg_logprob"] == -0.2  # the segment, every field kept (jsonl output)


def test_whisper_is_one_stream_and_detected_by_content(tmp_path):
    f = REGISTRY["whisper"]
    assert f.one_stream and f.times and not f.ids
    for name in ("out.json", "talk.txt", "x"):
        assert detect_format(write(tmp_path, json.dumps(WHISPER), name)) == "whisper"
        assert detect_format(write(tmp_path, json.dumps(WHISPER, indent=4), name)) == "whisper"


# whisper-timestamped: each word in `text`, with `confidence`
TIMESTAMPED = {"text": " so what do you think", "language": "en", "segments": [
    {"id": 0, "seek": 0, "start": 0.5, "end": 1.5, "text": " so what do you think", "confidence": 0.9,
     "words": [{"text": t, "start": 0.5 + 0.2 * k, "end": 0.7 + 0.2 * k, "confidence": 0.9}
               for k, t in enumerate("so what do you think".split())]}]}
# whisper.cpp `-oj`: its `result` holds the language, its segments' times are `offsets` in milliseconds
WHISPER_CPP = {"systeminfo": "AVX = 1", "model": {"type": "base"}, "params": {"language": "en"},
               "result": {"language": "en"}, "transcription": [
                   {"timestamps": {"from": "00:00:00,000", "to": "00:00:02,400"}, "offsets": {"from": 0, "to": 2400},
                    "text": " so what do you think about"},
                   {"timestamps": {"from": "00:00:02,400", "to": "00:00:05,000"}, "offsets": {"from": 2400, "to": 5000},
                    "text": " new york i think it is great"}]}
SEGMENTS = [{"start": 0.0, "end": 2.4, "text": " so what do you think about"},
            {"start": 2.4, "end": 5.0, "text": " new york i think it is great"}]


@pytest.mark.parametrize("doc", [WHISPER_CPP, SEGMENTS], ids=["whisper.cpp", "segments alone"])
@pytest.mark.parametrize("indent", [None, 1])
def test_whisper_cpp_and_a_list_of_segments_are_whisper_and_share_their_segments_times(tmp_path, doc, indent):
    p = write(tmp_path, json.dumps(doc, indent=indent))
    assert detect_format(p) == "whisper"
    units = units_of(whisper_units, p, INV, RULES)
    assert [u.words for u in units] == ["so what do you think about".split(), "new york i think it is great".split()]
    for u, (s, e) in zip(units, [(0.0, 2.4), (2.4, 5.0)]):
        times = [(r["start_s"], r["end_s"]) for r in u.records]
        assert times[0][0] == s and times[-1][1] == pytest.approx(e, abs=1e-3)
        assert all(times[k][1] == times[k + 1][0] for k in range(len(times) - 1))
    out = cli("punctuate", p, "--format", "srt").stdout
    assert out.startswith("1\n00:00:00,000 --> ") and out.rstrip().splitlines()[-2].endswith(" --> 00:00:05,000")


def test_whisper_timestamped_words_are_read_from_their_text(tmp_path):
    p = write(tmp_path, json.dumps(TIMESTAMPED))
    assert detect_format(p) == "whisper"
    (u,) = units_of(whisper_units, p, INV, RULES)
    assert u.words == "so what do you think".split()
    assert [(r["start_s"], r["end_s"]) for r in u.records][:2] == [(0.5, 0.7), (0.7, pytest.approx(0.9))]


def test_whisper_cpp_longer_than_the_detectors_head_is_not_vosk(tmp_path, monkeypatch):
    from punctkit.data.formats import detect

    monkeypatch.setattr(detect, "JSON_HEAD", 400)
    p = write(tmp_path, json.dumps(WHISPER_CPP, indent=2))
    assert p.stat().st_size > 400 and detect_format(p) == "whisper"


def test_json_lines_of_segments_share_their_times(tmp_path):
    p = write(tmp_path, "".join(json.dumps(s) + "\n" for s in SEGMENTS), "segs.jsonl")
    units = units_of(REGISTRY["jsonl"], p, INV, RULES)
    assert [(u.records[0]["start_s"], u.records[-1]["end_s"]) for u in units] == [(0.0, 2.4), (2.4, 5.0)]


def test_whisper_longer_than_the_detectors_head(tmp_path, monkeypatch):
    """A document too long to decode from its head is told by its first known key."""
    from punctkit.data.formats import detect

    monkeypatch.setattr(detect, "JSON_HEAD", 600)
    p = write(tmp_path, json.dumps(WHISPER, indent=2))
    assert p.stat().st_size > 600 and detect_format(p) == "whisper"


# ------------------------------------------------------------------ NeMo

def test_nemo_manifest_pred_text_else_text_and_every_field_kept(tmp_path):
    p = write(tmp_path, "".join(json.dumps(o) + "\n" for o in NEMO) + "\n", "manifest.json")
    assert detect_format(p) == "nemo"
    units = units_of(nemo_units, p, INV, RULES)
    assert [u.words for u in units] == [["so", "what", "do", "you", "think"], ["i", "mean", "twenty", "people"]]
    assert [u.lineno for u in units] == [1, 2]
    out = [json.loads(line) for u in units
           for line in nemo_out(Labelled(u, [O] * (len(u.words) - 1) + ["PERIOD"], [x.core for x in u.written]),
                                OutputOptions(src=p))]
    assert out[0] == {**NEMO[0], "pred_text_punctuated": "so what do you think"}
    assert out[1] == {**NEMO[1], "pred_text_punctuated": "i mean twenty people"}


def test_nemo_pred_text_null_reads_text(tmp_path):
    """NeMo writes `pred_text: null` when it recognised nothing: the words are then `text`'s."""
    line = {"audio_filepath": "a.wav", "pred_text": None, "text": "so what"}
    p = write(tmp_path, json.dumps(line) + "\n", "manifest.json")
    assert detect_format(p) == "nemo"
    (u,) = units_of(nemo_units, p, INV, RULES)
    assert u.words == ["so", "what"]
    assert json.loads(next(nemo_out(Labelled(u, [O, "PERIOD"], ["so", "what."]), OutputOptions(src=p)))) == {
        **line, "pred_text_punctuated": "so what."}


# ------------------------------------------------------------------ Vosk

@pytest.mark.parametrize("layout", ["pretty", "lines", "list", "one"])
def test_vosk_results_in_every_layout(tmp_path, layout):
    objs = [{"partial": "so"}, VOSK_RESULT, {"text": ""}, {"partial": "think"}, VOSK_FINAL]
    text = {"pretty": vosk_text(objs), "lines": vosk_text(objs, None), "list": json.dumps(objs, indent=1),
            "one": json.dumps(VOSK_RESULT, indent=2)}[layout]
    p = write(tmp_path, text, "result.json")
    assert detect_format(p) == "vosk"
    units = units_of(vosk_units, p, INV, RULES)
    want = [["so", "what"]] if layout == "one" else [["so", "what"], ["think"]]
    assert [u.words for u in units] == want  # partial results and results without words skipped
    assert [(r["start_s"], r["end_s"]) for r in units[0].records] == [(0.87, 1.11), (1.11, 1.53)]
    if layout == "pretty":
        assert [u.lineno for u in units] == [4, 27]  # the line each result starts on
    assert REGISTRY["vosk"].one_stream


def test_vosk_alternatives_and_text_only_results(tmp_path):
    alt = {"alternatives": [{"confidence": 200.0, "result": VOSK_RESULT["result"], "text": "so what"},
                            {"confidence": 100.0, "result": [], "text": "sow"}]}
    p = write(tmp_path, vosk_text([alt, {"text": "i mean"}]))
    assert detect_format(p) == "vosk"
    units = units_of(vosk_units, p, INV, RULES)
    assert [u.words for u in units] == [["so", "what"], ["i", "mean"]]
    assert units[1].records[0]["start_s"] is None


# ------------------------------------------------------------------ detection among all formats

SAMPLES = {
    "whisper": json.dumps(WHISPER) + "\n",
    "nemo": "".join(json.dumps(o) + "\n" for o in NEMO),
    "vosk": vosk_text([VOSK_RESULT, VOSK_FINAL]),
    "jsonl": '{"id": "u1", "words": [{"word": "so", "start": 0.1, "end": 0.3}]}\n{"id": "u2", "text": "ok then"}\n',
    "ctm": "u1 1 0.10 0.20 so 0.9\nu1 1 0.30 0.20 what\n",
    "twocol": "so\tCOMMA\nwhat\tO\nthen\tQUESTION\n",
    "punctuator2": "so ,COMMA what then ?QUESTIONMARK\nyes .PERIOD\n",
    "kaldi_text": "utt-1 so what\nutt-2 i mean\n",
    "text": "so what do you think\ni mean twenty people\n",
}


@pytest.mark.parametrize("fmt", list(SAMPLES))
def test_detection_among_all_formats(tmp_path, fmt):
    assert detect_format(write(tmp_path, SAMPLES[fmt], "input.json")) == fmt


def test_keys_of_two_formats_are_ambiguous(tmp_path):
    p = write(tmp_path, json.dumps({"segments": [], "pred_text": "so"}) + "\n")
    with pytest.raises(PunctkitError, match=r"asr.json: cannot tell its format: its JSON has keys of nemo and whisper "
                                            r"\(pred_text, .*segments, transcription\); give --input-format"):
        detect_format(p)
    p = write(tmp_path, json.dumps(NEMO[0]) + "\n" + json.dumps(VOSK_RESULT) + "\n")
    with pytest.raises(PunctkitError, match="keys of nemo and vosk"):
        detect_format(p)


def test_json_of_no_known_shape(tmp_path):
    p = write(tmp_path, json.dumps({"transcript": "so"}, indent=2))
    with pytest.raises(PunctkitError, match=rf"^{re.escape(str(p))}: JSON of no known shape .*give --input-format$"):
        detect_format(p)


# ------------------------------------------------------------------ malformed files: one line, file and line

def test_malformed_whisper(tmp_path):
    text = json.dumps(WHISPER, indent=2).splitlines()
    text[5] = text[5].rstrip(",")  # a missing comma on line 6
    p = write(tmp_path, "\n".join(text))
    msg = raised_error(lambda: detect_format(p))
    assert re.fullmatch(rf"{re.escape(str(p))}:7: not valid JSON \(Expecting ',' delimiter, column \d+\); "
                        r"give --input-format to read it as another format", msg), msg
    assert re.match(rf"{re.escape(str(p))}:7: not valid JSON \(Expecting ',' delimiter, column \d+\)$",
                    raised_error(lambda: units_of(whisper_units, p, INV, RULES)))
    bad = dict(WHISPER, segments=[{"words": [{"word": " so", "start": "soon"}]}])
    p = write(tmp_path, "\n" + json.dumps(bad))
    assert raised_error(lambda: units_of(whisper_units, p, INV, RULES)).startswith(
        f"{p}:2 (segment 1), word 1: the start must be a time from 0 to 10000000 seconds")
    p = write(tmp_path, json.dumps(dict(WHISPER, segments=[{"words": [{"token": "so"}]}])))
    assert raised_error(lambda: units_of(whisper_units, p, INV, RULES)) == \
        f"{p}:1 (segment 1): word 1 is not an object with a 'word' or a 'text' string"
    p = write(tmp_path, json.dumps({"transcription": [{"text": " so", "offsets": {"from": "later", "to": 10}}]}))
    assert raised_error(lambda: units_of(whisper_units, p, INV, RULES)).startswith(
        f"{p}:1 (segment 1): 'offsets.from' (in milliseconds) must be a time from 0 to 10000000 seconds")
    p = write(tmp_path, json.dumps(dict(WHISPER, segments=[{"words": [w("so", 2.0, -1.0)]}])))
    assert "the end must be a time from 0 to 10000000 seconds (finite, not negative), got '-1.0'" in \
        raised_error(lambda: units_of(whisper_units, p, INV, RULES))
    p = write(tmp_path, json.dumps({"segments": "none"}))
    assert raised_error(lambda: units_of(whisper_units, p, INV, RULES)) == (
        f"{p}:1: expected a Whisper JSON object with a 'segments' list (or whisper.cpp's 'transcription', or a "
        "list of segments)")
    p = write(tmp_path, json.dumps(WHISPER) + "\n" + json.dumps(WHISPER))
    assert raised_error(lambda: units_of(whisper_units, p, INV, RULES)) == \
        f"{p}:2: more than one JSON value (the file is a Whisper JSON object)"


# ------------------------------------------------------------------ DeepSpeech, Coqui STT

def test_deepspeech_json_gives_its_most_confident_transcript(tmp_path, iwslt):
    """`deepspeech --json --candidate_transcripts 3` (Coqui STT's `stt --json` alike): told by `transcripts`, the
    most confident transcript read with its word times (start_time + duration), the others not; bad shapes are
    one line naming the file."""
    words = [ln.split("\t")[0].lower() for ln in (iwslt / "test2011").read_text().splitlines() if ln.strip()][:60]
    timed = [{"word": w, "start_time": round(0.3 * k, 4), "duration": 0.25} for k, w in enumerate(words)]
    doc = {"transcripts": [{"confidence": -20.0, "words": timed[:5]}, {"confidence": -4.25, "words": timed},
                           {"confidence": -30.0, "words": timed[:3]}]}
    p = write(tmp_path, json.dumps(doc, indent=2), "ds.json")
    assert detect_format(p) == "deepspeech"
    (u,) = units_of(REGISTRY["deepspeech"], p, INV, RULES)
    assert u.words == words and (u.records[1]["start_s"], u.records[1]["end_s"]) == (0.3, 0.55)
    srt = cli("punctuate", p, "--format", "srt").stdout
    assert srt.startswith("1\n00:00:00,000 --> ")
    out = cli("punctuate", p).stdout.split()
    assert [re.sub(r"[^\w']", "", x).lower() for x in out] == [re.sub(r"[^\w']", "", x) for x in words]
    for body, why in (('{"transcripts": [3]}', "'transcripts' a list of objects"),
                      ('{"transcripts": [{"words": [{"word": "so", "start_time": "x"}]}]}',
                       "the start must be a time")):
        r = cli("punctuate", write(tmp_path, body, "bad.json"), ok=False)
        assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1 and why in r.stderr, r.stderr
        assert "bad.json:1" in r.stderr


# ------------------------------------------------------------------ Azure Speech (SDK, REST)

def test_azure_speech_results_are_phrases_of_one_stream(tmp_path):
    """The Speech SDK's results with detailed output, one a line or pretty-printed: a phrase a unit, the first
    alternative's words at their ticks; a phrase without words shares its time; NoMatch results skipped."""
    words = [{"Word": w, "Offset": 5_000_000 + 3_000_000 * k, "Duration": 2_500_000}
             for k, w in enumerate(["so", "what", "do", "you", "think"])]
    objs = [{"Id": "a", "RecognitionStatus": "Success", "Offset": 5_000_000, "Duration": 15_000_000,
             "DisplayText": "So what do you think?", "NBest": [{"Confidence": 0.9, "Lexical": "so what do you think",
                                                                "Words": words}, {"Lexical": "sow what"}]},
            {"RecognitionStatus": "InitialSilenceTimeout", "Offset": 20_000_000, "Duration": 0},
            {"RecognitionStatus": "Success", "Offset": 30_000_000, "Duration": 10_000_000,
             "DisplayText": "I mean, fine."}]
    for text in ("".join(json.dumps(o) + "\n" for o in objs), "\n".join(json.dumps(o, indent=2) for o in objs)):
        p = write(tmp_path, text, "az.json")
        assert detect_format(p) == "azure-speech" and REGISTRY["azure-speech"].one_stream
        units = units_of(REGISTRY["azure-speech"], p, INV, RULES)
        assert [u.words for u in units] == [["so", "what", "do", "you", "think"], ["i", "mean", "fine"]]
        assert (units[0].records[1]["start_s"], units[0].records[1]["end_s"]) == (0.8, 1.05)
        assert units[1].records[0]["start_s"] == 3.0 and units[1].records[-1]["end_s"] == 4.0
    srt = cli("punctuate", p, "--format", "srt").stdout
    assert srt.startswith("1\n00:00:00,500 --> ")
    r = cli("punctuate", write(tmp_path, '{"NBest": [{"Words": [{"Word": 3}]}]}\n', "bad.json"), ok=False)
    assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1 and "bad.json:1, word 1" in r.stderr


# ------------------------------------------------------------------ PocketSphinx

def pocketsphinx_lines(words: list[str], per_line: int = 40) -> str:
    """`pocketsphinx live FILE` output for `words`: an utterance a line, 0.3 s a word, `<sil>` at each start,
    `</s>` at each end, every fifth word a second pronunciation (`word(2)`), as its JSON writes them."""
    lines, t = [], 0.0
    for k in range(0, len(words), per_line):
        chunk, b = words[k:k + per_line], t
        ws = [{"b": round(t, 3), "d": 0.1, "p": 1.0, "t": "<sil>"}]
        t += 0.1
        for j, word in enumerate(chunk):
            ws.append({"b": round(t, 3), "d": 0.3, "p": 0.98, "t": word + ("(2)" if j % 5 == 4 else "")})
            t += 0.3
        ws.append({"b": round(t, 3), "d": 0.05, "p": 1.0, "t": "</s>"})
        t += 0.05
        lines.append(json.dumps({"b": round(b, 3), "d": round(t - b, 3), "p": 0.9, "t": " ".join(chunk), "w": ws},
                                separators=(",", ":")))
    return "\n".join(lines) + "\n"


def test_pocketsphinx_json_is_one_stream_of_its_words(tmp_path, iwslt, tiny_package):
    """PocketSphinx's JSON lines: told from other JSON by shape, fillers and variant numbers are not words, the
    words pass through (case and marks set only), sentences run across its utterances, times give subtitles; a
    line without words' times shares the utterance's; a bad line is one line naming it."""
    words = [ln.split("\t")[0].lower() for ln in (iwslt / "test2011").read_text().splitlines() if ln.strip()][:400]
    p = write(tmp_path, pocketsphinx_lines(words), "live.json")
    assert detect_format(p) == "pocketsphinx" and REGISTRY["pocketsphinx"].one_stream
    units = units_of(REGISTRY["pocketsphinx"], p, INV, RULES)
    assert [x for u in units for x in u.words] == words and len(units) == 10
    assert [units[0].records[1][k] for k in ("index", "start_s", "end_s")] == [2, 0.4, 0.7]
    out = cli("punctuate", p).stdout.split()
    # a filler is no word: it passes through in its place, unlabelled (`<sil>` first, `</s>` last in each line)
    assert out.count("<sil>") == out.count("</s>") == len(units) and out[0] == "<sil>" and out[-1] == "</s>"
    out = [x for x in out if x not in ("<sil>", "</s>")]
    assert [re.sub(r"[^\w']", "", x).lower() for x in out] == [re.sub(r"[^\w']", "", x) for x in words]
    assert "(2)" not in " ".join(out)
    txt = write(tmp_path, "".join(" ".join(words[k:k + 40]) + "\n" for k in range(0, 400, 40)), "live.txt")
    plain = tiny_package.pkt  # a model that reads words only: its times weigh nothing
    rows = cli("punctuate", p, "--format", "twocol", "-m", plain).stdout
    assert rows == cli("punctuate", txt, "--format", "twocol", "-m", plain).stdout  # one stream, as a text's lines are
    srt = cli("punctuate", p, "--format", "srt").stdout
    assert "00:00:00,100 --> " in srt  # the first word's time, after the filler
    q = write(tmp_path, '{"b":1.0,"d":2.0,"p":1.0,"t":"<s> so what do you think </s>"}\n', "single.json")
    got = units_of(REGISTRY["pocketsphinx"], q, INV, RULES)
    assert got[0].words == ["so", "what", "do", "you", "think"] and got[0].records[0]["start_s"] == 1.0
    assert got[0].records[-1]["end_s"] == 3.0
    for body, why in (('{"b":0,"d":1,"t":"so","w":[{"b":0,"d":1}]}', "word 1: expected an object with a 't'"),
                      ('{"b":0,"d":-1,"t":"so","w":[]}', "the duration must be a time from 0 to")):
        r = cli("punctuate", write(tmp_path, body + "\n", "bad.json"), "--input-format", "pocketsphinx", ok=False)
        assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1 and why in r.stderr, r.stderr
        assert "bad.json:1" in r.stderr


def test_malformed_nemo_and_vosk(tmp_path):
    p = write(tmp_path, json.dumps(NEMO[0]) + "\n" + '{"audio_filepath": "b.wav", "pred_text": "so}\n')
    assert detect_format(p) == "nemo"
    assert re.fullmatch(rf"{re.escape(str(p))}:2: not valid JSON \(Unterminated string starting at, column 42\)",
                        raised_error(lambda: units_of(nemo_units, p, INV, RULES)))
    for obj, says in [({"pred_text": 3}, "'pred_text' must be a string, got 3"),
                      ({"pred_text": None, "text": 3}, "'pred_text' is null and there is no 'text' string; "
                                                       "give the words in 'pred_text'"),
                      ({"duration": 1.0}, "no 'pred_text' or 'text' string")]:
        p = write(tmp_path, json.dumps({"audio_filepath": "b.wav", **obj}) + "\n")
        assert raised_error(lambda: units_of(nemo_units, p, INV, RULES)) == f"{p}:1: {says}"
    objs = vosk_text([VOSK_RESULT]) + '{\n  "result" : [{"word": "so", "start": 1.0,, "end": 2}]\n}\n'
    p = write(tmp_path, objs)
    assert re.fullmatch(rf"{re.escape(str(p))}:19: not valid JSON \(Expecting property name .*, column \d+\)",
                        raised_error(lambda: units_of(vosk_units, p, INV, RULES)))
    p = write(tmp_path, vosk_text([VOSK_RESULT, {"result": [{"conf": 1}]}]))
    assert raised_error(lambda: units_of(vosk_units, p, INV, RULES)) == \
        f"{p}:18: word 1 is not an object with a 'word' string"
    p = write(tmp_path, vosk_text([VOSK_RESULT, [1, 2]]))
    assert raised_error(lambda: units_of(vosk_units, p, INV, RULES)) == f"{p}:18: expected a Vosk result object"


# ------------------------------------------------------------------ hostile JSON (tests/bad_inputs/json)

BAD_JSON = Path(__file__).parents[2] / "bad_inputs" / "json"
HOSTILE = {  # file: (line, what its one-line error says after FILE:LINE), or None: read as plain text
    "deep_text.jsonl": (2, "not valid JSON (arrays and objects nested more than 100 deep, column 121)"),
    "deep_array.json": None,  # no JSON format reads a list of lists: detected as one plain word
    "deep_whisper.json": (2, "not valid JSON (arrays and objects nested more than 100 deep, column 110)"),
    "deep_vosk.json": (2, "not valid JSON (arrays and objects nested more than 100 deep, column 134)"),
    "deep_nemo.json": (2, "not valid JSON (arrays and objects nested more than 100 deep, column 155)"),
    "long_number.jsonl": (2, "not valid JSON (a number of more than 4300 digits, column 8)"),
    "lone_surrogate.jsonl": (2, "not valid JSON (\\ud800 is half of a UTF-16 pair, not a character, column 26)"),
    "nemo_pred_text_null.json": (1, "'pred_text' is null and there is no 'text' string"),
}


def test_every_hostile_json_file_has_its_case():
    assert sorted(p.name for p in BAD_JSON.iterdir() if p.suffix != ".py") == sorted(HOSTILE)


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_json_is_one_line_naming_file_and_line(tmp_path, punct, name):
    """json alone overflows the stack on the deep files (an internal error), reads integers it cannot
    convert and halves of UTF-16 pairs no output can write: each is one line naming file and line."""
    from punctkit.punctuator import punctuate_file

    src, out = BAD_JSON / name, tmp_path / "out"
    if HOSTILE[name] is None:
        punctuate_file(punct, src, out)
        got, words = out.read_text().split(), src.read_text().split()
        assert len(got) == len(words)  # the words pass through (each may take a mark; the last ends a sentence)
        assert all(re.fullmatch(re.escape(w) + r"[.,?!]?", g) for g, w in zip(got, words))
        return
    line, says = HOSTILE[name]
    with pytest.raises(PunctkitError) as e:
        punctuate_file(punct, src, out)
    assert str(e.value).startswith(f"{src}:{line}: {says}") and "\n" not in str(e.value)
    assert not out.exists()


def test_json_value_bounds():
    """files.json_value, the one JSON reader: json's own values up to MAX_JSON_DEPTH levels, errors at
    their place beyond (a JSONDecodeError, as syntax errors are, whatever the stack holds)."""
    from punctkit.files import MAX_JSON_DEPTH, json_value, parse_json

    def fails(text: str) -> tuple[str, int, int]:
        with pytest.raises(json.JSONDecodeError) as e:
            parse_json(text)
        return e.value.msg, e.value.lineno, e.value.colno

    n = MAX_JSON_DEPTH
    assert parse_json(" " + "[" * n + '"[{"' + "]" * n + " ") == json.loads("[" * n + '"[{"' + "]" * n)
    assert fails('{"a":\n' + "[" * (n + 1) + "]" * (n + 1) + "}") == (
        f"arrays and objects nested more than {n} deep", 2, n)  # the object is level 1
    assert fails("[" * 100_000)[1:] == (1, n + 1)  # past json's own recursion limit
    assert parse_json('"\\ud83d\\ude00 \\\\ud800"') == "\U0001F600 \\ud800"  # a pair; an escaped backslash
    assert fails('["a", "\\udc00"]') == ("\\udc00 is half of a UTF-16 pair, not a character", 1, 8)
    assert fails("[1, " + "7" * 5000 + "]")[0].startswith("a number of more than")
    assert fails('{"a": 1} {') == ("Extra data", 1, 10)
    assert json_value('  {"a": 1} {', 0) == ({"a": 1}, 10)


# ------------------------------------------------------------------ writers with probability rows

def test_jsonl_and_twocol_show_probability_rows(tmp_path):
    p = write(tmp_path, SAMPLES["jsonl"], "in.jsonl")
    u = units_of(REGISTRY["jsonl"], p, INV, RULES)[0]
    rows = np.array([[0.1, 0.2, 0.6, 0.1]], dtype=np.float32)
    opts = OutputOptions(INV, src=p)
    obj = json.loads(next(iter(jsonl_out(Labelled(u, ["PERIOD"], ["So."], rows), opts))))
    assert obj["probs"] == [{"O": 0.1, "COMMA": 0.2, "PERIOD": 0.6, "QUESTION": 0.1}]
    assert obj["labels"] == ["PERIOD"] and obj["words"][0]["punctuated"] == "So."
    assert "probs" not in json.loads(next(iter(jsonl_out(Labelled(u, ["PERIOD"], ["So."]), OutputOptions(src=p)))))
    assert list(twocol_emit(Labelled(u, ["PERIOD"], ["So."], rows), opts)) == ["so\tPERIOD\t0.6000", ""]
    assert list(twocol_emit(Labelled(u, ["COMMA"], ["So,"]), OutputOptions(src=p))) == ["so\tCOMMA", ""]
    # the third column reads back: detected as twocol, the probability left out
    out = tmp_path / "probs.tsv"
    rows3 = np.array([[0.1, 0.2, 0.6, 0.1], [0.9, 0.05, 0.03, 0.02], [0.0, 0.0, 1.0, 0.0]], dtype=np.float32)
    u3 = units_of(REGISTRY["text"], write(tmp_path, "so then go\n", "t.txt"), INV, RULES)[0]
    out.write_text("\n".join(twocol_emit(Labelled(u3, ["COMMA", O, "PERIOD"], ["So,", "then", "go."], rows3), opts))
                   + "\n")
    assert out.read_text().splitlines()[0] == "so\tCOMMA\t0.2000"
    assert detect_format(out) == "twocol"
    back, _ = read(out)
    assert [(b.words, b.labels) for b in back] == [(["so", "then", "go"], ["COMMA", O, "PERIOD"])]


# ------------------------------------------------------------------ the command, end to end

@pytest.fixture(scope="module")
def model() -> Path:
    if not LEGACY.is_file():
        pytest.skip("tests/fixtures/legacy/word.pkt is missing")
    return LEGACY


def test_punctuate_whisper_words_pass_through(tmp_path, punct):
    from punctkit.punctuator import punctuate_file

    p = write(tmp_path, json.dumps(WHISPER))
    punctuate_file(punct, p, tmp_path / "out")
    text = (tmp_path / "out").read_text()
    lines = text.splitlines()
    assert len(lines) == 4 and lines[2] == ""  # a line a segment, the empty one empty
    strip = lambda s: [re.sub(r"[,.?!;:]+$", "", t).lower() for t in s.split()]  # noqa: E731
    assert strip(text) == ["so", "what", "do", "you", "think", "i", "mean", "20", "people"]
    punctuate_file(punct, p, tmp_path / "kept", keep_input_marks=True)
    kept = (tmp_path / "kept").read_text().split()
    assert kept[0].endswith(",") and kept[4].endswith("?")  # Whisper's own marks kept


def test_punctuate_detects_json_on_stdin_and_nemo_output(tmp_path, model):
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "punctkit.cli", "punctuate", "-m", str(model), "--format", "nemo"],
                       input=SAMPLES["nemo"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = [json.loads(line) for line in r.stdout.splitlines()]
    assert [{k: v for k, v in o.items() if k != "pred_text_punctuated"} for o in out] == NEMO
    assert [re.sub(r"[,.?]", "", o["pred_text_punctuated"].lower()) for o in out] == ["so what do you think",
                                                                                    "i mean twenty people"]


def test_malformed_input_is_one_line_on_the_command_line(tmp_path, model):
    p = write(tmp_path, json.dumps(WHISPER)[:-30])
    r = cli("punctuate", "-m", model, p, ok=False)
    assert r.returncode == 1 and len(r.stderr.splitlines()) == 1
    assert re.match(rf"punctkit: error: {re.escape(str(p))}:1: not valid JSON \(", r.stderr)


def test_probs_only_for_the_formats_that_show_them(tmp_path, punct):
    from punctkit.punctuator import punctuate_file

    src = write(tmp_path, SAMPLES["text"], "t.txt")
    with pytest.raises(PunctkitError, match=r"^--probs: --format readable cannot show probabilities "
                                            r"\(formats that do: twocol, jsonl, timed-json\)$"):
        punctuate_file(punct, src, tmp_path / "o", probs=True)
    assert not (tmp_path / "o").exists()


def test_probs_end_to_end(tmp_path, punct):
    """--probs through punctuate: each word's distribution, and the chosen label's probability
    """
    from punctkit.punctuator import punctuate_file

    src = write(tmp_path, json.dumps(WHISPER))
    punctuate_file(punct, src, tmp_path / "t.json", fmt="timed-json", probs=True)
    punctuate_file(punct, src, tmp_path / "t.tsv", fmt="twocol", probs=True)
    words = [w for line in (tmp_path / "t.json").read_text().splitlines() for w in json.loads(line)["words"]]
    labels = list(punct.inventory.labels)
    assert all(list(w["probs"]) == labels and abs(sum(w["probs"].values()) - 1) < 0.01 for w in words)
    # greedy: the chosen label is the likeliest, but at the stream's end, which ends a sentence
    # (decode/stream_end.py): there `p` is the chosen label's probability
    assert all(w["p"] == max(w["probs"].values()) for w in words[:-1])
    assert words[-1]["p"] in words[-1]["probs"].values()
    col3 = [float(line.split("\t")[2]) for line in (tmp_path / "t.tsv").read_text().splitlines() if line]
    assert col3 == pytest.approx([w["p"] for w in words], abs=1e-4)


@pytest.mark.parametrize("times", ["nan 0.5", "0.0 inf", "-inf 0.5", "0.0 NaN"])
def test_ctm_times_must_be_finite(tmp_path, times):
    from punctkit.data.formats.asr import read_ctm

    p = write(tmp_path, f"u1 1 0.0 0.5 so\nu1 1 {times} well\n")
    start, dur = times.split()
    assert raised_error(lambda: list(read_ctm(p))) == \
        f"{p}:2 (utterance u1): the {'start (field 3)' if start != '0.0' else 'duration (field 4)'} must be a time " \
        f"from 0 to 10000000 seconds (finite, not negative), got '{start if start != '0.0' else dur}'; correct that " \
        f"time in the input"


def test_ids_with_white_space_only_where_lines_split_on_them(tmp_path):
    from punctkit.data.datadir import write_data_dir
    from punctkit.data.formats import Utterance
    from punctkit.data.formats.asr import ctm_out, jsonl_units
    from punctkit.data.formats.text import kaldi_text_out, readable_out

    p = write(tmp_path, json.dumps({"id": "talk 1", "words": [w("so", 0.0, 0.5)]}) + "\n", "a.jsonl")
    utt = units_of(jsonl_units, p, INV, RULES)[0]
    assert utt.uttid == "talk 1"
    done = Labelled(utt, ["PERIOD"], ["So."])
    assert json.loads(next(jsonl_out(done, OutputOptions(src=p))))["id"] == "talk 1"  # JSON holds any id
    for out, what in ((readable_out, "an `uttid text` line"), (ctm_out, "a CTM line")):
        assert raised_error(lambda: list(out(done, OutputOptions(src=p)))) == (
            f"{p}:1: utterance id 'talk 1' holds white space, which {what} cannot hold: "
            "use --format jsonl (or ids of one word)")
    u = Utterance("talk 1", ["so"], ["PERIOD"])
    assert "Kaldi text line cannot hold" in raised_error(lambda: list(kaldi_text_out([u])))
    assert "utterance id 'talk 1' is empty or holds white space" in raised_error(
        lambda: write_data_dir(tmp_path / "d", [u], INV))
    assert not (tmp_path / "d").exists()
