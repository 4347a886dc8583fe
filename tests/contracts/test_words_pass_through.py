"""Every output format of `punctkit punctuate` writes each input word exactly as given: only its case
and the marks at its end may change (issue 56, kind 10).

The formats come from the registry (`punctuate_outputs()`), so a new format is held to this too: each
is written from every input format that can feed it (`names("units")`), under a fake model whose
labels (every mark, every case class) are a fixed function of the word, so the test needs no training.
Formats this file knows are read back word by word; a format it does not know must hold each word,
in order, as given (case aside) somewhere in its output.

The words are hard ones: symbols the model never sees (`$5`, `30%`, `q&a`), no-break and ideographic
spaces inside a word (`10\u00a0km`, never split: tokenize.split_words), combining marks, bidi
controls, ZWJ emoji, contractions, inner periods and hyphens, a dash between words, quotes and brackets.
"""
from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from punctkit.data.formats import P2_TOKENS, REGISTRY
from punctkit.data.formats.registry import names, punctuate_outputs
from punctkit.data.tokenize import TRAILING_MARKS, is_mark_token, passes_through, split_words
from punctkit.files import PunctkitError

HARD = [
    "$5", "30%", "10\u00a0km", "100\u202f%", "J.P.", "q&a", "Q&A", "cafe\u0301", "e\u0301te\u0301",
    "\u202ehello\u202c", "\u2067abc\u2069", "\u200fshalom", "👨\u200d👩\u200d👧", "👍🏽", "don't",
    "rock'n'roll", "e-mail", "3.5", "—", "well—maybe", "(see", "it)", "\"quoted,\"", "東京\u3000大阪",
    "iPhone", "NASA", "u.s.", "x\u200by", "a\u2060b", "C++", "<b>", "--", "1,000", "ok?!", "…",
]
# three units (lines, utterances, segments), each with marks-only tokens between words, and tokens that are not
# words (tokenize.passes_through: a recognizer's tags, a lone dash; `<b>`, `--` and `—` of HARD too), one first
NON_SPEECH = ["[noise]", "<unk>", "++UM++", "<sil>"]
LINES = [HARD[:12] + ["<sil>"], ["[noise]"] + HARD[12:24], HARD[24:] + ["so", "<unk>", "++UM++", "what"]]
# the outputs that give back the tokens that are not words, in place (docs/formats.md, "Tokens that are not words")
KEEPS = ("readable", "ctm", "jsonl", "nemo", "stm", "srt", "vtt", "nlp")

MARK_CHARS = TRAILING_MARKS + "-"
CLOSERS = "\"'”’»›)]}"
_TRAILING = re.compile(f"[{re.escape(MARK_CHARS + CLOSERS)}]+$")


def unmarked(tok: str) -> str:
    """A token with the marks of its trailing run of marks and closers deleted (closers stay)."""
    m = _TRAILING.search(tok)
    return tok if m is None else tok[:m.start()] + "".join(c for c in m.group() if c not in MARK_CHARS)


def same_word(given: str, out: str) -> bool:
    """Whether `out` is `given` with only its case and the marks at its end changed; a word without
    case (`$5`, `3.5`, emoji) is exactly the same."""
    g, o = unmarked(given), unmarked(out)
    if g.upper() == g.lower():
        return o == g
    return o.casefold() == g.casefold() and len(o) == len(g)


from words_pass_through_util import FakeModel

# ---------------------------------------------------------------- inputs in every format


def _times(lines: list[list[str]]):
    t = 0.0
    for k, toks in enumerate(lines, 1):
        timed = []
        for tok in toks:
            timed.append((tok, round(t, 2), round(t + 0.3, 2)))
            t += 0.4
        yield k, timed


JSON_INPUTS = ("jsonl", "whisper", "vosk", "deepspeech", "azure-speech", "pocketsphinx", "nemo")


def make_input(fmt: str, path: Path) -> Path:
    """LINES written in input format `fmt`."""
    body = _json_input(fmt) if fmt in JSON_INPUTS or fmt in SERVICE_DOCS else _text_input(fmt)
    path.write_text(body, encoding="utf-8")
    return path


def _text_input(fmt: str) -> str:
    """LINES in the line-based input format `fmt` (text, Kaldi text, CTM, Rev NLP, TSV, trn, stm, subtitles)."""
    if fmt == "text":
        body = "".join(" ".join(toks) + "\n" for toks in LINES)
    elif fmt == "kaldi_text":
        body = "".join(f"utt{k} " + " ".join(toks) + "\n" for k, toks in enumerate(LINES, 1))
    elif fmt == "ctm":
        body = "".join(f"utt{k} 1 {s:.2f} 0.30 {w} 0.9\n" for k, timed in _times(LINES) for w, s, _ in timed)
    elif fmt == "nlp":  # Rev's NLP format: a header, then a token a line
        head = "token|speaker|ts|endTs|punctuation|prepunctuation|case|tags|oldTs|oldEndTs|ali_comment\n"
        body = head + "".join(f"{w}|0|{s:.4f}|{e:.4f}|||LC|[]|||\n" for _, timed in _times(LINES) for w, s, e in timed)
    elif fmt == "whisper-tsv":  # a segment a line of LINES, times in milliseconds
        body = "start\tend\ttext\n" + "".join(f"{round(timed[0][1] * 1000)}\t{round(timed[-1][2] * 1000)}\t"
                                               + " ".join(w for w, _, _ in timed) + "\n" for _, timed in _times(LINES))
    elif fmt == "trn":
        body = "".join(" ".join(toks) + f"\t(spk1-utt{k})\n" for k, toks in enumerate(LINES, 1))
    elif fmt == "stm":  # a segment a line of LINES, one recording
        body = ';; CATEGORY "0" "" ""\n' + "".join(
            f"talk 1 spk {timed[0][1]:.2f} {timed[-1][2]:.2f} <o,f0,male> " + " ".join(w for w, _, _ in timed) + "\n"
            for _, timed in _times(LINES))
    elif fmt in ("srt", "vtt"):  # a cue a line of LINES, its words as its text
        sep = "," if fmt == "srt" else "."
        stamp = (lambda t: f"00:00:{int(t):02d}{sep}{round((t % 1) * 1000):03d}")
        cues = [f"{k}\n{stamp(timed[0][1])} --> {stamp(timed[-1][2])}\n" + " ".join(html.escape(w, quote=False)
                for w, _, _ in timed) + "\n" for k, timed in _times(LINES)]
        body = ("WEBVTT\n\n" if fmt == "vtt" else "") + "\n".join(cues)
    else:
        raise KeyError(fmt)
    return body


def _json_input(fmt: str) -> str:
    """LINES in the JSON input format `fmt` (JSON lines, the ASR toolkits' and services' documents)."""
    if fmt == "jsonl":
        body = "".join(json.dumps({"id": f"utt{k}", "words": [{"word": w, "start": s, "end": e} for w, s, e in timed]},
                                  ensure_ascii=False) + "\n" for k, timed in _times(LINES))
    elif fmt == "whisper":
        segs = [{"start": timed[0][1], "end": timed[-1][2], "text": "".join(" " + w for w, _, _ in timed),
                 "words": [{"word": " " + w, "start": s, "end": e, "probability": 0.9} for w, s, e in timed]}
                for _, timed in _times(LINES)]
        body = json.dumps({"text": "", "segments": segs}, ensure_ascii=False)
    elif fmt == "vosk":
        body = "".join(json.dumps({"result": [{"word": w, "start": s, "end": e, "conf": 1.0} for w, s, e in timed],
                                   "text": " ".join(w for w, _, _ in timed)}, ensure_ascii=False) + "\n"
                       for _, timed in _times(LINES))
    elif fmt == "deepspeech":  # one transcript of all of LINES' words, a less confident one after it
        words = [{"word": w, "start_time": s, "duration": round(e - s, 2)} for _, timed in _times(LINES)
                 for w, s, e in timed]
        body = json.dumps({"transcripts": [{"confidence": -3.5, "words": words},
                                           {"confidence": -9.0, "words": words[:2]}]}, ensure_ascii=False, indent=2)
    elif fmt == "azure-speech":  # a phrase an object of LINES, ticks; a NoMatch result between them
        body = "".join(json.dumps({"RecognitionStatus": "Success", "Offset": round(timed[0][1] * 1e7),
                                   "Duration": round((timed[-1][2] - timed[0][1]) * 1e7),
                                   "DisplayText": " ".join(w for w, _, _ in timed),
                                   "NBest": [{"Confidence": 0.9, "Lexical": " ".join(w for w, _, _ in timed),
                                              "Words": [{"Word": w, "Offset": round(s * 1e7),
                                                         "Duration": round((e - s) * 1e7)} for w, s, e in timed]}]},
                                  ensure_ascii=False) + '\n{"RecognitionStatus": "NoMatch", "Offset": 0}\n'
                       for _, timed in _times(LINES))
    elif fmt == "pocketsphinx":  # an utterance a line of LINES, a filler before it (not a word)
        body = "".join(json.dumps({"b": timed[0][1], "d": round(timed[-1][2] - timed[0][1], 2), "p": 1.0,
                                   "t": " ".join(w for w, _, _ in timed),
                                   "w": [{"b": timed[0][1], "d": 0.0, "p": 1.0, "t": "<sil>"}] +
                                   [{"b": s, "d": round(e - s, 2), "p": 1.0, "t": w} for w, s, e in timed]},
                                  ensure_ascii=False) + "\n" for _, timed in _times(LINES))
    elif fmt == "nemo":
        body = "".join(json.dumps({"audio_filepath": f"a{k}.wav", "pred_text": " ".join(toks)}, ensure_ascii=False)
                       + "\n" for k, toks in enumerate(LINES, 1))
    elif fmt in SERVICE_DOCS:
        body = json.dumps(SERVICE_DOCS[fmt](list(_times(LINES))), ensure_ascii=False, indent=1)
    else:
        raise KeyError(fmt)
    return body


def _mark(tok: str) -> bool:
    return is_mark_token(tok)


# the ASR services' documents (punctkit.data.formats.services), a line of LINES a speaker turn or result
SERVICE_DOCS = {
    "rev": lambda lines: {"monologues": [
        {"speaker": k, "elements": [e for w, s, t in timed for e in (
            [{"type": "punct", "value": w}] if _mark(w) else
            [{"type": "punct", "value": " "}, {"type": "text", "value": w, "ts": s, "end_ts": t, "confidence": 1}])]}
        for k, timed in lines]},
    "aws": lambda lines: {"jobName": "j", "results": {"transcripts": [{"transcript": ""}], "items": [
        {"type": "punctuation", "alternatives": [{"confidence": "0.0", "content": w}]} if _mark(w) else
        {"type": "pronunciation", "start_time": str(s), "end_time": str(t), "speaker_label": f"spk_{k}",
         "alternatives": [{"confidence": "0.99", "content": w}]}
        for k, timed in lines for w, s, t in timed]}},
    "speechmatics": lambda lines: {"format": "2.9", "job": {}, "results": [
        {"type": "punctuation" if _mark(w) else "word", "start_time": s, "end_time": t,
         "alternatives": [{"content": w, "confidence": 1.0, "speaker": f"S{k}"}]}
        for k, timed in lines for w, s, t in timed]},
    "google": lambda lines: {"results": [{"alternatives": [{"transcript": "", "confidence": 0.9, "words": [
        {"startTime": f"{s:.3f}s", "endTime": f"{t:.3f}s", "word": w} for w, s, t in timed]}],
        "resultEndTime": f"{timed[-1][2]}s", "languageCode": "en-us"} for _, timed in lines]},
    "watson": lambda lines: {"result_index": 0, "results": [{"final": True, "alternatives": [
        {"transcript": "", "confidence": 0.9, "timestamps": [[w, s, t] for w, s, t in timed]}]} for _, timed in lines]},
    "deepgram": lambda lines: {"metadata": {"channels": 1}, "results": {"channels": [{"alternatives": [
        {"transcript": "", "words": [{"word": w, "start": s, "end": t, "confidence": 0.9, "speaker": k,
                                      "punctuated_word": w.upper()} for k, timed in lines for w, s, t in timed]}]}]}},
    "assemblyai": lambda lines: {"id": "x", "status": "completed", "audio_url": "https://example.org/a.mp3", "text": "",
                                 "words": [{"text": w, "start": round(s * 1000), "end": round(t * 1000),
                                            "speaker": chr(64 + k)} for k, timed in lines for w, s, t in timed]},
    "huggingface": lambda lines: {"text": "", "chunks": [{"text": " " + w, "timestamp": [s, t]}
                                                          for _, timed in lines for w, s, t in timed]},
    "azure": lambda lines: {"source": "a.wav", "recognizedPhrases": [
        {"channel": 0, "offsetInTicks": round(timed[0][1] * 1e7), "nBest": [{"lexical": "", "words": [
            {"word": w, "offsetInTicks": round(s * 1e7), "durationInTicks": round((t - s) * 1e7)}
            for w, s, t in timed]}]} for _, timed in lines]},
}


def given_words(src_fmt: str = "text", fmt: str | None = None) -> list[str]:
    """The input's words, in order (marks-only tokens are marks, not words), and, for an output `fmt` that
    keeps them (KEEPS), its tokens that are not words in their places (`<unk>`, `<b>`, `--`; PocketSphinx's
    `<sil>` filler before each line)."""
    keep = fmt in KEEPS
    lines = [["<sil>"] + toks for toks in LINES] if src_fmt == "pocketsphinx" else LINES
    return [t for toks in lines for t in toks if (keep and passes_through(t))
            or not (passes_through(t) or is_mark_token(t))]


# ---------------------------------------------------------------- outputs read back, word by word


def _rows_of_blocks(text: str) -> list[list[str]]:
    return [b.split("\n") for b in text.strip("\n").split("\n\n") if b.strip()]


def _jsonl(text: str) -> list[dict]:
    return [json.loads(ln) for ln in text.splitlines() if ln.strip()]


def words_out(fmt: str, out: Path, src_fmt: str) -> list[str] | None:
    """The words of punctuate's output `out` in `fmt` (each as shown) from an input in `src_fmt`, None for a
    format not known here."""
    ids = src_fmt in ("kaldi_text", "ctm", "jsonl")
    if fmt == "trn" or (fmt == "readable" and src_fmt == "trn"):  # the id after the words
        return [w for ln in out.read_text(encoding="utf-8").splitlines() for w in split_words(ln)[:-1]]
    if fmt == "readable" and src_fmt == "whisper-tsv":  # the header, then the times before the words
        return [w for ln in out.read_text(encoding="utf-8").splitlines()[1:] for w in split_words(ln)[2:]]
    if fmt == "stm" or (fmt == "readable" and src_fmt == "stm"):  # five fields before them (and a label); comments
        return [w for ln in out.read_text(encoding="utf-8").splitlines() if not ln.startswith(";;")
                for w in split_words(ln)[6 if src_fmt == "stm" else 5:]]
    if fmt == "datadir":
        return [w for ln in (out / "text").read_text(encoding="utf-8").splitlines() for w in split_words(ln)[1:]]
    text = out.read_text(encoding="utf-8")
    if fmt in ("readable", "text", "kaldi_text"):
        skip = 1 if fmt == "kaldi_text" or (fmt == "readable" and ids) else 0
        return [w for ln in text.splitlines() for w in split_words(ln)[skip:]]
    if fmt == "punctuator2":
        return [w for ln in text.splitlines() for w in split_words(ln) if w not in P2_TOKENS]
    if fmt == "twocol":
        return [ln.split("\t")[0] for ln in text.splitlines() if ln.strip()]
    if fmt == "ctm":
        return [split_words(ln)[4] for ln in text.splitlines()]
    if fmt == "jsonl":
        return [w for obj in _jsonl(text) for w in split_words(obj["text"])]
    if fmt == "nemo":
        return [w for obj in _jsonl(text) for w in split_words(obj["pred_text_punctuated"])]
    if fmt == "timed-json":
        return [w["punctuated"] for obj in _jsonl(text) for w in obj["words"]]
    if fmt == "srt":
        return [w for block in _rows_of_blocks(text) for ln in block[2:] for w in split_words(ln)]
    if fmt == "vtt":
        blocks = _rows_of_blocks(text)
        assert blocks[0] == ["WEBVTT"]
        return [w for block in blocks[1:] for ln in block[1:] for w in split_words(html.unescape(ln))]
    return None


def holds_in_order(text: str, words: list[str]) -> None:
    """Each word, as given up to the marks and closing quotes at its end (which a format may hold apart),
    case folded, found in `text` in order."""
    hay, pos = text.casefold(), 0
    for w in words:
        needle = _TRAILING.sub("", w).casefold() or w.casefold()
        at = hay.find(needle, pos)
        assert at >= 0, f"{w!r} not found as given after offset {pos}"
        pos = at + len(needle)


# ---------------------------------------------------------------- the test

KNOWN = ("readable", "text", "kaldi_text", "trn", "punctuator2", "twocol", "ctm", "jsonl", "nemo", "timed-json",
         "stm", "srt", "vtt", "datadir")
INPUTS = [f for f in ("text", "kaldi_text", "trn", "ctm", "jsonl", "whisper", "vosk", "deepspeech", "azure-speech",
                      "pocketsphinx", "nemo", "nlp", "stm",
                      "srt", "vtt", "whisper-tsv", *SERVICE_DOCS)
          if f in names("units")]


@pytest.mark.parametrize("fmt", punctuate_outputs())
@pytest.mark.parametrize("inventory", ["truecase4", "4class"])
def test_every_output_format_writes_the_words_as_given(fmt, inventory, tmp_path):
    from punctkit.punctuator import punctuate_file

    model = FakeModel(inventory)
    written = 0
    for src_fmt in INPUTS:
        src = make_input(src_fmt, tmp_path / f"in.{src_fmt}")
        out = tmp_path / f"out.{src_fmt}.{fmt}"
        try:
            punctuate_file(model, src, out, input_format=src_fmt, fmt=fmt)
        except PunctkitError as e:  # an output this input cannot feed (no word times, ...)
            if fmt in KNOWN:  # the only refusal a known format makes here
                assert REGISTRY[fmt].needs_times and not REGISTRY[src_fmt].times, (src_fmt, str(e))
            continue
        written += 1
        given = given_words(src_fmt, fmt)
        got = words_out(fmt, out, src_fmt)
        if got is None:  # a format this test does not know: the words as given, in order, in its text
            holds_in_order(out.read_text(encoding="utf-8") if out.is_file() else
                           "\n".join(p.read_text(encoding="utf-8") for p in sorted(out.iterdir()) if p.is_file()),
                           given)
            continue
        assert len(got) == len(given), (src_fmt, got)
        bad = [(g, o) for g, o in zip(given, got) if not same_word(g, o)]
        assert not bad, (src_fmt, bad)
    assert written, f"no input format could be written as {fmt}"


@pytest.mark.parametrize("src_fmt", INPUTS)
def test_twocol_word_column_is_the_word_as_given_and_the_mark_is_in_the_label(src_fmt, tmp_path):
    """twocol: `$5`, not the model's `5`; the mark only in the label; a word's closing quote stays."""
    from punctkit.data.labels import mark_of
    from punctkit.data.tokenize import as_written, model_word, written
    from punctkit.punctuator import punctuate_file

    if src_fmt == "nlp":
        pytest.skip("nlp: checked by the every-format test")
    src = make_input(src_fmt, tmp_path / "in")
    punctuate_file(FakeModel("truecase4"), src, tmp_path / "out.tsv", input_format=src_fmt, fmt="twocol")
    rows = [ln.split("\t") for ln in (tmp_path / "out.tsv").read_text(encoding="utf-8").splitlines() if ln]
    words = [r[0] for r in rows]
    given = given_words()
    assert [unmarked(w).casefold() for w in words] == [unmarked(g).casefold() for g in given]
    for w in ("$5", "30%", "10\u00a0km", "100\u202f%", "3.5", "👨\u200d👩\u200d👧", "1,000"):
        assert w in words  # exactly, never the model's token (`5`, `30`, `10`)
    assert "cafe\u0301".casefold() in [w.casefold() for w in words]  # the combining mark stays
    assert any(w.casefold() == "\u202ehello\u202c" for w in words)  # and the bidi controls
    assert '"quoted"'.casefold() in [w.casefold() for w in words]  # the comma went to the label
    # exactly the word as given less the marks at its end (a period that is the word's stays: `J.P.`, `u.s.`)
    assert [w.casefold() for w in words] == [as_written(written(g, model_word(g))).casefold() for g in given]
    assert {"J.P.", "U.S."} <= {w.upper() for w in words} and "ok" in [w.casefold() for w in words]
    assert {mark_of(r[1]) for r in rows} > {"O"}  # the fake model does give marks, in the label column
    assert not set(NON_SPEECH + ["<b>", "--", "—"]) & set(words)  # tokens that are not words get no label


def test_twocol_output_scores_against_its_reference(tmp_path):
    """score reads twocol hyps: words given as `$5`, `10\u00a0km`, `q&a` in both REF and HYP pair up."""
    from punctkit.punctuator import punctuate_file
    from punctkit.score import score_files

    ref = tmp_path / "ref.txt"
    ref.write_text("So, $5 for 10\u00a0km of q&a? Yes. J.P. said 30% -- don't stop, e-mail me.\n", encoding="utf-8")
    src = make_input("text", tmp_path / "in.txt")
    src.write_text(ref.read_text(encoding="utf-8"), encoding="utf-8")
    punctuate_file(FakeModel("4class"), src, tmp_path / "hyp.twocol", input_format="text", fmt="twocol")
    assert "$5\t" in (tmp_path / "hyp.twocol").read_text(encoding="utf-8")
    for align in (False, True):
        res = score_files(ref, tmp_path / "hyp.twocol", align=align)
        assert res["overall"]["support"] > 0
        if align:
            assert res["alignment"]["substituted"] == 0 and res["alignment"]["ref_unaligned"] == 0


@pytest.mark.parametrize("sep", ["\u00a0", "\u202f", "\u2007", "\u3000"])
@pytest.mark.parametrize("src_fmt", INPUTS)
def test_a_no_break_space_never_splits_a_word(sep, src_fmt, tmp_path):
    """`10<NBSP>km` is one word in every reader, and comes back as it was given (readable output)."""
    from punctkit.punctuator import punctuate_file

    global LINES
    saved = LINES
    LINES = [["we", "ran", f"10{sep}km", "today"], ["then", f"Mr.{sep}Smith", "left"]]
    try:
        src = make_input(src_fmt, tmp_path / "in")
        out = tmp_path / "out.txt"
        punctuate_file(FakeModel("4class"), src, out, input_format=src_fmt, fmt="readable")
    finally:
        LINES = saved
    text = out.read_text(encoding="utf-8")
    assert f"10{sep}km" in text and f"mr.{sep}smith" in text.casefold()
    assert "10 km" not in text and "10km" not in text


def test_split_words_is_str_split_but_at_no_break_spaces():
    from punctkit.data.tokenize import strip_space

    assert split_words(" a\u00a0b\tc\u2003d\u3000e\u2028f\u202fg  ") == ["a\u00a0b", "c", "d\u3000e", "f\u202fg"]
    assert split_words("utt1 10\u00a0km now", 1) == ["utt1", "10\u00a0km now"]
    assert split_words("a \u00a0 b") == ["a", "b"] and split_words(" \t") == []  # no-break spaces alone: no word
    assert strip_space(" \u00a0x\u00a0\n") == "\u00a0x\u00a0" and strip_space(" x ") == "x"
