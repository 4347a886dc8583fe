"""The ASR services' JSON transcripts (punctkit/data/formats/services.py): each told apart by its shape,
read as one stream of units with its words, times in seconds and speakers, and a bad document one line
naming the file, its line and where in it. The documents are written here in each service's documented
shape (the words pass through every output format: tests/contracts/test_words_pass_through.py)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from punct_util import cli, units_of
from punctkit.data.formats import REGISTRY, detect_format
from punctkit.data.formats.services import SERVICES
from punctkit.data.labels import INVENTORIES, default_substitution
from punctkit.files import PunctkitError

INV = INVENTORIES["truecase4"]
RULES = default_substitution(INV)
SAID = [("hello", 0.5, 0.9), ("my", 1.0, 1.2), ("name", 1.2, 1.5), ("is", 1.5, 1.6), ("jane", 1.6, 2.0)]
ASKED = [("how", 2.5, 2.7), ("are", 2.7, 2.8), ("you", 2.8, 3.0)]

# one document a service, as each writes it: two turns (SAID by one speaker, ASKED by another)
DOCS = {
    "rev": {"monologues": [
        {"speaker": k, "elements": [e for w, s, t in turn for e in (
            {"type": "text", "value": w, "ts": s, "end_ts": t, "confidence": 0.98}, {"type": "punct", "value": " "})]
         + [{"type": "unknown", "value": "<laugh>"}]}
        for k, turn in enumerate((SAID, ASKED))]},
    "aws": {"jobName": "call-1", "accountId": "1", "status": "COMPLETED", "results": {
        "transcripts": [{"transcript": "Hello my name is Jane. How are you?"}],
        "items": [{"id": i, "type": "pronunciation", "start_time": f"{s:.2f}", "end_time": f"{t:.2f}",
                   "speaker_label": f"spk_{k}", "alternatives": [{"confidence": "0.99", "content": w}]}
                  for i, (k, (w, s, t)) in enumerate([(k, x) for k, turn in enumerate((SAID, ASKED)) for x in turn])]}},
    "speechmatics": {"format": "2.9", "job": {"id": "j"}, "metadata": {}, "results": [
        {"type": "word", "start_time": s, "end_time": t, "alternatives": [{"content": w, "confidence": 1.0,
                                                                           "language": "en", "speaker": f"S{k + 1}"}]}
        for k, turn in enumerate((SAID, ASKED)) for w, s, t in turn]},
    "google": {"results": [
        {"alternatives": [{"transcript": " ".join(w for w, _, _ in turn), "confidence": 0.93, "words": [
            {"startTime": f"{s:.3f}s", "endTime": f"{t:.3f}s", "word": w} for w, s, t in turn]}],
         "resultEndTime": f"{turn[-1][2]:.3f}s", "languageCode": "en-us"} for turn in (SAID, ASKED)],
        "totalBilledTime": "4s"},
    "watson": {"result_index": 0, "results": [
        {"final": True, "alternatives": [{"transcript": " ".join(w for w, _, _ in turn) + " ", "confidence": 0.9,
                                          "timestamps": [[w, s, t] for w, s, t in turn]}]} for turn in (SAID, ASKED)]},
    "deepgram": {"metadata": {"request_id": "r", "duration": 3.1, "channels": 1}, "results": {"channels": [
        {"alternatives": [{"transcript": "hello my name is jane how are you", "confidence": 0.99, "words": [
            {"word": w, "start": s, "end": t, "confidence": 0.99, "speaker": k, "punctuated_word": w.title() + "."}
            for k, turn in enumerate((SAID, ASKED)) for w, s, t in turn]}]}]}},
    "assemblyai": {"id": "t1", "status": "completed", "audio_url": "https://example.org/call.mp3",
                   "text": "Hello, my name is Jane. How are you?", "audio_duration": 3,
                   "words": [{"text": w, "start": round(s * 1000), "end": round(t * 1000), "confidence": 0.97,
                              "speaker": "AB"[k]} for k, turn in enumerate((SAID, ASKED)) for w, s, t in turn]},
    "huggingface": {"text": " Hello my name is Jane.", "chunks": [
        {"text": f" {w}", "timestamp": [s, t]} for w, s, t in SAID + ASKED]},  # no turns: one unit
    "azure": {"source": "call.wav", "timestamp": "2026-01-01T00:00:00Z", "durationInTicks": 31000000,
              "recognizedPhrases": [
                  {"recognitionStatus": "Success", "channel": 0, "speaker": k + 1,
                   "offsetInTicks": round(turn[0][1] * 1e7), "nBest": [
                       {"confidence": 0.9, "lexical": " ".join(w for w, _, _ in turn), "display": "", "words": [
                           {"word": w, "offsetInTicks": round(s * 1e7), "durationInTicks": round((t - s) * 1e7),
                            "confidence": 0.9} for w, s, t in turn]}]}
                  for k, turn in enumerate((SAID, ASKED))]},
}


def write(tmp_path: Path, name: str, doc: object, indent: int | None = 2) -> Path:
    p = tmp_path / f"{name}.json"
    p.write_text(json.dumps(doc, indent=indent), encoding="utf-8")
    return p


def units(name: str, path: Path) -> list:
    return units_of(REGISTRY[name], path, INV, RULES)


def test_every_service_the_registry_names_has_a_document_here():
    assert set(SERVICES) == set(DOCS)


@pytest.mark.parametrize("name", sorted(DOCS))
@pytest.mark.parametrize("indent", [2, None])
def test_a_service_s_document_is_told_by_its_shape(name, indent, tmp_path):
    assert detect_format(write(tmp_path, name, DOCS[name], indent)) == name


@pytest.mark.parametrize("name", sorted(DOCS))
def test_a_service_s_words_times_and_turns_are_read(name, tmp_path):
    got = units(name, write(tmp_path, name, DOCS[name]))
    turns = [SAID + ASKED] if name == "huggingface" else [SAID, ASKED]
    assert [u.words for u in got] == [[w for w, _, _ in turn] for turn in turns]
    times = [t for u in got for r in u.records for t in (r["start_s"], r["end_s"])]
    assert times == pytest.approx([t for _, s, e in SAID + ASKED for t in (s, e)], abs=1e-6)
    assert all(not u.has_id and u.uttid == f"{name}.json-{k:06d}" for k, u in enumerate(got, 1))
    assert REGISTRY[name].one_stream and REGISTRY[name].times


def test_a_long_document_is_told_from_its_head(tmp_path):
    """A transcript longer than the 4 MiB decoded to tell a document's kind: its markers say it."""
    items = DOCS["aws"]["results"]["items"] * 4_000
    p = write(tmp_path, "long", {"jobName": "j", "results": {"transcripts": [{"transcript": ""}], "items": items}},
              indent=None)
    assert p.stat().st_size > 1 << 22
    assert detect_format(p) == "aws"
    google = write(tmp_path, "g", {"results": DOCS["google"]["results"] * 7_000}, indent=None)
    assert google.stat().st_size > 1 << 22 and detect_format(google) == "google"  # `alternatives` alone would say Vosk


def test_rev_marks_are_the_words_marks_and_tags_are_not_words(tmp_path):
    doc = {"monologues": [{"speaker": 0, "elements": [
        {"type": "text", "value": "so", "ts": 0.1, "end_ts": 0.2}, {"type": "punct", "value": ","},
        {"type": "punct", "value": " "}, {"type": "unknown", "value": "<inaudible>"},
        {"type": "text", "value": "ok", "ts": 0.5, "end_ts": 0.6}, {"type": "punct", "value": "."}]}]}
    (u,) = units("rev", write(tmp_path, "rev", doc))
    assert u.words == ["so", "ok"] and u.marks == ["COMMA", "PERIOD"]


def test_aws_speakers_from_the_older_speaker_labels(tmp_path):
    """Items without `speaker_label` take it from `speaker_labels.segments` (by start time); marks join
    the word before."""
    doc = json.loads(json.dumps(DOCS["aws"]))
    for it in doc["results"]["items"]:
        del it["speaker_label"]
    doc["results"]["items"].insert(5, {"type": "punctuation", "alternatives": [{"content": "."}]})
    doc["results"]["speaker_labels"] = {"speakers": 2, "segments": [
        {"speaker_label": f"spk_{k}", "items": [{"start_time": f"{s:.2f}", "speaker_label": f"spk_{k}"}
                                              for _, s, _ in turn]} for k, turn in enumerate((SAID, ASKED))]}
    got = units("aws", write(tmp_path, "aws", doc))
    assert [len(u.words) for u in got] == [5, 3] and got[0].marks[-1] == "PERIOD"
    assert [u.source["speaker"] for u in got] == ["spk_0", "spk_1"]


def test_google_diarization_reads_the_last_result_alone(tmp_path):
    """Google's diarized response repeats every word in its last result, with speaker tags: read once."""
    doc = json.loads(json.dumps(DOCS["google"]))
    doc["results"].append({"alternatives": [{"transcript": "", "words": [
        {"startTime": f"{s}s", "endTime": f"{t}s", "word": w, "speakerTag": k + 1}
        for k, turn in enumerate((SAID, ASKED)) for w, s, t in turn]}]})
    got = units("google", write(tmp_path, "google", doc))
    assert [u.words for u in got] == [[w for w, _, _ in SAID], [w for w, _, _ in ASKED]]
    # the protobuf forms of a time: {"seconds", "nanos"}, and v2's startOffset
    doc = {"results": [{"alternatives": [{"words": [
        {"startOffset": {"seconds": "1", "nanos": 500000000}, "endOffset": "2s", "word": "hi"}]}]}]}
    (u,) = units("google", write(tmp_path, "g2", doc))
    assert (u.records[0]["start_s"], u.records[0]["end_s"]) == (1.5, 2.0)


def test_deepgram_utterances_are_the_units_and_its_own_punctuation_is_not_read(tmp_path):
    doc = json.loads(json.dumps(DOCS["deepgram"]))
    words = doc["results"]["channels"][0]["alternatives"][0]["words"]
    doc["results"]["utterances"] = [{"start": 0.5, "end": 2.0, "speaker": 0, "transcript": "", "words": words[:5]},
                                    {"start": 2.5, "end": 3.0, "speaker": 1, "transcript": "", "words": words[5:]}]
    got = units("deepgram", write(tmp_path, "dg", doc))
    assert [u.words for u in got] == [[w for w, _, _ in SAID], [w for w, _, _ in ASKED]]  # once, not twice
    assert all(m == "O" for u in got for m in u.marks)  # `punctuated_word` ("Hello.") is Deepgram's guess


def test_a_hugging_face_pipeline_s_segment_chunks_give_words_without_times(tmp_path):
    doc = {"text": " so what now", "chunks": [{"text": " so what", "timestamp": [0.0, 1.0]},
                                              {"text": " now", "timestamp": [1.0, None]}]}
    (u,) = units("huggingface", write(tmp_path, "hf", doc))
    assert u.words == ["so", "what", "now"]
    assert [(r["start_s"], r["end_s"]) for r in u.records] == [(None, None), (None, None), (1.0, None)]


def test_documents_without_word_times_are_read_from_their_text(tmp_path):
    aws = {"jobName": "j", "results": {"transcripts": [{"transcript": "so what now"}], "items": []}}
    (u,) = units("aws", write(tmp_path, "aws", aws))
    assert u.words == ["so", "what", "now"] and u.records[0]["start_s"] is None
    assembly = {"audio_url": "a", "text": "so what", "words": []}
    assert [u.words for u in units("assemblyai", write(tmp_path, "a", assembly))] == [["so", "what"]]


@pytest.mark.parametrize("name, edit, message", [
    ("rev", lambda d: d["monologues"][1]["elements"].__setitem__(2, "x"),
     r":1 \(monologue 2, element 3\): an element must be an object"),
    ("rev", lambda d: d["monologues"][0]["elements"][0].__setitem__("ts", "soon"),
     r":1 \(monologue 1, element 1\): a time must be a number of seconds; got 'soon'"),
    ("aws", lambda d: d["results"]["items"][3].__setitem__("start_time", "-1"),
     r":1 \(item 4\): the time must be a time from 0 to 10000000 seconds \(finite, not negative\), got '-1'"),
    ("google", lambda d: d["results"][0]["alternatives"][0]["words"][1].pop("word"),
     r":1 \(result 1, word 2\): a word needs a 'word' string"),
    ("watson", lambda d: d["results"][1]["alternatives"][0]["timestamps"].__setitem__(0, ["how", 1]),
     r":1 \(result 2, timestamp 1\): a timestamp must be \[word, start, end\]"),
    ("assemblyai", lambda d: d["words"][0].__setitem__("end", float("inf")), None),
    ("azure", lambda d: d["recognizedPhrases"][0]["nBest"][0].__setitem__("words", {}),
     r":1 \(phrase 1\): 'words' must be a list"),
])
def test_a_bad_document_is_one_line_naming_where(name, edit, message, tmp_path):
    doc = json.loads(json.dumps(DOCS[name]))
    edit(doc)
    p = tmp_path / f"{name}.json"
    p.write_text(json.dumps(doc), encoding="utf-8")  # Infinity: JSON as Python writes it, refused by the reader
    with pytest.raises(PunctkitError) as e:
        units(name, p)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(str(p)) and "--input-format" in msg
    if message:
        assert re.search(message, msg), msg


def test_a_document_of_another_service_named_by_input_format_is_one_line(tmp_path):
    p = write(tmp_path, "rev", DOCS["rev"])
    with pytest.raises(PunctkitError, match=r"rev.json:1: expected a JSON object as Amazon Transcribe writes it "
                                            r"\(with results.items or results.transcripts\)"):
        units("aws", p)


def test_punctuate_a_service_s_transcript_into_subtitles(tmp_path):
    """The shipped default model on an Amazon Transcribe file: its words as given, in cues with its times."""
    p = write(tmp_path, "aws", DOCS["aws"])
    out = tmp_path / "out.srt"
    r = cli("punctuate", p, "--format", "srt", "-o", out)
    assert "aws" not in r.stdout
    blocks = [b.splitlines() for b in out.read_text(encoding="utf-8").strip().split("\n\n")]
    words = [w for b in blocks for ln in b[2:] for w in ln.split()]
    assert [w.strip(".,?!").lower() for w in words] == [w for w, _, _ in SAID + ASKED]
    assert blocks[0][1].startswith("00:00:00,500 --> ") and blocks[-1][1].endswith(" --> 00:00:03,000")
