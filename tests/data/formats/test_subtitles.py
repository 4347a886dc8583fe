"""Timed outputs (punctkit/data/formats/subtitles.py): SRT and WebVTT cues built from the words'
own times, within the limits, ending at sentence ends, parsed back by `srt` and `webvtt-py`;
timed JSON keeping every word and time. The builders are tested without a model; one end-to-end
run goes through punctuate with the packed test model.
"""
from __future__ import annotations

import html
import io
import json
import os
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
import srt
import webvtt
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from punctkit.data.formats.asr import read_ctm
from punctkit.data.formats.base import AsrUtterance, OutputOptions
from punctkit.data.formats.subtitles import (
    Limits,
    TimedWord,
    build_cues,
    srt_lines,
    timed_json_lines,
    vtt_lines,
    wrap,
)
from punctkit.data.labels import INVENTORIES, O, default_substitution
from punctkit.data.tokenize import read_passage
from punctkit.files import PunctkitError
from punctkit.infer.engine import Labelled

SETTINGS = settings(max_examples=int(os.environ.get("PK_EXAMPLES", 80)), deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
INV = INVENTORIES["4class"]
LEGACY = Path(__file__).parents[2] / "fixtures" / "legacy" / "word.pkt"


def unit(uttid: str, tokens: list[str], times: list[tuple[float, float | None]], has_id: bool = False) -> AsrUtterance:
    """An utterance as the JSON readers make it: words, input marks, words as written, timed records."""
    p = read_passage(tokens, INV, default_substitution(INV))
    recs = [{"index": k, "start_s": a, "end_s": b} for k, (a, b) in enumerate(times)]
    return AsrUtterance(uttid, p.words, p.marks, p.written, recs, has_id=has_id)


# a stream of two units: two sentences, the second crossing the unit boundary
U1 = unit("a", ["so", "what", "do", "you", "think"], [(0.0, 0.3), (0.3, 0.5), (0.5, 0.6), (0.6, 0.8), (0.8, 1.2)])
U2 = unit("b", ["i", "mean", "we", "could", "go"], [(1.5, 1.6), (1.6, 1.9), (2.0, 2.1), (2.1, 2.4), (2.4, 2.9)])
L1 = ["COMMA", O, O, O, "QUESTION"]
L2 = [O, "COMMA", O, O, "PERIOD"]
S1 = ["So,", "what", "do", "you", "think?"]
S2 = ["I", "mean,", "we", "could", "go."]
UNITS = [Labelled(U1, L1, S1, starts=True), Labelled(U2, L2, S2, ends=True)]  # the engine's flags: one stream


# ------------------------------------------------------------------ the cue builder

def test_wrap_never_splits_a_word():
    assert wrap(["a", "bb", "ccc"], 4) == ["a bb", "ccc"]
    assert wrap(["x", "supercalifragilistic", "y"], 5) == ["x", "supercalifragilistic", "y"]


def test_cues_end_at_sentence_ends_and_split_long_sentences_after_a_comma():
    words = [TimedWord(t, k, k + 0.5, t.endswith("."), t.endswith(",")) for k, t in
             enumerate(["One.", "Two", "three,", "four", "five", "six", "seven."])]
    cues = list(build_cues(words, Limits(seconds=100, chars=12, lines=2)))
    assert [c.lines for c in cues] == [["One."], ["Two three,"], ["four five", "six seven."]]
    assert [(c.start, c.end) for c in cues] == [(0, 0.5), (1, 2.5), (3, 6.5)]
    cues = list(build_cues(words, Limits(seconds=2.0, chars=42, lines=2)))
    assert all(c.end - c.start <= 2.0 for c in cues)


def test_a_long_word_stands_alone_on_its_line():
    long = "Pneumonoultramicroscopicsilicovolcanoconiosis"
    words = [TimedWord(t, k, k + 0.2) for k, t in enumerate(["it", "is", long, "really"])]
    cues = list(build_cues(words, Limits(chars=10, lines=2)))
    assert [line for c in cues for line in c.lines] == ["it is", long, "really"]
    assert all(len(c.lines) <= 2 for c in cues)


def test_independent_utterances_end_their_cues():
    one = list(build_cues([TimedWord("a", 0, 1), TimedWord("b", 1, 2, hard=True), TimedWord("c", 2, 3)]))
    assert [c.lines for c in one] == [["a b"], ["c"]]


TOKEN = st.text(st.sampled_from("abcdefghijk"), min_size=1, max_size=60)


@SETTINGS
@given(items=st.lists(st.tuples(TOKEN, st.floats(0, 2), st.floats(0.01, 3), st.sampled_from([O, "COMMA", "PERIOD"])),
                      min_size=1, max_size=60),
       seconds=st.floats(3, 10), chars=st.integers(5, 50), lines=st.integers(1, 3))
def test_no_cue_exceeds_the_limits(items, seconds, chars, lines):
    words, t = [], 0.0
    for text, gap, dur, mark in items:
        text += {"COMMA": ",", "PERIOD": ".", O: ""}[mark]
        words.append(TimedWord(text, round(t + gap, 3), round(t + gap + dur, 3), mark == "PERIOD", mark == "COMMA"))
        t += gap + dur
    cues = list(build_cues(words, Limits(seconds, chars, lines)))
    # every word once, whole, in order; each cue's times are its first word's start and last word's end
    assert [w for c in cues for line in c.lines for w in line.split(" ")] == [w.text for w in words]
    k = 0
    for c in cues:
        n = sum(len(line.split(" ")) for line in c.lines)
        mine = words[k:k + n]
        k += n
        assert (c.start, c.end) == (mine[0].start, mine[-1].end)
        assert all(not w.sentence_end for w in mine[:-1])  # a sentence end closes its cue
        if n > 1:  # only a word alone may break a limit
            assert c.end - c.start <= seconds and len(c.lines) <= lines
        assert all(len(line) <= chars or " " not in line for line in c.lines)


# ------------------------------------------------------------------ SRT and WebVTT

def test_srt_parses_back_with_srt(tmp_path):
    text = "\n".join(srt_lines(UNITS, OutputOptions(INV, src=tmp_path / "x"))) + "\n"
    subs = list(srt.parse(text))
    assert [s.content for s in subs] == ["So, what do you think?", "I mean, we could go."]
    assert [(s.start, s.end) for s in subs] == [(timedelta(0), timedelta(seconds=1.2)),
                                                (timedelta(seconds=1.5), timedelta(seconds=2.9))]
    assert [s.index for s in subs] == [1, 2]


def test_vtt_parses_back_with_webvtt(tmp_path):
    u = unit("a", ["fish", "&", "chips", "a<b>"], [(0.0, 0.5), (0.5, 0.6), (0.6, 1.0), (1.0, 3661.25)])
    units = [UNITS[0], replace(UNITS[1], ends=False), Labelled(u, [O, O, O, "PERIOD"], ["fish", "&", "chips", "a<b>."],
                                                           ends=True)]
    text = "\n".join(vtt_lines(units, OutputOptions(INV, max_cue_seconds=4000, src=tmp_path / "x")))
    caps = webvtt.from_buffer(io.StringIO(text)).captions
    assert [html.unescape(c.text) for c in caps] == ["So, what do you think?", "I mean, we could go.",
                                                     "fish & chips a<b>."]
    assert caps[2].text == "fish &amp; chips a&lt;b&gt;."  # escaped: a `<` would open a tag
    # the last unit's times start again at 0: moved forward to the last start before them (times.Timeline), so
    # that no cue starts before the one before it, as WebVTT requires
    assert [(c.start, c.end) for c in caps] == [("00:00:00.000", "00:00:01.200"), ("00:00:01.500", "00:00:02.900"),
                                                ("00:00:02.400", "01:01:01.250")]


def test_words_without_times_lie_between_their_neighbours_and_a_unit_without_any_is_refused(tmp_path):
    """A word the recognizer gave no time (WhisperX's numerals, Gentle's words not found in the audio) runs from
    the timed word before it to the one after it (at a unit's edge, the nearest one's time); srt, vtt, ctm and
    stm then write it; a unit of words without any time is one line."""
    from punctkit.data.formats.asr import ctm_out
    from punctkit.data.formats.base import word_spans

    u = unit("a", ["so", "20", "people", "then", "it", "rained"],
             [(None, None), (0.5, 0.9), (None, None), (None, None), (1.4, None), (None, None)], has_id=True)
    assert word_spans(u) == [(0.5, 0.5), (0.5, 0.9), (0.9, 1.4), (0.9, 1.4), (1.4, 1.4), (1.4, 1.4)]
    labels = [O, O, "PERIOD", O, O, "PERIOD"]
    shown = ["So", "20", "people.", "Then", "it", "rained."]
    srt = "\n".join(srt_lines([Labelled(u, labels, shown, starts=True, ends=True)],
                              OutputOptions(INV, src=tmp_path / "x")))
    assert "00:00:00,500 --> 00:00:01,400\nSo 20 people." in srt and "00:00:01,400 --> 00:00:01,400" not in srt
    ctm = list(ctm_out(Labelled(u, labels, shown), OutputOptions(src=tmp_path / "x")))
    assert ctm[2:4] == ["a 1 0.900 0.500 people.", "a 1 0.900 0.500 Then"]
    none = unit("b", ["so", "then"], [(None, None), (None, None)], has_id=True)
    with pytest.raises(PunctkitError, match=r"^.*x:0 \(utterance b\): no word has a start time \(--format srt"):
        list(srt_lines([Labelled(none, [O, O], ["So", "then"], starts=True, ends=True)],
                       OutputOptions(INV, src=tmp_path / "x")))


# ------------------------------------------------------------------ timed JSON

def test_timed_json_keeps_every_word_and_time(tmp_path):
    rows = [np.full((5, 4), 0.25, dtype=np.float32), None]
    rows[0][0] = [0.1, 0.7, 0.1, 0.1]
    units = [Labelled(U1, L1, S1, rows[0], starts=True), Labelled(U2, L2, S2, ends=True)]
    opts = OutputOptions(INV, src=tmp_path / "x")
    sents = [json.loads(line) for line in timed_json_lines(units, opts)]
    assert [s["text"] for s in sents] == ["So, what do you think?", "I mean, we could go."]
    assert [(s["start"], s["end"]) for s in sents] == [(0.0, 1.2), (1.5, 2.9)]
    words = [w for s in sents for w in s["words"]]
    assert [w["word"] for w in words] == ["so", "what", "do", "you", "think", "i", "mean", "we", "could", "go"]
    assert [(w["start"], w["end"]) for w in words] == [(r["start_s"], r["end_s"]) for u in (U1, U2) for r in u.records]
    assert [w["mark"] for w in words] == [x for x in L1 + L2]
    assert [w["case"] for w in words[:2]] == ["C", "L"]
    assert words[0]["p"] == 0.7 and words[0]["probs"] == {"O": 0.1, "COMMA": 0.7, "PERIOD": 0.1, "QUESTION": 0.1}
    assert "p" not in words[5] and "probs" not in words[5]


def test_timed_json_independent_utterances_and_missing_times(tmp_path):
    a = unit("utt1", ["well", "so"], [(0.5, 0.7), (0.8, None)], has_id=True)
    b = unit("utt2", ["yes"], [(None, None)], has_id=True)
    units = [Labelled(a, [O, O], ["Well", "so"], starts=True, ends=True),  # each its own stream
             Labelled(b, [O], ["Yes"], starts=True, ends=True)]
    sents = [json.loads(line) for line in timed_json_lines(units, OutputOptions(INV, src=tmp_path / "x"))]
    assert [(s["text"], s["utterance"], s["start"], s["end"]) for s in sents] == [
        ("Well so", "utt1", 0.5, 0.8), ("Yes", "utt2", None, None)]
    assert list(timed_json_lines([], OutputOptions(INV, src=tmp_path / "x"))) == []


# ------------------------------------------------------------------ where a stream ends: the engine's

def test_the_writers_close_a_stream_where_the_unit_says_and_nowhere_else(tmp_path):
    """srt and timed JSON end a cue and a sentence after a unit that ends its stream (`Labelled.ends`, set by the
    engine) even without a sentence mark, and run on across units that do not, however they came."""
    a = unit("a", ["well", "so"], [(0.0, 0.4), (0.5, 0.9)], has_id=True)
    b = unit("b", ["we", "go"], [(1.0, 1.4), (1.5, 1.9)], has_id=True)
    opts = OutputOptions(INV, src=tmp_path / "x")
    for closed, want in ((True, ["Well so", "we go"]), (False, ["Well so we go"])):
        units = [Labelled(a, [O, O], ["Well", "so"], starts=True, ends=closed),
                 Labelled(b, [O, O], ["we", "go"], starts=closed, ends=True)]
        assert [s.content for s in srt.parse("\n".join(srt_lines(units, opts)) + "\n")] == want
        assert [json.loads(x)["text"] for x in timed_json_lines(units, opts)] == want


def _run(engine, src: Path, fmt: str, out: Path) -> str:
    from punctkit.punctuator import punctuate_file

    punctuate_file(engine, src, out, fmt=fmt, show_progress=False)
    return out.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def open_fast():
    """The shipped model, streams left open (decode option stream_end=open): the last word of a stream takes no
    sentence mark of the stream's, so only `Labelled.ends` closes its cue."""
    from punctkit import load_model

    return load_model("fast").with_options(stream_end="open")


def test_a_recording_whose_last_segment_has_no_words_ends_at_its_last_worded_one(tmp_path, open_fast):
    """An stm recording whose last segment has no words (ignored in scoring) ends at its last segment with words,
    where the engine closed it (`Labelled.ends`): no srt cue and no timed-JSON sentence runs on into the next
    recording, however the model marked the word."""
    from punctkit.data.formats import ReadContext, get_format

    stm = tmp_path / "talks.stm"
    stm.write_text("A 1 spk1 0.00 3.00 so what i mean is that the\n"
                   "A 1 spk1 3.00 4.00 ignore_time_segment_in_scoring\n"
                   "B 1 spk2 4.00 7.00 and then we went home and we slept\n", encoding="utf-8")
    inv = open_fast.inventory
    units = get_format("stm", "units").read(stm, ReadContext.of(stm, inv, default_substitution(inv)))
    done = list(open_fast.label(units))
    assert [(d.utt.lineno, d.starts, d.ends) for d in done] == [(1, True, True), (2, False, False), (3, True, True)]
    cues = list(srt.parse(_run(open_fast, stm, "srt", tmp_path / "o.srt")))
    assert [c.end <= timedelta(seconds=3) or c.start >= timedelta(seconds=4) for c in cues] == [True] * len(cues)
    assert cues[0].content.replace("\n", " ").lower().split() == [x.lower() for x in done[0].shown]
    sents = [json.loads(x) for x in _run(open_fast, stm, "timed-json", tmp_path / "o.json").splitlines()]
    assert [{w["utterance"] for w in x["words"]} for x in sents] == [{done[0].utt.uttid}] + \
        [{done[2].utt.uttid}] * (len(sents) - 1)


def test_one_stream_from_a_timed_input_ends_at_its_last_worded_line(tmp_path, open_fast):
    """A timed input read as one stream (Whisper's segments) with a last segment without words: the engine ends
    the stream at the last line with words, and srt and timed JSON end there, every word once, no cue or
    sentence for the empty segment, sentences running on across segments."""
    words = "so what i mean is that we went home and then".split()
    items = [{"word": f" {w}", "start": round(0.4 * k, 2), "end": round(0.4 * k + 0.3, 2)} for k, w in enumerate(words)]
    doc = {"text": "", "segments": [{"id": 0, "start": 0.0, "end": 2.4, "text": "", "words": items[:6]},
                                    {"id": 1, "start": 2.4, "end": 4.4, "text": "", "words": items[6:]},
                                    {"id": 2, "start": 4.4, "end": 5.0, "text": "", "words": []}]}
    src = tmp_path / "talk.json"
    src.write_text(json.dumps(doc), encoding="utf-8")
    from punctkit.data.formats import ReadContext, get_format

    inv = open_fast.inventory
    units = get_format("whisper", "units").read(src, ReadContext.of(src, inv, default_substitution(inv)))
    done = list(open_fast.label(units, one_stream=True))
    assert [(len(d.words), d.starts, d.ends) for d in done] == [(6, True, False), (5, False, True), (0, False, False)]
    cues = list(srt.parse(_run(open_fast, src, "srt", tmp_path / "o.srt")))
    assert " ".join(c.content for c in cues).replace("\n", " ").split() == [x for d in done for x in d.shown]
    assert cues[-1].end == timedelta(seconds=items[-1]["end"])
    sents = [json.loads(x) for x in _run(open_fast, src, "timed-json", tmp_path / "o.json").splitlines()]
    assert [w["word"] for x in sents for w in x["words"]] == words
    assert sents[-1]["end"] == items[-1]["end"] and all(x["words"] for x in sents)


# ------------------------------------------------------------------ end to end

def test_punctuate_whisper_to_srt_vtt_and_timed_json(tmp_path):
    if not LEGACY.is_file():
        pytest.skip("tests/fixtures/legacy/word.pkt is missing")
    from punctkit import load_model
    from punctkit.punctuator import punctuate_file

    words = [{"word": f" {t}", "start": round(0.4 * k, 2), "end": round(0.4 * k + 0.3, 2), "probability": 0.9}
             for k, t in enumerate(("so what do you think i mean we could go there tomorrow and then we will "
                                    "see what happens next year").split())]
    whisper = {"text": "", "segments": [{"id": 0, "start": 0.0, "end": 4.0, "text": "", "words": words[:10]},
                                        {"id": 1, "start": 4.0, "end": 9.0, "text": "", "words": words[10:]}]}
    src = tmp_path / "talk.json"
    src.write_text(json.dumps(whisper))
    punct = load_model(LEGACY)
    for fmt in ("srt", "vtt", "timed-json", "ctm"):
        punctuate_file(punct, src, tmp_path / fmt, fmt=fmt, max_cue_seconds=3.0, max_line_chars=20)
    subs = list(srt.parse((tmp_path / "srt").read_text()))
    starts = {timedelta(seconds=w["start"]) for w in words}
    ends = {timedelta(seconds=w["end"]) for w in words}
    assert all(s.start in starts and s.end in ends and s.end - s.start <= timedelta(seconds=3) for s in subs)
    assert all(len(line) <= 20 for s in subs for line in s.content.splitlines())
    assert " ".join(s.content for s in subs).replace("\n", " ").lower().replace(",", "").replace(".", "") \
        .replace("?", "").split() == [w["word"].strip() for w in words]
    caps = webvtt.read(str(tmp_path / "vtt")).captions
    assert [c.text for c in caps] == [s.content for s in subs]
    doc = [json.loads(line) for line in (tmp_path / "timed-json").read_text().splitlines()]
    got = [(w["word"], w["start"], w["end"]) for s in doc for w in s["words"]]
    assert got == [(w["word"].strip(), w["start"], w["end"]) for w in words]
    # CTM with marks: the punctuated words (as the timed JSON shows them), each at its own time
    ctm = [line for _, lines in read_ctm(tmp_path / "ctm") for line in lines]
    shown = [w["punctuated"] for s in doc for w in s["words"]]
    assert [(c.word, c.start_s, round(c.start_s + c.dur_s, 3)) for c in ctm] == \
        [(t, w["start"], w["end"]) for t, w in zip(shown, words)]
