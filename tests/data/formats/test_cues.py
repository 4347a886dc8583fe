"""Subtitles in (punctkit/data/formats/cues.py): SRT and WebVTT as recognizers write them are told apart from
text, read a cue a unit with its words sharing the cue's time (never a cue number or a timing line as words),
and a bad timing line is one line naming the file and line."""
from __future__ import annotations

import pytest

from punct_util import cli, units_of
from punctkit.data.formats import REGISTRY, detect_format
from punctkit.data.labels import INVENTORIES, default_substitution
from punctkit.files import PunctkitError

INV = INVENTORIES["truecase4"]
RULES = default_substitution(INV)
SRT = "1\n00:00:00,500 --> 00:00:02,000\nhello my name\nis jane\n\n2\n00:00:02,500 --> 00:00:03,000\nhow are you\n"
VTT = ("WEBVTT - made by a recognizer\n\nNOTE a comment\nover two lines\n\nSTYLE\n::cue { color: lime }\n\n"
       "intro\n00:00.500 --> 00:02.000 align:start position:10%\n<v Jane>hello my <i>name</i>\nis jane\n\n"
       "01:00:02.500 --> 01:00:03.000\nhow &amp; you<00:00:02.700>\n")


def units(fmt, p):
    return units_of(REGISTRY[fmt], p, INV, RULES)


@pytest.mark.parametrize("fmt, body", [("srt", SRT), ("srt", "\ufeff" + SRT.split("\n", 1)[1]), ("vtt", VTT)])
def test_subtitles_are_told_from_text_and_read_a_cue_a_unit(fmt, body, tmp_path):
    p = tmp_path / "in.txt"  # a name says nothing
    p.write_text(body, encoding="utf-8")
    assert detect_format(p) == fmt
    got = units(fmt, p)
    assert [u.words for u in got] == [["hello", "my", "name", "is", "jane"],
                                      ["how", "&" if fmt == "vtt" else "are", "you"]]
    start, end = (0.5, 2.0), (2.5, 3.0) if fmt == "srt" else (3602.5, 3603.0)
    for u, (s, e) in zip(got, [start, end]):
        times = [(r["start_s"], r["end_s"]) for r in u.records]
        assert times[0][0] == s and times[-1][1] == pytest.approx(e, abs=1e-3)
        assert all(a <= b for a, b in times) and all(times[k][1] == times[k + 1][0] for k in range(len(times) - 1))


def test_srt_lines_without_a_clear_head_ask_for_the_format(tmp_path):
    p = tmp_path / "in.txt"
    p.write_text("some words first\n\n" + SRT + "\n3\n00:00:04,000 --> 00:00:05,000\nand more\n", encoding="utf-8")
    with pytest.raises(PunctkitError, match="look like srt"):
        detect_format(p)


def test_a_bad_timing_line_is_one_line_naming_it(tmp_path):
    p = tmp_path / "in.srt"
    p.write_text(SRT.replace("00:00:02,500 --> 00:00:03,000", "00:00:02,500 -> 00:00:03,000"), encoding="utf-8")
    with pytest.raises(PunctkitError, match=rf"^{p}:7: expected a cue's timing line .*--input-format"):
        units("srt", p)


def test_punctuate_re_cuts_a_recognizer_s_subtitles_at_sentence_ends(tmp_path):
    p = tmp_path / "talk.srt"
    p.write_text(SRT, encoding="utf-8")
    readable = cli("punctuate", p).stdout
    assert "-->" not in readable and "00:00" not in readable
    assert [w.strip(".,?!").lower() for w in readable.split()] == "hello my name is jane how are you".split()
    out = cli("punctuate", p, "--format", "srt").stdout
    blocks = [b.splitlines() for b in out.strip().split("\n\n")]
    assert blocks[0][1].startswith("00:00:00,500 --> ") and blocks[-1][1].endswith(" --> 00:00:03,000")
    assert [w.strip(".,?!").lower() for b in blocks for ln in b[2:] for w in ln.split()] == readable.lower().replace(
        ".", "").replace(",", "").replace("?", "").split()


def test_stream_refuses_subtitles_in_one_line(tmp_path):
    """--stream reads plain words or JSON lines: a subtitle file is refused at its WEBVTT header or first timing
    line (an SRT's first line, the cue's number, is a word until then, and comes out as the protocol gives the
    words held before an error); no time is ever written as words."""
    for name, body in (("talk.srt", SRT), ("talk.vtt", VTT)):
        p = tmp_path / name
        p.write_text(body, encoding="utf-8")
        r = cli("punctuate", "--stream", p, ok=False)
        assert r.returncode == 1 and "-->" not in r.stdout and "00:" not in r.stdout, r.stdout
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert "subtitles" in r.stderr and "without --stream" in r.stderr


TSV = "start\tend\ttext\n0\t2400\tso what do you think about\n2400\t5000\tnew york i think it is great\n"


@pytest.mark.parametrize("body", [TSV, TSV.split("\n", 1)[1], "\ufeff" + TSV])
def test_whisper_tsv_is_told_from_kaldi_text_and_read_a_segment_a_unit(body, tmp_path):
    p = tmp_path / "talk.txt"
    p.write_text(body, encoding="utf-8")
    assert detect_format(p) == "whisper-tsv"
    got = units("whisper-tsv", p)
    assert [u.words for u in got] == ["so what do you think about".split(), "new york i think it is great".split()]
    for u, (s, e) in zip(got, [(0.0, 2.4), (2.4, 5.0)]):
        assert u.records[0]["start_s"] == s and u.records[-1]["end_s"] == pytest.approx(e, abs=1e-3)


def test_whisper_tsv_comes_back_as_a_table_and_its_sentences_cross_rows(tmp_path):
    p = tmp_path / "talk.tsv"
    p.write_text(TSV, encoding="utf-8")
    out = cli("punctuate", p).stdout.splitlines()
    rows = TSV.splitlines()
    assert out[0] == rows[0] and [ln.split("\t")[:2] for ln in out[1:]] == [ln.split("\t")[:2] for ln in rows[1:]]
    assert [[w.strip(",.?!").lower() for w in ln.split("\t")[2].split()] for ln in out[1:]] == \
        [ln.split("\t")[2].split() for ln in rows[1:]]
    assert out[1][-1] not in ".?!"  # `about` goes on into the next row: one stream
    blocks = [b.splitlines() for b in cli("punctuate", p, "--format", "srt").stdout.strip().split("\n\n")]
    assert blocks[0][1].startswith("00:00:00,000 --> ") and blocks[-1][1].endswith(" --> 00:00:05,000")


def test_a_bad_whisper_tsv_row_is_one_line_naming_it(tmp_path):
    p = tmp_path / "talk.tsv"
    p.write_text(TSV + "5000\tsix\tthen more\n", encoding="utf-8")
    with pytest.raises(PunctkitError, match=rf"^{p}:4: expected a row of Whisper's TSV, .*'5000\\tsix\\tthen more'"):
        units("whisper-tsv", p)


def test_a_cue_that_ends_before_it_starts_gives_its_words_its_start():
    from punctkit.data.formats.asr import text_shares

    assert text_shares(["hello", "there"], 2.0, 1.0) == [(2.0, 2.0), (2.0, 2.0)]
    assert text_shares(["a", "bbb"], 0.0, 2.0) == [(0.0, 0.5), (0.5, 2.0)]
