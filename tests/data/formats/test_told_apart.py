"""Formats read as what they are (issue 78, kinds 1 and 2).

A head line that names a format decides it (an NLP header, WEBVTT, a cue number and its timing line, Whisper's
TSV header); NLP speakers may be any string, with or without a header; a header that names a column twice or
lacks one is one line; a cue without a blank line before it is still a cue, and a bad timing line is one line
naming it; plain text whose lines mostly look like another format's is refused unless the user gave the format.
The fuzz mutates real recognizer files (Earnings-22 calls, and SRT and Whisper JSON made from them) and holds
every reader to "read as the right format, or a one-line error".
"""
from __future__ import annotations

import json
import random
import time
from pathlib import Path

import pytest

from conftest import ROOT
from punct_util import cli, cli_error, units_of
from punctkit.data.formats import REGISTRY, detect_format
from punctkit.data.formats.base import TextInput
from punctkit.data.formats.nlp import non_speech
from punctkit.data.labels import default_substitution, get_inventory
from punctkit.files import PunctkitError

CALLS = ROOT.parent / "shared" / "data" / "earnings22" / "calls"
INV = get_inventory("4class")
RULES = default_substitution(INV)


def call_lines(name: str, rows: int = 300) -> list[str]:
    """The header and the first `rows` token lines of an Earnings-22 call (skips without the data)."""
    p = CALLS / f"{name}.aligned.nlp"
    if not p.is_file():
        pytest.skip(f"Earnings-22 calls not found at {CALLS}")
    return p.read_text(encoding="utf-8").splitlines()[:rows + 1]


def read_units(p: Path | TextInput, fmt: str | None = None) -> tuple[str, list]:
    """The detected (or given) format of `p` and punctuate's units of it, as the format's reader gives them."""
    fmt = fmt or detect_format(p)
    return fmt, units_of(REGISTRY[fmt], p, INV, RULES)


MARKS = ",.?!;:"


def words_of(units: list) -> list[str]:
    """The words of units as written, without the marks after them."""
    return [(w.lead + w.core + w.close).rstrip(MARKS) for u in units for w in u.written]


def tokens_of(lines: list[str]) -> list[str]:
    """The spoken tokens of NLP token lines (not `<inaudible>` and the like), without the marks after them."""
    return [t.rstrip(MARKS) for t in (ln.split("|")[0] for ln in lines) if not non_speech(t)]


def with_speakers(lines: list[str], speakers: list[str]) -> list[str]:
    """NLP lines with the speaker column of each token row set, in turn, from `speakers` (a change where the
    call's speaker changes)."""
    out, turn, last = [lines[0]], -1, None
    for line in lines[1:]:
        f = line.split("|")
        if f[1] != last:
            turn, last = turn + 1, f[1]
        f[1] = speakers[turn % len(speakers)]
        out.append("|".join(f))
    return out


# ------------------------------------------------------------------ NLP: any speaker, with or without a header

@pytest.mark.parametrize("speakers", [["UU"], [""], ["A", "B"], ["S1", "UU", "S2"]], ids=["UU", "empty", "AB", "S"])
@pytest.mark.parametrize("header", [True, False], ids=["header", "no-header"])
def test_nlp_with_any_speaker_is_read_as_nlp(tmp_path, speakers, header):
    lines = with_speakers(call_lines("4351517", 200), speakers)
    p = tmp_path / "call.nlp"
    p.write_text("\n".join(lines if header else lines[1:]) + "\n")
    fmt, units = read_units(p)
    assert fmt == "nlp"
    assert words_of(units) == tokens_of(lines[1:])
    column = [ln.split("|")[1] for ln in lines[1:]]
    assert len(units) == 1 + sum(a != b for a, b in zip(column, column[1:]))  # a unit a speaker's turn
    assert {u.source.speaker for u in units} == set(column) and set(column) <= set(speakers)


@pytest.mark.parametrize("speakers,header", [(["UU"], True), ([""], False), (["A", "B"], True)],
                         ids=["UU", "empty-no-header", "letters"])
def test_punctuate_writes_nlp_back_with_the_same_rows(tmp_path, speakers, header):
    lines = with_speakers(call_lines("4329526", 60), speakers)
    given = lines if header else lines[1:]
    p = tmp_path / "call.nlp"
    p.write_text("\n".join(given) + "\n")
    r = cli("punctuate", p, "--format", "nlp", "-o", tmp_path / "out.nlp")
    assert "unknown" not in r.stderr
    out = (tmp_path / "out.nlp").read_text().splitlines()
    assert len(out) == len(given)
    assert (out[0] == lines[0]) == header  # a file without a header is written back without one
    for a, b in zip(given[header:], out[header:]):
        fa, fb = a.split("|"), b.split("|")
        assert fb[0].lower() == fa[0].lower()  # the word, re-cased
        assert fb[1:4] + fb[5:6] + fb[7:] == fa[1:4] + fa[5:6] + fa[7:]  # speaker, times, other columns kept
    assert [ln.split("|")[1] for ln in out[header:]] == [ln.split("|")[1] for ln in given[header:]]


def test_nlp_header_with_columns_in_another_order_is_read_by_name(tmp_path):
    lines = call_lines("4420696", 40)
    order = [1, 0, 3, 2, *range(4, len(lines[0].split("|")))]
    swapped = ["|".join(ln.split("|")[k] for k in order) for ln in lines]
    p = tmp_path / "swapped.nlp"
    p.write_text("\n".join(swapped) + "\n")
    fmt, units = read_units(p)
    assert fmt == "nlp" and words_of(units) == tokens_of(lines[1:])


@pytest.mark.parametrize("header,what", [
    ("token|speaker|ts|endTs|punctuation|prepunctuation|case|tags|token", "'token' more than once"),
    ("token|speaker|ts|endTs|punctuation|case|speaker", "'speaker' more than once"),
    ("token|speaker|ts|endTs|prepunctuation|case|tags", "lacks the column(s) punctuation"),
    ("token|speaker|endTs|punctuation|prepunctuation|tags|oldTs", "lacks the column(s) ts, case"),
])
def test_bad_nlp_header_is_one_line_naming_line_1(tmp_path, header, what):
    n = len(header.split("|"))
    p = tmp_path / "bad.nlp"
    p.write_text(header + "\n" + "|".join(["Hello", "0", "0.1", "0.5"] + ["x"] * (n - 4)) + "\n")
    line = cli_error(cli("punctuate", p, "--format", "nlp", "-o", tmp_path / "out.nlp", ok=False))
    assert f"{p}:1: " in line and what in line
    assert not (tmp_path / "out.nlp").exists()
    line = cli_error(cli("punctuate", p, "--input-format", "nlp", ok=False))  # told: the same header check
    assert f"{p}:1: " in line and what in line


# ------------------------------------------------------------------ subtitles: cues without blank lines, bad timing

CUES = [((0, 2.0), "Hello there"), ((2.0, 3.5), "how are you"), ((3.5, 6.25), "I am fine\nthank you"),
        ((7.0, 8.0), "2020"), ((8.0, 9.5), "so what now")]


def stamp(t: float, sep: str) -> str:
    ms = round(t * 1000)
    return f"{ms // 3600000:02d}:{ms // 60000 % 60:02d}:{ms // 1000 % 60:02d}{sep}{ms % 1000:03d}"


def subtitles(kind: str, blank: bool, cues: list = CUES, numbered: bool = True) -> str:
    """An SRT or VTT text of `cues`, with or without blank lines between cues."""
    sep = "," if kind == "srt" else "."
    blocks = [(f"{k}\n" if numbered else "") + f"{stamp(s, sep)} --> {stamp(e, sep)}\n{text}"
              for k, ((s, e), text) in enumerate(cues, 1)]
    head = "WEBVTT\n\n" if kind == "vtt" else ""
    return head + ("\n\n" if blank else "\n").join(blocks) + "\n"


@pytest.mark.parametrize("kind", ["srt", "vtt"])
@pytest.mark.parametrize("numbered", [True, False], ids=["numbered", "no-numbers"])
def test_cues_without_blank_lines_are_cues(tmp_path, kind, numbered):
    spaced, packed = tmp_path / f"spaced.{kind}", tmp_path / f"packed.{kind}"
    spaced.write_text(subtitles(kind, True, numbered=numbered))
    packed.write_text(subtitles(kind, False, numbered=numbered))
    a, b = read_units(spaced), read_units(packed)
    assert a[0] == b[0] == kind
    assert words_of(b[1]) == words_of(a[1]) == " ".join(t for _, t in CUES).split()
    assert [u.source for u in b[1]] == [u.source for u in a[1]]  # the same cues, at the same times
    out_a = cli("punctuate", spaced, "--format", "srt").stdout
    assert cli("punctuate", packed, "--format", "srt").stdout == out_a
    assert "-->" in out_a and "00:00:02,000, -->" not in out_a


def test_a_vtt_cue_right_after_the_header_is_a_cue(tmp_path):
    p = tmp_path / "x.vtt"
    p.write_text(subtitles("vtt", False, numbered=False).replace("WEBVTT\n\n", "WEBVTT\n"))
    fmt, units = read_units(p)
    assert fmt == "vtt" and words_of(units) == " ".join(t for _, t in CUES).split()


@pytest.mark.parametrize("head,fmt", [
    ("WEBVTT\tO\nhello\tCOMMA\n", "twocol"),                        # a two-column file whose first word is WEBVTT
    ("WEBVTT is a subtitle format and this is a line of text.\n", "text"),
    ("WEBVTT - my talk\n\n00:00:01.000 --> 00:00:02.000\nhello there\n", "vtt"),
    ("WEBVTT\tKind: captions\n\n00:00:01.000 --> 00:00:02.000\nhello there\n", "vtt"),
    ("WEBVTT\n", "vtt"),
])
def test_a_first_word_webvtt_is_a_header_only_with_cues_or_alone(tmp_path, head, fmt):
    """`WEBVTT` followed by text on the first line is a WebVTT header where the head has a cue (`-->`); `WEBVTT`
    alone on its line always is; else the file is what its lines are (a two-column file's first word, a text's)."""
    f = tmp_path / "in.txt"
    f.write_text(head, encoding="utf-8")
    assert detect_format(f) == fmt


@pytest.mark.parametrize("kind", ["srt", "vtt"])
@pytest.mark.parametrize("blank", [True, False], ids=["blank", "packed"])
@pytest.mark.parametrize("cue,bad", [(1, "00:00:02;000 --> 00:00:03,500"), (1, "00:00:02,000 -> 00:00:03,500"),
                                     (0, "00:00:0,000 --> 00:00:02,000"), (4, "00:00:08,000 --> 9.5")])
def test_bad_timing_line_is_one_line_naming_it(tmp_path, kind, blank, cue, bad):
    text = subtitles(kind, blank)
    good = text.splitlines()
    at = [i for i, ln in enumerate(good) if "-->" in ln][cue]
    good[at] = bad
    p = tmp_path / f"x.{kind}"
    p.write_text("\n".join(good) + "\n")
    line = cli_error(cli("punctuate", p, "--format", "srt", ok=False))
    assert f"{p}:{at + 1}: " in line and "timing line" in line
    with pytest.raises(PunctkitError, match=f":{at + 1}: "):
        read_units(p)


# ------------------------------------------------------------------ plain text that looks like another format

def look_alikes(tmp_path: Path) -> dict[str, Path]:
    """Text files whose lines mostly look like another format's, but which no line classifier takes for it."""
    rows = [ln.split("|") for ln in call_lines("4420696", 30)[1:]]
    files = {
        "nlp": "\n".join("|".join(f[:6]) for f in rows),  # rows with columns cut off
        "srt": "Meeting notes\n" + "\n".join(f"{stamp(k, '.')} -> {stamp(k + 1, '.')} {f[0]}"
                                             for k, f in enumerate(rows)),
        "jsonl": "transcript\n" + "\n".join(json.dumps({"text": f[0], "start": k})[:-3] for k, f in enumerate(rows)),
    }
    out = {}
    for fmt, text in files.items():
        out[fmt] = tmp_path / f"{fmt}.txt"
        out[fmt].write_text(text + "\n")
    return out


def test_text_that_looks_like_another_format_is_refused_when_detected(tmp_path):
    for fmt, p in look_alikes(tmp_path).items():
        assert detect_format(p) in ("text", "kaldi_text"), fmt  # timing lines start with an id-like time
        with pytest.raises(PunctkitError, match=rf"look like {fmt} lines.*--input-format {fmt}"):
            read_units(p)
        line = cli_error(cli("punctuate", p, "-o", tmp_path / "out.txt", ok=False))
        assert f"{p}:" in line and f"look like {fmt} lines" in line and "--input-format" in line
        assert not (tmp_path / "out.txt").exists()


def test_an_explicit_input_format_is_obeyed(tmp_path):
    for fmt, p in look_alikes(tmp_path).items():
        r = cli("punctuate", p, "--input-format", "text")
        given = p.read_text().split()
        assert len(r.stdout.split()) == len(given), fmt  # the lines punctuated as words, each word passing through
        assert [w.lower().rstrip(MARKS) for w in r.stdout.split()] == [w.lower().rstrip(MARKS) for w in given]


def test_prose_with_the_odd_pipe_or_arrow_reads_as_text(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("we compared plan A | plan B and kept A\nthe flow is input --> model --> output\n"
                 "revenue | q1 | q2 | q3 | q4 was flat\nhe said {\"ok\"} and left\nthen we went home\n"
                 "and that was it\n")
    fmt, units = read_units(p)
    assert fmt == "text" and words_of(units) == p.read_text().split()
    assert cli("punctuate", p).stdout.count("\n") == 6
    table = tmp_path / "table.txt"  # a Markdown table is prose too
    table.write_text("| year | revenue | cost | margin |\n| 2019 | 10 | 8 | 2 |\n| 2020 | 12 | 9 | 3 |\n")
    assert read_units(table)[0] == "text"


def test_head_decides_whisper_tsv_and_nlp_over_the_share(tmp_path):
    tsv = tmp_path / "x.tsv"  # one row of three, then prose: the header names the format
    tsv.write_text("start\tend\ttext\n0\t1500\tso what\nthis line is not a row\nnor this\n")
    assert detect_format(tsv) == "whisper-tsv"
    with pytest.raises(PunctkitError, match=r"x.tsv:3: expected a row of Whisper's TSV"):
        read_units(tsv)
    nlp = tmp_path / "x.nlp"
    nlp.write_text(call_lines("4420696", 1)[0] + "\nhello there\nhow are you\nfine\n")
    with pytest.raises(PunctkitError, match=r"x.nlp:2: 1 fields where the header has"):
        read_units(nlp)


# ------------------------------------------------------------------ fuzz: real files mutated

def timed_tokens(rows: list[list[str]]) -> list[list[str]]:
    """The rows of spoken tokens with both times."""
    return [f for f in rows[1:] if f[2] and f[3] and not non_speech(f[0])]


def to_srt(rows: list[list[str]], scale: float = 1.0, per_cue: int = 9) -> str:
    """An SRT of the timed tokens of NLP rows, `per_cue` tokens a cue."""
    timed = timed_tokens(rows)
    cues = [timed[k:k + per_cue] for k in range(0, len(timed), per_cue)]
    return "\n".join(f"{n}\n{stamp(float(c[0][2]) * scale, ',')} --> {stamp(float(c[-1][3]) * scale, ',')}\n"
                     + " ".join(f[0] for f in c) + "\n" for n, c in enumerate(cues, 1))


def to_whisper(rows: list[list[str]], scale: float = 1.0, per_seg: int = 12) -> str:
    """Whisper JSON (`segments[].words[]`) of the timed tokens of NLP rows, pretty-printed as Whisper writes it."""
    timed = timed_tokens(rows)
    segs = []
    for k in range(0, len(timed), per_seg):
        ws = [{"word": " " + f[0], "start": float(f[2]) * scale, "end": float(f[3]) * scale, "probability": 0.9}
              for f in timed[k:k + per_seg]]
        segs.append({"id": len(segs), "start": ws[0]["start"], "end": ws[-1]["end"],
                     "text": "".join(w["word"] for w in ws), "words": ws})
    return json.dumps({"text": "".join(s["text"] for s in segs), "segments": segs, "language": "en"}, indent=2)


def cut_lines(text: str, rng: random.Random, n: int) -> str:
    """`text` with `n` of its lines cut short at a random point."""
    lines = text.splitlines()
    for i in rng.sample(range(len(lines)), min(n, len(lines))):
        lines[i] = lines[i][:rng.randrange(len(lines[i]) + 1)]
    return "\n".join(lines) + "\n"


def nlp_text(rows: list[list[str]]) -> str:
    return "\n".join("|".join(f) for f in rows) + "\n"


def mutants(rng: random.Random) -> list[tuple[str, str, str, list[str] | None]]:
    """(name, text, the right format, its words when the mutation keeps them, else None) of ~50 mutated
    files made from three Earnings-22 calls."""
    out: list[tuple[str, str, str, list[str] | None]] = []
    for call in ("4329526", "4420696", "4351517"):
        rows = [ln.split("|") for ln in call_lines(call)]
        said = tokens_of(call_lines(call)[1:])
        timed = [f[0].rstrip(MARKS) for f in timed_tokens(rows)]
        n = len(rows[0])
        for _ in range(2):  # columns swapped in the header and the rows alike, or in the rows alone
            a, b = rng.sample(range(n), 2)
            order = list(range(n))
            order[a], order[b] = b, a
            swapped = [[f[k] for k in order] for f in rows]
            out.append((f"{call}-swap{a}{b}", nlp_text(swapped), "nlp", said))
            out.append((f"{call}-rowswap{a}{b}", nlp_text(rows[:1] + swapped[1:]), "nlp", None))
        scale = rng.choice([0.001, 60.0, 1000.0])
        scaled = [rows[0]] + [[*f[:2], *(f"{float(t) * scale:.4f}" if t else "" for t in f[2:4]), *f[4:]]
                              for f in rows[1:]]
        out.append((f"{call}-scaled", nlp_text(scaled), "nlp", said))
        for spk in ("UU", "", "B"):
            renamed = [rows[0]] + [[f[0], spk, *f[2:]] for f in rows[1:]]
            out.append((f"{call}-speaker{spk or 'empty'}", nlp_text(renamed), "nlp", said))
            out.append((f"{call}-noheader{spk or 'empty'}", nlp_text(renamed[1:]), "nlp", said))
        out.append((f"{call}-cut", cut_lines(nlp_text(rows), rng, 3), "nlp", None))
        out.append((f"{call}-truncated", nlp_text(rows)[:rng.randrange(200, 4000)], "nlp", None))
        srt = to_srt(rows, rng.choice([0.5, 3.0]))
        out.append((f"{call}-srt", srt, "srt", timed))
        out.append((f"{call}-srt-packed", srt.replace("\n\n", "\n"), "srt", timed))
        out.append((f"{call}-srt-cut", cut_lines(srt, rng, 2), "srt", None))
        out.append((f"{call}-srt-unnumbered", "\n".join(ln for ln in srt.splitlines() if not ln.isdigit()) + "\n",
                    "srt", timed))
        wj = to_whisper(rows, rng.choice([0.01, 100.0]))
        out.append((f"{call}-whisper", wj, "whisper", timed))
        out.append((f"{call}-whisper-swap", wj.replace('"start"', '"tmp"').replace('"end"', '"start"')
                    .replace('"tmp"', '"end"'), "whisper", None))
        out.append((f"{call}-whisper-cut", cut_lines(wj, rng, 1), "whisper", None))
    return out


def test_fuzz_real_files_mutated_read_as_their_format_or_fail_in_one_line(tmp_path):
    t0 = time.time()
    cases = mutants(random.Random(78))
    assert len(cases) >= 45
    read = 0
    for name, text, right, words in cases:
        p = tmp_path / name
        p.write_text(text)
        try:
            fmt, units = read_units(p)
        except PunctkitError as e:
            msg = str(e)
            assert "\n" not in msg and msg.startswith(str(p)), (name, msg)
            assert words is None, (name, msg)  # a mutation that keeps the words is read
            continue
        assert fmt == right, (name, fmt)
        read += 1
        got = words_of(units)
        if words is not None:
            assert got == words, name
        assert all(not any(c.isspace() for c in w) and "-->" not in w and "|" not in w for w in got), name
    assert read >= len(cases) // 2
    assert time.time() - t0 < 20


def test_fuzz_cases_through_the_cli(tmp_path):
    """A few mutants through `punctkit punctuate`: a result in their format, or one line."""
    cases = {name: (text, right) for name, text, right, _ in mutants(random.Random(78))}
    for name in ("4329526-noheaderUU", "4420696-srt-packed", "4351517-whisper-cut", "4329526-truncated"):
        text, right = cases[name]
        p = tmp_path / name
        p.write_text(text)
        r = cli("punctuate", p, "--format", "nlp" if right == "nlp" else "srt", ok=False)
        if r.returncode:
            assert f"{p}" in cli_error(r)
        else:
            assert "unknown to the model" not in r.stderr and r.stdout.strip(), name
