"""The same labels reach every output format of `punctkit punctuate` (issue 78, kind 4), and tokens that are
not words pass through (kind 5: tokenize.passes_through, docs/formats.md "Tokens that are not words").

One timed input (Whisper JSON: a sentence ending on `U.S.`, `mr.` inside a sentence, a question, commas, a
recognizer's `<unk>`) is punctuated by the shipped `fast` model into every format punctuate writes
(`punctuate_outputs()`); each output is read back to (word, mark) pairs, which must be timed JSON's.
"""
from __future__ import annotations

import html
import json
from pathlib import Path

import pytest

from punct_util import cli
from punctkit.data.formats.corpus import read
from punctkit.data.formats.registry import punctuate_outputs
from punctkit.data.labels import TEXT_MARK, O, mark_of
from punctkit.data.tokenize import passes_through, split_words

# the input's tokens: `.` `?` `,` alone are marks of the word before (forced with --keep-input-marks)
TOKENS = ("so we moved to the U.S. . then mr. smith asked me <unk> where are you from ? and i said , "
          "well , from the U.S. , of course .").split()
WORDS = [t for t in TOKENS if t not in ".?,"]
SPEECH = [w for w in WORDS if not passes_through(w)]
KEPT_CASE = False  # set while an output was written with the input's case kept (--keep-input-marks)


def whisper_input(path: Path, tokens: list[str] = TOKENS) -> Path:
    """`tokens` as one Whisper segment with word times (0.4 s a token)."""
    words = [{"word": " " + t, "start": round(0.4 * k, 2), "end": round(0.4 * k + 0.3, 2), "probability": 0.9}
             for k, t in enumerate(tokens)]
    seg = {"start": 0.0, "end": words[-1]["end"], "text": " ".join(tokens), "words": words}
    path.write_text(json.dumps({"text": seg["text"], "segments": [seg]}), encoding="utf-8")
    return path


def shown_marks(shown: list[str]) -> list[tuple[str, str]]:
    """(word, mark) of words as text shows them, in input order (SPEECH): the text after the given word is its
    mark; a dotted word (`U.S.`) whose own period stands for the sentence's ends a sentence when the next word,
    lower-case in the input, starts with a capital (with the input's case kept, --keep-input-marks, text cannot
    tell: None, PERIOD or O)."""
    words = [w for w in shown if not passes_through(w)]
    assert [w[:len(g)].casefold() for w, g in zip(words, SPEECH)] == [g.casefold() for g in SPEECH], words
    out = []
    for k, (w, g) in enumerate(zip(words, SPEECH)):
        text = w[len(g):]
        if text:
            out.append((g, TEXT_MARK[text]))
        elif g.endswith(".") and KEPT_CASE:
            out.append((g, None))  # type: ignore[arg-type]
        elif g.endswith(".") and k + 1 < len(words) and words[k + 1][0].isupper() and SPEECH[k + 1].islower():
            out.append((g, "PERIOD"))
        else:
            out.append((g, O))
    return out


def marks_of(fmt: str, out: Path) -> list[tuple[str, str]]:
    """The (word, mark) pairs of punctuate's output `out` in `fmt`, the tokens that are not words left out."""
    if fmt == "datadir":
        labels = (out / "labels").read_text(encoding="utf-8").split()[1:]
        return [(w, mark_of(lab)) for w, lab in zip(SPEECH, labels)]
    text = out.read_text(encoding="utf-8")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if fmt == "timed-json":
        return [(w["word"], w["mark"]) for ln in lines for w in json.loads(ln)["words"]]
    if fmt == "twocol":
        return [(ln.split("\t")[0], mark_of(ln.split("\t")[1])) for ln in lines]
    if fmt == "jsonl":
        return [(w["word"].strip(), mark_of(w["label"])) for ln in lines for w in json.loads(ln)["words"]
                if "label" in w]
    if fmt == "nlp":
        rows = [ln.split("|") for ln in lines[1:]]
        return [(r[0], TEXT_MARK[r[4]] if r[4] else O) for r in rows if not passes_through(r[0])]
    if fmt in ("text", "kaldi_text", "trn", "punctuator2"):  # the corpus readers read them back
        utts, _ = read(out, fmt, "4class")
        return [(w, mark_of(lab)) for w, lab in zip(SPEECH, [lab for u in utts for lab in u.labels])]
    if fmt == "ctm":
        return shown_marks([split_words(ln)[4] for ln in lines])
    if fmt == "nemo":
        return shown_marks([w for ln in lines for w in split_words(json.loads(ln)["pred_text_punctuated"])])
    if fmt == "stm":
        return shown_marks([w for ln in lines for w in split_words(ln)[5:]])
    if fmt in ("srt", "vtt"):
        cues = [b.splitlines() for b in text.strip().split("\n\n")]
        cues = [c[2:] if fmt == "srt" else c[1:] for c in cues if c != ["WEBVTT"]]
        return shown_marks([w for c in cues for ln in c for w in split_words(html.unescape(ln))])
    assert fmt == "readable", f"a format this test does not read back: {fmt}"
    return shown_marks(split_words(text))


@pytest.mark.parametrize("forced", [False, True])
def test_every_output_format_has_the_marks_of_timed_json(forced, tmp_path):
    """Every format punctuate writes carries timed JSON's marks, word for word: the model's own, and the
    input's forced on it (--keep-input-marks: `U.S.` ends a sentence, its PERIOD in NLP's `punctuation`)."""
    src = whisper_input(tmp_path / "in.json")
    keep = ["--keep-input-marks"] if forced else []
    outs = {}
    for fmt in punctuate_outputs():
        outs[fmt] = tmp_path / f"out.{fmt}"
        cli("punctuate", src, "-m", "fast", "--format", fmt, "-o", outs[fmt], *keep)
    want = marks_of("timed-json", outs["timed-json"])
    assert [w.casefold() for w, _ in want] == [w.casefold() for w in SPEECH]
    if forced:  # the input's own marks, kept
        assert want[SPEECH.index("U.S.")] == ("U.S.", "PERIOD") and want[SPEECH.index("from")][1] == "QUESTION"
    global KEPT_CASE
    KEPT_CASE = forced
    try:
        got_all = {fmt: marks_of(fmt, out) for fmt, out in outs.items()}
    finally:
        KEPT_CASE = False
    for fmt, got in got_all.items():
        assert [m if m is not None else wm for (_, m), (_, wm) in zip(got, want)] == [m for _, m in want], fmt
        assert None not in {m for _, m in got} or fmt in ("readable", "ctm", "nemo", "stm", "srt", "vtt"), fmt
        assert len(got) == len(SPEECH) and [w.casefold() for w, _ in got] == [w.casefold() for w in SPEECH], fmt
    rows = [ln.split("|") for ln in outs["nlp"].read_text(encoding="utf-8").splitlines()[1:]]
    assert [r[0].casefold() for r in rows] == [w.casefold() for w in WORDS]  # the token never holds the mark
    if forced:
        assert [r[4] for r in rows if r[0] == "U.S."][0] == "."


def test_a_ctm_gives_back_its_non_speech_rows_unchanged(tmp_path):
    """`<unk>`, `[noise]`, `<sil>` rows of a CTM come back as they came (fields, confidence), take no mark,
    and the words around them are labelled as if they were not there."""
    words = "so what do you think about the weather today i think it is fine".split()
    tags = {2: "<unk>", 5: "[noise]", 9: "<sil>", 14: "[laughter]"}
    rows, plain, t, k = [], [], 0.0, 0
    for j in range(len(words) + len(tags)):
        tok = tags.get(j) or words[k]
        k += j not in tags
        line = f"utt1 A {t:.2f} 0.30 {tok} {'0.40' if j in tags else '0.95'}"
        rows.append(line)
        if j not in tags:
            plain.append(line)
        t += 0.4
    ctm, bare = tmp_path / "in.ctm", tmp_path / "bare.ctm"
    ctm.write_text("\n".join(rows) + "\n")
    bare.write_text("\n".join(plain) + "\n")
    out = cli("punctuate", ctm, "--format", "ctm").stdout.splitlines()
    assert len(out) == len(rows)
    for j, tok in tags.items():
        assert out[j] == rows[j]  # the row as it came: no mark, no case
    without = [ln for j, ln in enumerate(out) if j not in tags]
    assert without == cli("punctuate", bare, "--format", "ctm").stdout.splitlines()  # as if not there
    assert any(split_words(ln)[4][-1] in ".?," for ln in without)  # the words around them are labelled
    text = cli("punctuate", ctm).stdout.split()
    assert [w for w in text if passes_through(w)] == list(tags.values())  # readable: in place, unchanged
    labels = cli("punctuate", ctm, "--format", "twocol").stdout
    assert not any(tok in labels for tok in tags.values())  # no word, so no label


@pytest.mark.parametrize("dash", ["-", "--", "\u2014"])
def test_a_lone_dash_in_plain_text_passes_through(dash, tmp_path):
    """A dash between words is no word and no mark the model replaces: it stays in its place in the text
    (readable, and an NLP row of its own)."""
    src = tmp_path / "in.txt"
    src.write_text(f"well {dash} maybe we should go now <unk> and i think so\n", encoding="utf-8")
    out = cli("punctuate", src).stdout.split()
    assert dash in out and "<unk>" in out
    assert [w.rstrip(",.?") for w in out if w not in (dash, "<unk>")][:3] == ["Well", "maybe", "we"]
    nlp = cli("punctuate", src, "--format", "nlp").stdout.splitlines()
    assert [ln.split("|")[:5] for ln in nlp if ln.split("|")[0] in (dash, "<unk>")] == \
        [[dash, "0", "", "", ""], ["<unk>", "0", "", "", ""]]
