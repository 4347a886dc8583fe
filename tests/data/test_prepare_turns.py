"""`punctkit prepare` and `convert --to datadir` of every format that says who speaks or when (an stm, a WhisperX
JSON, an ASR service's JSON, a CTM: turns.transcript_turns, read by punctuate's reader) write an utterance a turn,
`utt2spk` its speaker, `segments` (and a `ctm` where words have times of their own), which `validate-data-dir`
accepts and `decode` reads as punctuate reads the input; an input without speakers or times is written as before
(docs/formats.md, "Data directories of speaker turns")."""
from __future__ import annotations

import json
import re
import wave
from pathlib import Path

import pytest

from punct_util import cli, cli_error, decode_reads_its_turns, twocol_marks
from punctkit.data.datadir import read_data_dir, read_table
from punctkit.data.prepare import prepare
from punctkit.data.timing import read_timing

CALL = Path(__file__).resolve().parents[3] / "shared" / "data" / "earnings22" / "calls" / "4470684.aligned.nlp"

# two recordings, each with two speakers; bob speaks twice in a row (two segments: two utterances); `<unk>` is no
# word; marks attached or standing alone (`Hello ,`), a segment without words (left out, as Kaldi's data prep does)
STM = """;; two recordings
rec1 1 alice 0.50 2.75 Hello , how are you ?
rec1 1 bob 3.00 4.20 I'm fine. <unk> Thanks!
rec1 1 bob 4.50 5.10 And you?
rec1 1 inter_segment_gap 5.10 6.00 ignore_time_segment_in_scoring
rec2 1 carol 0.00 1.50 Good morning, Dr. Smith.
rec2 1 alice 1.80 2.90 Morning.
"""


def files(d: Path) -> list[str]:
    return sorted(f.name for f in d.iterdir())


def write_wav(path: Path, seconds: float, rate: int = 8000) -> Path:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(b"\0\0" * int(seconds * rate))
    return path


def test_stm_of_two_recordings_gives_a_segment_an_utterance_and_validates(tmp_path):
    """Each stm segment with words is an utterance of its speaker (`<reco>-<speaker>`, the stm's recordings kept as
    the stm names them, so its `wav.scp` fits), with the segment's `segments` line (its begin and end exactly, marks
    standing alone at its edge or not) and no ctm (its words have no times of their own); the words and labels are
    the input's; `validate-data-dir` accepts the directory with the recordings' wav.scp."""
    stm = tmp_path / "talks.stm"
    stm.write_text(STM)
    d = tmp_path / "dev"
    prepare([stm], d, inventory="truecase4", show_progress=False)
    ids = [f"dev-{k:05d}" for k in range(1, 6)]
    assert read_table(d / "text") == dict(zip(ids, ["Hello how are you", "I'm fine Thanks", "And you",
                                                    "Good morning Dr. Smith", "Morning"]))
    assert read_table(d / "labels")["dev-00001"] == "C_COMMA L_O L_O L_QUESTION"
    assert read_table(d / "labels")["dev-00002"] == "C_O L_PERIOD C_PERIOD"
    assert read_table(d / "utt2spk") == dict(zip(ids, ["rec1-alice", "rec1-bob", "rec1-bob", "rec2-carol",
                                                       "rec2-alice"]))
    assert read_table(d / "segments") == dict(zip(ids, ["rec1 0.5 2.75", "rec1 3 4.2", "rec1 4.5 5.1",
                                                        "rec2 0 1.5", "rec2 1.8 2.9"]))
    assert files(d) == ["inventory", "labels", "prepare.log", "segments", "spk2utt", "text", "utt2spk"]
    assert "non-speech tokens skipped (<unk>): 1" in (d / "prepare.log").read_text()
    r = cli("validate-data-dir", d, ok=False)
    assert r.returncode == 1 and "wav.scp" in r.stdout + r.stderr  # segments need their recordings
    (d / "wav.scp").write_text(f"rec1 {write_wav(tmp_path / 'rec1.wav', 6.0)}\n"
                               f"rec2 {write_wav(tmp_path / 'rec2.wav', 3.0)}\n")
    cli("validate-data-dir", d)
    (d / "wav.scp").write_text(f"rec1 {tmp_path / 'rec1.wav'}\nrec2 {write_wav(tmp_path / 'short.wav', 2.0)}\n")
    assert "rec2" in cli("validate-data-dir", d, ok=False).stdout  # a segment past its recording's end is seen

    # one recording: the document's id, as an NLP call's; convert names it by the input's file
    one = tmp_path / "one.stm"
    one.write_text("".join(STM.splitlines(keepends=True)[:3]))
    prepare([one], tmp_path / "o", show_progress=False)
    assert read_table(tmp_path / "o" / "segments") == {"o-00001": "o 0.5 2.75", "o-00002": "o 3 4.2"}
    assert read_table(tmp_path / "o" / "utt2spk") == {"o-00001": "o-alice", "o-00002": "o-bob"}
    assert read_table(tmp_path / "o" / "labels") == {"o-00001": "COMMA O O QUESTION", "o-00002": "O PERIOD PERIOD"}
    cli("convert", stm, tmp_path / "c", "--to", "datadir")
    assert read_table(tmp_path / "c" / "segments")["talks.stm-00004"] == "rec2 0 1.5"
    assert read_table(tmp_path / "c" / "utt2spk")["talks.stm-00005"] == "rec2-alice"


def test_stm_of_one_file_with_two_channels_names_them(tmp_path):
    """Recordings that one stm file field holds in two channels are `<file>-<channel>`, as Kaldi's."""
    stm = tmp_path / "call.stm"
    stm.write_text("sw1 A a 0.0 1.0 yes it is.\nsw1 B b 0.5 1.5 no.\n")
    prepare([stm], tmp_path / "d", show_progress=False)
    assert read_table(tmp_path / "d" / "segments") == {"d-00001": "sw1-A 0 1", "d-00002": "sw1-B 0.5 1.5"}
    assert read_table(tmp_path / "d" / "utt2spk") == {"d-00001": "sw1-A-a", "d-00002": "sw1-B-b"}


WHISPERX = {"segments": [
    {"start": 0.4, "end": 2.2, "text": " Hello there, how are you?", "speaker": "SPEAKER_00", "words": [
        {"word": "Hello", "start": 0.5, "end": 0.8, "score": 0.9}, {"word": "there,", "start": 0.85, "end": 1.1},
        {"word": "how", "start": 1.3, "end": 1.5}, {"word": "are", "start": 1.5, "end": 1.7},
        {"word": "you?", "start": 1.7, "end": 2.1}]},
    {"start": 3.0, "end": 4.0, "text": " Fine, thanks.", "speaker": "SPEAKER_01", "words": [
        {"word": "Fine,", "start": 3.0, "end": 3.3}, {"word": "thanks.", "start": 3.5, "end": 4.0}]},
    {"start": 4.5, "end": 5.0, "text": " Good.", "speaker": "SPEAKER_01", "words": [
        {"word": "Good.", "start": 4.6, "end": 5.0}]}],
    "word_segments": []}


def test_whisperx_json_gives_segments_and_a_ctm_from_the_segment_start(tmp_path):
    """A diarized WhisperX JSON: a segment an utterance of its speaker, `segments` from its first word's start to
    its last word's end, a ctm whose times count from that start; the words and marks are the input's."""
    src = tmp_path / "talk.json"
    src.write_text(json.dumps(WHISPERX))
    d = tmp_path / "wx"
    cli("prepare", src, "-o", d, "--inventory", "truecase4", "-q")
    assert read_table(d / "text") == {"wx-00001": "Hello there how are you", "wx-00002": "Fine thanks",
                                      "wx-00003": "Good"}
    assert read_table(d / "labels") == {"wx-00001": "C_O L_COMMA L_O L_O L_QUESTION", "wx-00002": "C_COMMA L_PERIOD",
                                        "wx-00003": "C_PERIOD"}
    assert read_table(d / "utt2spk") == {"wx-00001": "wx-SPEAKER_00", "wx-00002": "wx-SPEAKER_01",
                                         "wx-00003": "wx-SPEAKER_01"}
    assert read_table(d / "segments") == {"wx-00001": "wx 0.5 2.1", "wx-00002": "wx 3 4", "wx-00003": "wx 4.6 5"}
    assert (d / "ctm").read_text().splitlines() == [
        "wx-00001 1 0 0.3 Hello", "wx-00001 1 0.35 0.25 there", "wx-00001 1 0.8 0.2 how", "wx-00001 1 1 0.2 are",
        "wx-00001 1 1.2 0.4 you", "wx-00002 1 0 0.3 Fine", "wx-00002 1 0.5 0.5 thanks", "wx-00003 1 0 0.4 Good"]
    assert not (d / "utt2reco").exists()  # every utterance has its segment
    timing = read_timing(read_data_dir(d))
    assert timing.spans["wx-00002"].start == 3.0 and [round(b, 3) for _, b in timing.words["wx-00002"]] == [3.3, 4.0]

    # a word without times (WhisperX's numerals) cuts its segment there: the timed words keep theirs
    doc = json.loads(json.dumps(WHISPERX))
    doc["segments"][1]["words"].insert(1, {"word": "2"})
    src.write_text(json.dumps(doc))
    cli("prepare", src, "-o", tmp_path / "n", "-q")
    assert read_table(tmp_path / "n" / "text") == {"n-00001": "Hello there how are you", "n-00002": "Fine",
                                                   "n-00003": "2", "n-00004": "thanks", "n-00005": "Good"}
    assert "n-00003" not in read_table(tmp_path / "n" / "segments")
    assert read_table(tmp_path / "n" / "utt2reco")["n-00003"] == "n"


def test_a_services_json_with_speakers_gives_its_turns(tmp_path):
    """An AWS Transcribe JSON with speaker labels and punctuation items: a speaker turn an utterance, its marks the
    labels, segments and ctm from the items' times."""
    said = [("hello", 0.5, 0.9, ","), ("my", 1.0, 1.2, ""), ("name", 1.2, 1.5, ""), ("is", 1.5, 1.6, ""),
            ("Jane", 1.6, 2.0, ".")]
    asked = [("how", 2.5, 2.7, ""), ("are", 2.7, 2.8, ""), ("you", 2.8, 3.0, "?")]
    items = []
    for spk, turn in (("spk_0", said), ("spk_1", asked)):
        for w, s, t, p in turn:
            items.append({"type": "pronunciation", "start_time": f"{s:.2f}", "end_time": f"{t:.2f}",
                          "speaker_label": spk, "alternatives": [{"confidence": "0.99", "content": w}]})
            if p:
                items.append({"type": "punctuation", "alternatives": [{"confidence": "0.0", "content": p}]})
    src = tmp_path / "aws.json"
    src.write_text(json.dumps({"jobName": "call-1", "accountId": "1", "status": "COMPLETED", "results": {
        "transcripts": [{"transcript": "hello, my name is Jane. how are you?"}], "items": items}}))
    d = tmp_path / "aws"
    prepare([src], d, inventory="truecase4", show_progress=False)
    assert read_table(d / "text") == {"aws-00001": "hello my name is Jane", "aws-00002": "how are you"}
    assert read_table(d / "labels") == {"aws-00001": "L_COMMA L_O L_O L_O C_PERIOD", "aws-00002": "L_O L_O L_QUESTION"}
    assert read_table(d / "utt2spk") == {"aws-00001": "aws-spk_0", "aws-00002": "aws-spk_1"}
    assert read_table(d / "segments") == {"aws-00001": "aws 0.5 2", "aws-00002": "aws 2.5 3"}
    assert (d / "ctm").read_text().splitlines()[-1] == "aws-00002 1 0.3 0.2 you"


def test_a_ctm_of_utterances_gives_each_its_recording(tmp_path):
    """A CTM of utterances (Kaldi's get_ctm without segments: each one's times from its own start) gives each its
    own recording, so their times do not mix; no speakers: each recording is its own."""
    ctm = tmp_path / "hyp.ctm"
    ctm.write_text("u1 1 0.10 0.30 Hello,\nu1 1 0.50 0.30 world.\nu2 1 0.05 0.20 yes\n")
    prepare([ctm], tmp_path / "d", inventory="truecase4", show_progress=False)
    assert read_table(tmp_path / "d" / "segments") == {"d-00001": "u1 0.1 0.8", "d-00002": "u2 0.05 0.25"}
    assert read_table(tmp_path / "d" / "utt2spk") == {"d-00001": "u1", "d-00002": "u2"}
    assert (tmp_path / "d" / "ctm").read_text().splitlines() == [
        "d-00001 1 0 0.3 Hello", "d-00001 1 0.4 0.3 world", "d-00002 1 0 0.2 yes"]



def test_json_lines_of_segment_texts_give_segments_and_no_word_times(tmp_path):
    """JSON lines whose words come from a segment's `text` (its `start` and `end` only) give each line its segment
    and no ctm: the words' shares of the segment are not word times; lines with timed `words` give a ctm."""
    src = tmp_path / "segs.jsonl"
    src.write_text('{"id": "a1", "speaker": "A", "start": 0.0, "end": 2.0, "text": "Hello there, how are you?"}\n'
                   '{"id": "a2", "speaker": "B", "start": 2.5, "end": 4.0, "text": "Fine, thanks."}\n')
    prepare([src], tmp_path / "d", inventory="truecase4", show_progress=False)
    assert read_table(tmp_path / "d" / "segments") == {"d-00001": "a1 0 2", "d-00002": "a2 2.5 4"}
    assert not (tmp_path / "d" / "ctm").exists()
    timed = tmp_path / "words.jsonl"
    timed.write_text('{"id": "b1", "words": [{"word": "Hello,", "start": 0.1, "end": 0.4}, '
                     '{"word": "world.", "start": 0.6, "end": 0.9}]}\n')
    prepare([timed], tmp_path / "w", inventory="truecase4", show_progress=False)
    assert (tmp_path / "w" / "ctm").read_text().splitlines() == ["w-00001 1 0 0.3 Hello", "w-00001 1 0.5 0.3 world"]

# ---------------------------------------------------------------- round trip: decode reads the turns

WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9']*(-[A-Za-z0-9']+)*")  # a token that is one word as every reader reads it


def call_whisperx(path: Path, lines: int, per_segment: int = 25) -> dict:
    """The first `lines` lines of an Earnings-22 call as a diarized WhisperX JSON: its timed plain-word tokens
    with their marks, a segment a run of at most `per_segment` words of one speaker."""
    rows = path.read_text(encoding="utf-8").splitlines()
    cols = rows[0].split("|")
    segs: list[dict] = []
    for row in rows[1:lines]:
        f = dict(zip(cols, row.split("|")))
        if not WORD.fullmatch(f["token"].strip()) or not f["ts"].strip() or not f["endTs"].strip():
            continue
        mark = f["punctuation"].strip() if f["punctuation"].strip() in (",", ".", "?") else ""
        word = {"word": f["token"].strip() + mark, "start": float(f["ts"]), "end": float(f["endTs"])}
        spk = f"SPEAKER_{int(f['speaker']):02d}"
        if not segs or segs[-1]["speaker"] != spk or len(segs[-1]["words"]) >= per_segment:
            segs.append({"speaker": spk, "words": []})
        segs[-1]["words"].append(word)
    for s in segs:
        s.update(start=s["words"][0]["start"], end=s["words"][-1]["end"],
                 text=" " + " ".join(w["word"] for w in s["words"]))
    return {"segments": segs, "word_segments": []}


def test_decode_of_a_prepared_whisperx_json_labels_it_as_punctuate_of_the_json(tmp_path):
    """A call's head as a diarized WhisperX JSON prepared to a data directory and decoded with the shipped model:
    decode reads its turns and pauses (segments, ctm, utt2spk) as punctuate reads the JSON, so every word gets the
    same mark; the same text without them is labelled otherwise (they reach the model)."""
    if not CALL.is_file():
        pytest.skip(f"Earnings-22 calls not found at {CALL.parent}")
    src = tmp_path / "call.json"
    doc = call_whisperx(CALL, 1500)
    src.write_text(json.dumps(doc))
    assert len({s["speaker"] for s in doc["segments"]}) >= 2 and len(doc["segments"]) > 30
    d = tmp_path / "call"
    cli("prepare", src, "-o", d, "--inventory", "truecase4", "-q")
    assert len(read_table(d / "segments")) == len(doc["segments"]) and (d / "ctm").is_file()
    decoded, punctuated = decode_reads_its_turns(d, src, tmp_path)
    assert len(decoded) == sum(len(s["words"]) for s in doc["segments"])
    assert [w for w, _ in decoded] == [w for w, _ in punctuated]


def test_decode_reads_a_prepared_stm(tmp_path):
    """An stm's data directory (segments, no ctm) decodes: every word of every recording labelled, in the order of
    each recording's segments."""
    stm = tmp_path / "talks.stm"
    stm.write_text(STM)
    d = tmp_path / "dev"
    cli("prepare", stm, "-o", d, "--inventory", "truecase4", "-q")
    cli("decode", "fast", d, tmp_path / "out.txt", "--format", "kaldi_text", "-q")
    out = [ln.split(None, 1)[0] for ln in (tmp_path / "out.txt").read_text().splitlines()]
    assert out == [f"dev-{k:05d}" for k in range(1, 6)]
    cli("decode", "fast", d, tmp_path / "out.tsv", "--format", "twocol", "-q")
    assert [w for w, _ in twocol_marks(tmp_path / "out.tsv")] == [
        w.lower() for ln in read_table(d / "text").values() for w in ln.split()]


# ---------------------------------------------------------------- inputs without turns, and what is refused

def test_inputs_without_speakers_or_times_are_written_as_before(tmp_path):
    """Plain and Kaldi text: no segments, ctm or utt2reco, a line an utterance as ever; a transcript format without
    speakers or times (JSON lines of text) is one utterance, as a call without them; `--block-len` of an stm cuts
    its words as one stream, its turns dropped."""
    txt, kal = tmp_path / "t.txt", tmp_path / "k.txt"
    txt.write_text("Hello there. How are you?\nFine.\n")
    kal.write_text("utt1 Hello there.\nutt2 How are you?\n")
    for src, name, ids in ((txt, "p", ["p-t.txt-000001", "p-t.txt-000002"]), (kal, "k", ["k-utt1", "k-utt2"])):
        prepare([src], tmp_path / name, show_progress=False)
        assert files(tmp_path / name) == ["inventory", "labels", "prepare.log", "spk2utt", "text", "utt2spk"]
        assert read_table(tmp_path / name / "utt2spk") == {u: u for u in ids}
    assert read_table(tmp_path / "p" / "labels") == {"p-t.txt-000001": "O PERIOD O O QUESTION",
                                                     "p-t.txt-000002": "PERIOD"}
    jl = tmp_path / "nt.jsonl"
    jl.write_text('{"id": "u1", "text": "Hello there."}\n{"id": "u2", "text": "How are you?"}\n')
    prepare([jl], tmp_path / "j", show_progress=False)
    assert read_table(tmp_path / "j" / "text") == {"j-nt.jsonl": "Hello there How are you"}
    assert files(tmp_path / "j") == ["inventory", "labels", "prepare.log", "spk2utt", "text", "utt2spk"]
    stm = tmp_path / "talks.stm"
    stm.write_text(STM)
    prepare([stm], tmp_path / "b", block_len=4, show_progress=False)
    assert read_table(tmp_path / "b" / "text")["b-000001"] == "Hello how are you"
    assert "segments" not in files(tmp_path / "b") and set(read_table(tmp_path / "b" / "utt2spk").values()) == {"b"}


def test_turn_formats_elsewhere_are_one_line_errors(tmp_path):
    """An stm converted to another format than a data directory, or prepared with --lines, is refused in one line
    naming the file and what to do."""
    stm = tmp_path / "talks.stm"
    stm.write_text(STM)
    cli_error(cli("convert", stm, tmp_path / "x.txt", ok=False), "talks.stm", "--to datadir")
    cli_error(cli("prepare", stm, "-o", tmp_path / "l", "--lines", "1:2", ok=False), "talks.stm", "--lines")
