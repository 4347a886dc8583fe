"""sclite's transcripts (punctkit/data/formats/sclite.py): ESPnet's and sclite's `trn` (the id after the words) and
NIST `stm` (TED-LIUM's segments) are told apart from text and CTM, read by punctuate and written back in their own
layout, the words as given; an stm recording's segments are one stream (sentences run on across them, and each
recording ends one); `score` and `convert` read trn; a bad line is one line naming the file and line."""
from __future__ import annotations

import pytest

from punct_util import cli, units_of
from punctkit.data.formats import REGISTRY, AsrUtterance, base, detect_format, read
from punctkit.data.formats.protocol import ReadContext
from punctkit.data.labels import INVENTORIES, SENTENCE_END, default_substitution, mark_of
from punctkit.files import PunctkitError

INV = INVENTORIES["truecase4"]
RULES = default_substitution(INV)
TRN = "so what do you think about new york\t(spk1-utt1)\nwell i guess it is fine (spk1-utt2)\n(spk2-utt3)\n"
HEAD = ';; CATEGORY "0" "" ""\n;; LABEL "O" "Overall" "Overall"\n'


def first_words(iwslt, n):
    """The first `n` words of test2011, lower case, no marks (as a recognizer gives them)."""
    words = [ln.split("\t")[0].lower() for ln in (iwslt / "test2011").read_text(encoding="utf-8").splitlines()
             if ln.strip()]
    return words[:n]


def stm_of(recordings):
    """An stm (comments first) of {recording: [segment words]}: 2.5 s a segment, a label on each line."""
    lines = []
    for rec, segments in recordings.items():
        for k, seg in enumerate(segments):
            lines.append(f"{rec} 1 {rec} {2.5 * k:.2f} {2.5 * (k + 1):.2f} <o,f0,male> {' '.join(seg)}")
    return HEAD + "\n".join(lines) + "\n"


def units(fmt, p):
    return units_of(REGISTRY[fmt], p, INV, RULES)


def test_trn_is_told_from_text_and_keeps_its_ids_after_the_words(tmp_path):
    p = tmp_path / "hyp.txt"  # the name says nothing
    p.write_text(TRN, encoding="utf-8")
    assert detect_format(p) == "trn"
    got = units("trn", p)
    assert [(u.uttid, u.words) for u in got] == [("spk1-utt1", "so what do you think about new york".split()),
                                                 ("spk1-utt2", "well i guess it is fine".split()), ("spk2-utt3", [])]
    out = cli("punctuate", p).stdout.splitlines()
    assert [ln.split()[-1] for ln in out] == ["(spk1-utt1)", "(spk1-utt2)", "(spk2-utt3)"]
    assert [w.strip(",.?!").lower() for w in out[0].rsplit(" ", 1)[0].split()] == got[0].words
    assert out[0][0].isupper() and out[0].rsplit(" ", 1)[0][-1] in ".?!"  # each line its own sentences


def test_text_whose_lines_end_in_a_note_stays_text(tmp_path):
    p = tmp_path / "talk.txt"
    p.write_text("thank you (Laughter)\nand so on (Applause)\nwe came in 1968 (1968)\n", encoding="utf-8")
    assert detect_format(p) == "text"


def test_a_bad_trn_line_is_one_line_naming_it(tmp_path):
    p = tmp_path / "hyp.trn"
    p.write_text("hello world (utt1)\nno id here\n", encoding="utf-8")
    r = cli("punctuate", p, "--input-format", "trn", ok=False)
    assert r.returncode == 1
    assert r.stderr.strip().splitlines() == [
        f"punctkit: error: {p}:2: expected a trn line, the words and then the utterance id in parentheses "
        f"(`so what (utt1)`), got 'no id here'; give the format (--input-format, --from) to read it as another"]
    p.write_text("hello world (utt1)\nagain (utt1)\n", encoding="utf-8")
    with pytest.raises(PunctkitError, match=rf"^{p}:2: duplicate utterance id 'utt1'$"):
        units("trn", p)


def test_trn_is_scored_and_converted_as_kaldi_text_is(tmp_path):
    ref = tmp_path / "ref.trn"
    ref.write_text("So, what do you think about New York? (utt1)\nWell, I guess it is fine. (utt2)\n", encoding="utf-8")
    kt = tmp_path / "in.txt"
    kt.write_text("utt1 so what do you think about new york\nutt2 well i guess it is fine\n", encoding="utf-8")
    hyp, hyp_kt = tmp_path / "hyp.trn", tmp_path / "hyp.txt"
    cli("punctuate", kt, "--format", "trn", "-o", hyp)
    cli("punctuate", kt, "-o", hyp_kt)
    assert [ln.rsplit(" ", 1)[0] for ln in hyp.read_text().splitlines()] == \
        [ln.split(" ", 1)[1] for ln in hyp_kt.read_text().splitlines()]
    back, _ = read(ref)
    assert [(u.uttid, u.words[:2], u.labels[:2]) for u in back] == [("utt1", ["So", "what"], ["COMMA", "O"]),
                                                                    ("utt2", ["Well", "I"], ["COMMA", "O"])]
    ref_kt = tmp_path / "ref.txt"
    cli("convert", ref, ref_kt, "--to", "kaldi_text")
    assert ref_kt.read_text().splitlines()[0] == "utt1 So, what do you think about New York?"
    trn_score = cli("score", ref, hyp).stdout.split("\n", 1)[1]
    kt_score = cli("score", ref_kt, hyp_kt).stdout.split("\n", 1)[1]
    assert trn_score == kt_score and "overall" in trn_score


def test_stm_comes_back_line_for_line_with_its_transcripts_punctuated(tmp_path, iwslt):
    words = first_words(iwslt, 60)
    body = stm_of({"TalkA_2011": [words[:25], words[25:40]], "TalkB_2011": [words[40:]]})
    body += "TalkB_2011 1 TalkB_2011 2.50 3.10 <o,f0,male> ignore_time_segment_in_scoring\n"
    p = tmp_path / "ref.txt"
    p.write_text(body, encoding="utf-8")
    assert detect_format(p) == "stm"
    out = cli("punctuate", p).stdout.splitlines()
    lines = body.splitlines()
    assert len(out) == len(lines) and out[:2] == lines[:2] and out[-1] == lines[-1]
    for got, given in zip(out[2:-1], lines[2:-1]):
        head = " ".join(given.split()[:6])
        assert got.startswith(head + " ")
        assert [w.strip(",.?!").lower() for w in got[len(head):].split()] == given.split()[6:]


def test_a_recording_s_segments_are_one_stream_and_each_recording_ends_a_sentence(tmp_path, iwslt, tiny_package):
    words = first_words(iwslt, 400)
    a, b = words[:300], words[300:]
    cut = [a[k:k + 13] for k in range(0, len(a), 13)]  # segments that end inside sentences
    p = tmp_path / "talks.stm"
    p.write_text(stm_of({"TalkA_2011": cut, "TalkB_2011": [b[:40], b[40:]]}), encoding="utf-8")
    plain = tiny_package.pkt  # a model that reads words only: the segments' times weigh nothing
    got = [ln.split(None, 6)[6] for ln in cli("punctuate", p, "-m", plain).stdout.splitlines()[2:]]
    # as the recording's words as one plain-text stream (its segments its lines) are punctuated
    for rec, segs, outs in (("a", cut, got[:len(cut)]), ("b", [b[:40], b[40:]], got[len(cut):])):
        text = tmp_path / f"{rec}.txt"
        text.write_text("".join(" ".join(s) + "\n" for s in segs), encoding="utf-8")
        assert outs == cli("punctuate", text, "-m", plain).stdout.splitlines()
        assert outs[-1][-1] in ".?!"
    # and not as each segment by itself: some segment ends inside a sentence
    assert any(seg[-1][-1] not in ".?!" for seg in got[:len(cut)])


def test_stm_gives_subtitles_within_its_segments_times(tmp_path, iwslt):
    words = first_words(iwslt, 80)
    p = tmp_path / "talk.stm"
    p.write_text(stm_of({"TalkA_2011": [words[:30], words[30:60]], "TalkB_2011": [words[60:]]}), encoding="utf-8")
    got = units("stm", p)
    runs = REGISTRY["stm"].streams(p, ReadContext.of(p, INV, RULES))  # each recording's segments together
    assert [(r.key, [u.uttid for u in r.lines]) for r in runs] == [("TalkA_2011 1", [u.uttid for u in got[:2]]),
                                                                   ("TalkB_2011 1", [got[2].uttid])]
    assert [u.uttid for u in got] == ["TalkA_2011-0000000-0000250", "TalkA_2011-0000250-0000500",
                                      "TalkB_2011-0000000-0000250"]
    for u, (s, e) in zip(got, [(0, 2.5), (2.5, 5.0), (0, 2.5)]):
        assert u.records[0]["start_s"] == s and u.records[-1]["end_s"] == pytest.approx(e, abs=1e-3)
    r = cli("punctuate", p, "--format", "srt")
    blocks = [b.splitlines() for b in r.stdout.strip().split("\n\n")]
    text = " ".join(" ".join(b[2:]) for b in blocks)
    assert [w.strip(",.?!").lower() for w in text.split()] == words
    spans = [[float(t.replace(":", " ").replace(",", ".").split()[-1]) for t in b[1].split(" --> ")] for b in blocks]
    assert all(0 <= s < e <= 5.0 for s, e in spans)
    # TalkB's first cue: its times start again at 0, so they are moved forward (one subtitle file is monotone:
    # punctkit.data.formats.times), and stderr says so
    second = next(k for k, b in enumerate(blocks) if b[2].strip(",.?!").lower().startswith(words[60]))
    assert blocks[second - 1][-1][-1] in ".?!" and blocks[-1][-1][-1] in ".?!"  # each recording ends a sentence
    assert all(a[0] <= b[0] for a, b in zip(spans, spans[1:])) and spans[second][0] >= spans[second - 1][0]
    assert "went backwards" in r.stderr and "moved forward in the output" in r.stderr


def test_stm_is_told_from_ctm():
    from punctkit.data.formats.detect import line_kind

    assert line_kind("utt1 1 0.50 0.30 hello") == "ctm"
    assert line_kind("utt1 1 0.50 0.30 5 0.9") == "ctm"  # a number for a word, a confidence after it
    assert line_kind("TalkA 1 TalkA 0.50 3.30 <o,f0,male> hello there") == "stm"
    assert line_kind("rec 1 2 0.50 3.30 <o> 5 hello") == "stm"  # a numbered speaker, with a label
    assert line_kind("rec A spk 0.50 3.30") == "stm"  # no words


@pytest.mark.parametrize("line, why", [
    ("TalkA 1 TalkA 3.0 2.0 <o> hi", r"the segment ends \(2.0\) before it begins \(3.0\)"),
    ("TalkA 1 TalkA -1 2.0 <o> hi", r"the segment's begin time must be a time from 0 to 10000000 seconds "
                                    r"(finite, not negative), got '-1'; correct that time in the input"),
    ("TalkA 1 TalkA 1.0 inf <o> hi", r"the segment's end time must be a time from 0 to 10000000 seconds "
                                     r"(finite, not negative), got 'inf'; correct that time in the input"),
])
def test_a_bad_stm_line_is_one_line_naming_it(tmp_path, line, why):
    p = tmp_path / "bad.stm"
    p.write_text(HEAD + "TalkA 1 TalkA 0.0 1.0 <o> fine\n" + line + "\n", encoding="utf-8")
    r = cli("punctuate", p, "--input-format", "stm", ok=False)
    assert r.returncode == 1 and r.stderr.strip().splitlines() == [f"punctkit: error: {p}:4: " + why.replace("\\", "")]


def test_stm_written_from_another_timed_input(tmp_path):
    p = tmp_path / "in.ctm"
    p.write_text("utt1 1 0.50 0.30 hello\nutt1 1 0.80 0.40 there\nutt2 1 2.00 0.50 bye\n", encoding="utf-8")
    out = cli("punctuate", p, "--format", "stm").stdout.splitlines()
    assert [ln.split()[:5] for ln in out] == [["utt1", "1", "utt1", "0.50", "1.20"],
                                              ["utt2", "1", "utt2", "2.00", "2.50"]]
    assert [[w.strip(",.?!").lower() for w in ln.split()[5:]] for ln in out] == [["hello", "there"], ["bye"]]
    back = units("stm", _written(tmp_path, out))
    assert [u.words for u in back] == [["hello", "there"], ["bye"]]


def _written(tmp_path, lines):
    p = tmp_path / "out.stm"
    p.write_text("".join(ln + "\n" for ln in lines), encoding="utf-8")
    return p


def test_stream_runs_group_a_stream_s_units_and_cut_a_long_one(monkeypatch):
    def u(name, stream, n=2):
        return stream, AsrUtterance(name, ["w"] * n)

    given = [u("a1", "A"), u("a2", "A"), u("x", None), u("b1", "B"), u("c1", "C"), u("c2", "C")]
    runs = list(base.stream_runs(given))
    assert [(r.key, [x.uttid for x in r.lines]) for r in runs] == \
        [("A", ["a1", "a2"]), (None, ["x"]), ("B", ["b1"]), ("C", ["c1", "c2"])]
    monkeypatch.setattr(base, "MAX_RUN_WORDS", 3)  # a stream past the bound goes on as a new unit
    runs = list(base.stream_runs([u(f"a{k}", "A") for k in range(5)]))
    assert [[x.uttid for x in r.lines] for r in runs] == [["a0", "a1"], ["a2", "a3"], ["a4"]]


def test_a_recording_cut_at_the_bound_is_two_streams_each_closed_in_the_outputs(tmp_path, monkeypatch):
    """A recording longer than the reader's bound (base.MAX_RUN_WORDS) comes as two streams: the engine closes the
    first where it is cut (`Labelled.ends`), and the subtitles and timed JSON close it there too."""
    import json

    from punctkit import load_model
    from punctkit.data.formats.subtitles import srt_lines, timed_json_lines
    from punctkit.punctuator import output_options

    p = tmp_path / "talk.stm"
    p.write_text("T 1 spk 0.00 2.00 so what i mean is that the\nT 1 spk 2.00 4.00 and then we went home and\n"
                 "T 1 spk 4.00 6.00 we slept until the\n", encoding="utf-8")
    monkeypatch.setattr(base, "MAX_RUN_WORDS", 10)  # the first two segments hold 15 words: cut after them
    engine = load_model("fast").with_options(stream_end="open")  # a stream's last word takes no mark of its own
    runs = list(REGISTRY["stm"].streams(p, ReadContext.of(p, engine.inventory, default_substitution(engine.inventory))))
    assert [len(r.lines) for r in runs] == [2, 1] and runs[0].key == runs[1].key == "T 1"
    done = list(engine.label(runs))
    assert [(d.starts, d.ends) for d in done] == [(True, False), (False, True), (True, True)]
    first = " ".join(done[0].shown + done[1].shown)  # the first stream: the cut closes a cue and a sentence
    opts = output_options(engine)
    cues = [" ".join(c.split("\n")[2:]) for c in "\n".join(srt_lines(done, opts)).strip().split("\n\n")]
    assert first in [" ".join(cues[:k]) for k in range(1, len(cues))]
    sents = [json.loads(x)["text"] for x in timed_json_lines(done, opts)]
    assert first in [" ".join(sents[:k]) for k in range(1, len(sents))]


def test_the_marks_of_a_segment_end_are_the_stream_s(tmp_path, iwslt):
    """The engine's labels of an stm's units: one labelling call; a recording's last word ends a sentence."""
    from punctkit import load_model

    words = first_words(iwslt, 120)
    p = tmp_path / "talk.stm"
    p.write_text(stm_of({"TalkA_2011": [words[k:k + 17] for k in range(0, 120, 17)]}), encoding="utf-8")
    punct = load_model("fast")
    done = list(punct.label(units("stm", p)))
    assert [d.utt.uttid for d in done] == [u.uttid for u in units("stm", p)]
    assert mark_of(done[-1].labels[-1]) in SENTENCE_END


@pytest.mark.parametrize("body, kind", [(HEAD + "TalkA 1 TalkA 0.0 1.0 <o> fine\n", "an stm's or a CTM's comments"),
                                        ("TalkA 1 TalkA 0.0 1.0 <o> fine\n", "an stm"),
                                        ("utt1 1 0.50 0.30 hello\n", "a CTM")])
def test_stream_refuses_stm_and_ctm_lines_in_one_line(tmp_path, body, kind):
    p = tmp_path / "in.txt"
    p.write_text(body, encoding="utf-8")
    r = cli("punctuate", "--stream", p, ok=False)
    assert r.returncode == 1 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1
    assert f" line 1: a line of {kind}" in r.stderr
    assert r.stderr.strip().endswith("which --stream does not read (it reads words): "
                                     "punctuate the file without --stream")


def test_stm_comments_after_the_last_segment_and_long_runs_of_them_come_back(tmp_path, monkeypatch):
    from punctkit.data.formats import sclite

    p = tmp_path / "t.stm"
    body = ";; head\nT 1 T 0.0 1.0 <o> hello there\n;; tail one\n;; tail two\n"
    p.write_text(body, encoding="utf-8")
    out = cli("punctuate", p).stdout.splitlines()
    assert out[0] == ";; head" and out[2:] == [";; tail one", ";; tail two"]
    assert out[1].startswith("T 1 T 0.0 1.0 <o> ") and out[1].lower().startswith("t 1 t 0.0 1.0 <o> hello there")
    assert cli("punctuate", p, "--format", "stm").stdout.splitlines() == out  # stm to stm: the same lines
    # the other outputs write the segment alone: no object, row or count for the comments
    for fmt in ("jsonl", "nemo", "twocol", "ctm"):
        r = cli("punctuate", p, "--format", fmt)
        assert "1 utterances, 2 words" in r.stderr and "without words" not in r.stderr, (fmt, r.stderr)
        assert len(r.stdout.splitlines()) == {"twocol": 3, "ctm": 2}.get(fmt, 1), (fmt, r.stdout)  # twocol: + a blank
        assert "tail" not in r.stdout and "head" not in r.stdout and '"text": ""' not in r.stdout, (fmt, r.stdout)
    # comments held for the next segment are bounded
    monkeypatch.setattr(sclite, "MAX_HELD", 30)  # (its name in the reader)
    p.write_text(";; one comment line\n" * 5 + "T 1 T 0.0 1.0 <o> hello there\n", encoding="utf-8")
    got = units("stm", p)
    assert [u.words for u in got] == [[], [], ["hello", "there"]]
    assert "".join(u.frame.before + "\n" for u in got[:2]) + got[2].frame.before == p.read_text().split("T 1 T")[0] + \
        "T 1 T 0.0 1.0 <o> "
