"""The format registry (punctkit/data/formats/registry.py): every entry keeps what it promises.

Each test runs over every registered format, so an entry added later (Whisper JSON, SRT, ...)
is checked without a new test: its writer and reader round-trip, the detector recognises what
its own writer wrote, and what it says it carries (labels, ids, times) survives the trip.
"""
from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from punct_util import cli, tiny_conf, train_tiny, units_of
from punctkit.cli import app
from punctkit.data.formats import (
    FORMATS,
    REGISTRY,
    AsrUtterance,
    ReadContext,
    Utterance,
    detect_format,
    get_format,
    names,
    read,
    split_text,
    write,
)
from punctkit.data.formats.asr import read_ctm
from punctkit.data.formats.base import OutputOptions
from punctkit.data.formats.registry import punctuate_outputs
from punctkit.data.formats.text import kaldi_text_lines
from punctkit.data.labels import INVENTORIES, O, default_substitution
from punctkit.feats import ctm as feats_ctm
from punctkit.files import PunctkitError
from punctkit.infer.engine import Labelled

INV = INVENTORIES["4class"]
RULES = default_substitution(INV)
UTTS = [
    Utterance("talk1-001", ["so", "if", "we", "do", "n't", "go", "what", "then"],
              ["COMMA", "O", "O", "O", "O", "PERIOD", "O", "QUESTION"]),
    Utterance("talk1-002", ["well", "it", "'s", "3.5", "dollars"], ["COMMA", "O", "O", "O", "PERIOD"]),
    Utterance("talk2-001", ["yes"], ["PERIOD"]),
]
# punctuate's side: words as an ASR system writes them, with times
ASR = [("utt1", ["Hello,", "world", "don't", "go"], [0.0, 0.5, 1.25, 2.0]), ("utt2", ["café", "ok."], [0.1, 0.7])]


def out_path(tmp_path: Path, name: str) -> Path:
    return tmp_path / (name if REGISTRY[name].directory else f"{name}.out")


@pytest.mark.parametrize("name", list(REGISTRY))
def test_every_entry_can_do_something(name):
    f = REGISTRY[name]
    assert f.name == name and f.summary
    assert f.reader or f.writer or f.units or f.emit or f.stream, name
    if f.units is not None or f.reader is not None:
        assert f.directory or f.line_kind is not None or name in ("text", "kaldi_text"), \
            f"{name}: a readable file format needs a line classifier (or is the text fallback)"


@pytest.mark.parametrize("name", [n for n, f in REGISTRY.items() if f.reader and f.writer])
def test_corpus_formats_round_trip_and_are_detected(tmp_path, name):
    f = REGISTRY[name]
    out = out_path(tmp_path, name)
    write(UTTS, out, name, INV)
    assert detect_format(out) == name
    back, inv = read(out)  # detected
    assert [(u.words, u.labels) for u in back] == [(u.words, u.labels) for u in UTTS]
    assert inv.name == "4class"
    if f.ids:
        assert [u.uttid for u in back] == [u.uttid for u in UTTS]
    if f.labels:  # labels carried: a 6-class label comes back as itself, not through marks in text
        six = [Utterance("u1", ["wow", "then"], ["EXCLAMATION", "DOTS"])]
        write(six, out_path(tmp_path / "six", name), name, INVENTORIES["6class"])
        back6, inv6 = read(out_path(tmp_path / "six", name), name)
        assert back6[0].labels == ["EXCLAMATION", "DOTS"] and inv6.name == "6class"


def asr_units(timed: bool) -> list[AsrUtterance]:
    """ASR utterances as punctuate's JSON reader makes them (word records, with or without times)."""
    units = []
    for uttid, toks, starts in ASR:
        p = split_text(" ".join(toks), INV, RULES)
        times = [(s, s + 0.25) if timed else (None, None) for s in starts]
        recs = [{"index": k, "start_s": a, "end_s": b} for k, (a, b) in enumerate(times)]
        source = {"id": uttid, "words": [{"word": t, "start": a, "end": b} for t, (a, b) in zip(toks, times)]}
        units.append(AsrUtterance(uttid, p.words, p.marks, p.written, recs, source))
    return units


# stm carries a segment's times, which its words share: its round trip is tests/data/formats/test_sclite.py's
@pytest.mark.parametrize("name", [n for n, f in REGISTRY.items() if f.units and f.emit and n != "stm"])
def test_punctuate_formats_round_trip_and_are_detected(tmp_path, name):
    """What an entry's punctuate writer writes, its reader reads back: the same words as written,
    the same ids and times (where the format carries them), the written marks as input marks."""
    f = REGISTRY[name]
    src = tmp_path / f"{name}.in"
    units = asr_units(timed=True)
    with open(src, "w", encoding="utf-8") as out:
        f.write([Labelled(u, [O] * len(u.words), toks, starts=True, ends=True)  # each its own stream, as the engine
                 for u, (_, toks, _) in zip(units, ASR)], out, OutputOptions(src=src))
    assert detect_format(src) == name
    ctx = ReadContext.of(src, INV, RULES)
    back = list(f.read(src, ctx))
    assert ctx.dropped == 0
    assert [u.words for u in back] == [u.words for u in units]
    assert [u.written for u in back] == [u.written for u in units]
    assert [u.marks for u in back] == [u.marks for u in units]
    if f.ids:
        assert [u.uttid for u in back] == [u for u, _, _ in ASR]
    if f.times:
        assert [[round(r["start_s"], 3) for r in u.records] for u in back] == [s for _, _, s in ASR]
        assert [[round(r["end_s"], 3) for r in u.records] for u in back] == [[x + 0.25 for x in s] for _, _, s in ASR]


@pytest.mark.parametrize("name", [n for n, f in REGISTRY.items() if f.needs_times])
def test_timed_outputs_refuse_words_without_times(tmp_path, name):
    u = asr_units(timed=False)[0]
    f = REGISTRY[name]
    with pytest.raises(PunctkitError, match=r"x:0 \(utterance utt1\): no word has a start time"):
        f.write([Labelled(u, [O] * len(u.words), ASR[0][1])], io.StringIO(), OutputOptions(src=tmp_path / "x"))


# an input of each kind whose tokens hold a bare mark (a token without a word: its mark goes to the word before)
BARE_MARK = {
    "ctm": "u1 1 0.00 0.30 so\nu1 1 0.30 0.10 ,\nu1 1 0.40 0.20 then\n",
    "jsonl": json.dumps({"id": "u1", "words": [{"word": w, "start": a, "end": a + 0.1} for w, a in (("so", 0),
                                                                                                 (",", 0.2),
                                                                                                 ("then", 0.4))]}),
    "whisper": json.dumps({"segments": [{"start": 0.0, "end": 1.0, "text": " so , then"}]}),
    "vosk": json.dumps({"result": [{"word": w, "start": a, "end": a + 0.1} for w, a in (("so", 0), (",", 0.2),
                                                                                       ("then", 0.4))]}),
    "srt": "1\n00:00:00,000 --> 00:00:01,000\nso , then\n",
    "rev": json.dumps({"monologues": [{"speaker": 1, "elements": [
        {"type": "text", "value": "so", "ts": 0.0, "end_ts": 0.3}, {"type": "text", "value": ",", "ts": 0.3},
        {"type": "text", "value": "then", "ts": 0.4, "end_ts": 0.6}]}]}),
}


@pytest.mark.parametrize("name", sorted(BARE_MARK))
def test_readers_build_their_units_through_the_context(tmp_path, name):
    """Every reader adds its words through its ReadContext: a bare mark gives its mark to the word before and is
    counted once in `ctx.dropped`; each word keeps its times (and, where the input says, its speaker)."""
    p = tmp_path / f"in.{name}"
    p.write_text(BARE_MARK[name], encoding="utf-8")
    assert detect_format(p) == name
    ctx = ReadContext.of(p, INV, RULES)
    (u,) = list(REGISTRY[name].read(p, ctx))
    assert (u.words, u.marks, ctx.dropped) == (["so", "then"], ["COMMA", O], 1)
    assert [r["start_s"] for r in u.records][0] == 0.0 and all(r["end_s"] is not None for r in u.records)
    if name == "rev":
        assert [r["speaker"] for r in u.records] == ["1", "1"] and u.speaker == "1"


def test_a_reader_is_called_one_way(tmp_path):
    """Every punctuate reader is read through the protocol alone, `read(src, ctx)` (a model's inventory and rules
    go in the context): the old call with an inventory in place of a context is gone."""
    assert all(not callable(f.units) for f in REGISTRY.values() if f.units is not None)
    p = tmp_path / "t.txt"
    p.write_text("so then\n", encoding="utf-8")
    with pytest.raises(TypeError):
        REGISTRY["text"].units(p, INV, RULES)  # type: ignore[misc,operator]
    assert [u.words for u in REGISTRY["text"].units.read(p, ReadContext.of(p, INV, RULES))] == [["so", "then"]]


def test_inputs_without_ids_are_named_by_one_rule(tmp_path):
    """The units of an input without ids are named after it and numbered (base.made_id): plain text's by their
    lines (a blank line too), the others' as they come (Vosk's results without words, and partial ones, left
    out)."""
    t = tmp_path / "t.txt"
    t.write_text("so\n\nthen\n", encoding="utf-8")
    assert [u.uttid for u in REGISTRY["text"].read(t, ReadContext.of(t, INV, RULES))] == [
        "t.txt-000001", "t.txt-000002", "t.txt-000003"]
    v = tmp_path / "v.json"
    v.write_text(json.dumps([{"text": "so"}, {"partial": "so th"}, {"text": ""}, {"text": "then"}]), encoding="utf-8")
    ctx = ReadContext.of(v, INV, RULES)
    assert [u.uttid for u in REGISTRY["vosk"].read(v, ctx)] == ["v.json-000001", "v.json-000002"]
    w = tmp_path / "w.json"
    w.write_text(json.dumps({"segments": [{"text": " so", "start": 0, "end": 1}, {"text": "", "start": 1, "end": 2},
                                          {"text": " then", "start": 2, "end": 3}]}), encoding="utf-8")
    assert [u.uttid for u in REGISTRY["whisper"].read(w, ReadContext.of(w, INV, RULES))] == [
        "w.json-000001", "w.json-000002", "w.json-000003"]


def test_names_come_from_the_entries():
    assert FORMATS == ("twocol", "punctuator2", "text", "kaldi_text", "trn", "datadir")
    assert names("reader") == ("twocol", "punctuator2", "text", "kaldi_text", "trn", "datadir", "nlp")
    assert names("units") == ("text", "kaldi_text", "trn", "ctm", "jsonl", "whisper", "nemo", "vosk", "deepspeech",
                              "azure-speech", "pocketsphinx", "rev", "aws", "speechmatics", "google", "watson",
                              "deepgram", "assemblyai", "huggingface", "azure", "nlp", "stm", "srt", "vtt",
                              "whisper-tsv")
    assert names("emit") == ("readable", "twocol", "ctm", "jsonl", "nemo", "nlp", "stm", "srt", "vtt",
                             "timed-json")
    assert [n for n in REGISTRY if REGISTRY[n].times] == ["ctm", "jsonl", "whisper", "vosk", "deepspeech",
                                                          "azure-speech", "pocketsphinx", "rev", "aws", "speechmatics",
                                                          "google", "watson", "deepgram", "assemblyai", "huggingface",
                                                          "azure", "nlp", "stm", "srt", "vtt", "whisper-tsv"]
    assert [n for n in REGISTRY if REGISTRY[n].needs_times] == ["ctm", "stm", "srt", "vtt"]


@pytest.mark.parametrize("role,what", [("reader", "format"), ("writer", "format"), ("units", "input format"),
                                       ("emit", "output format")])
def test_unknown_name_is_one_line_listing_the_names(role, what):
    with pytest.raises(PunctkitError) as e:
        get_format("xml", role, what)
    assert str(e.value) == f"unknown {what} 'xml' (known: {', '.join(names(role))})"
    other = next(n for n in REGISTRY if n not in names(role))
    with pytest.raises(PunctkitError, match=rf"^{what} '{other}' cannot be .* here \(known: "):
        get_format(other, role, what)


def test_unknown_names_on_the_command_line(tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("so ,COMMA then .PERIOD\n")
    known = ", ".join(FORMATS)
    for args in (["convert", src, tmp_path / "o", "--from", "xml"], ["convert", src, tmp_path / "o", "--to", "xml"],
                 ["prepare", src, "-o", tmp_path / "d", "--from", "xml"], ["score", src, src, "--ref-format", "xml"]):
        r = cli(*args, ok=False)  # a usage error, found while the command line is parsed
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
        assert f"Invalid value for '{args[-2]}': 'xml' is not one of: {known}" in r.stderr
    assert not (tmp_path / "o").exists() and not (tmp_path / "d").exists()


@pytest.fixture(scope="module")
def pkg(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("reg")
    conf = tiny_conf({"type": "transformer_tagger", "n_layers": 1, "d_model": 16, "n_heads": 2, "d_ff": 32,
                      "dropout": 0.1}, epochs=1)
    cli("pack", train_tiny(d, conf, train_lines=2000), "-o", d / "tiny.pkt")
    return d / "tiny.pkt"


def test_punctuate_names_its_formats_from_the_registry(tmp_path, pkg):
    src = tmp_path / "in.txt"
    src.write_text("so if we go\n")
    outs = ", ".join(punctuate_outputs())
    # the command line refuses the names while it is parsed (usage errors), with the registry's lists
    r = cli("punctuate", "-m", pkg, src, "--input-format", "xml", ok=False)
    assert r.returncode == 2 and f"'xml' is not one of: {', '.join(names('units'))} " in r.stderr
    r = cli("punctuate", "-m", pkg, src, "--format", "xml", ok=False)
    assert r.returncode == 2 and f"'xml' is not one of: {outs} " in r.stderr
    # and so does the library, for callers from Python
    from punctkit import load_model
    from punctkit.punctuator import punctuate_file

    punct = load_model(pkg)
    with pytest.raises(PunctkitError,
                       match=re.escape(f"unknown input format 'xml' (known: {', '.join(names('units'))})")):
        punctuate_file(punct, src, tmp_path / "o1", input_format="xml")
    with pytest.raises(PunctkitError, match=re.escape(f"unknown output format 'xml' (known: {outs})")):
        punctuate_file(punct, src, tmp_path / "o2", fmt="xml")
    r = cli("punctuate", "-m", pkg, src, "--format", "ctm", ok=False)
    assert r.stderr.strip() == ("punctkit: error: --format ctm needs word times, which input format text does not "
                                "carry: give an input with them (ctm, jsonl, whisper, vosk, deepspeech, azure-speech, "
                                "pocketsphinx, rev, aws, speechmatics, google, watson, deepgram, assemblyai, "
                                "huggingface, azure, nlp, stm, srt, vtt, whisper-tsv)")
    for fmt in FORMATS:  # every corpus format is a punctuate output through its registry writer
        out = out_path(tmp_path, fmt)
        r = CliRunner().invoke(app, ["punctuate", "-m", str(pkg), str(src), "--format", fmt, "-o", str(out)])
        assert r.exit_code == 0, r.output
        back, _ = read(out, fmt)
        assert [w for u in back for w in u.words] == ["so", "if", "we", "go"]


def test_punctuate_writes_the_format_its_output_suffix_names(tmp_path, pkg):
    """Without --format, `-o` with a suffix that names one format (.ctm, .srt, ...) gets that format, as the input
    came: a CTM again for `-o hyp.punct.ctm`; other suffixes and standard output get readable text; --format wins;
    a suffix whose format the input cannot give (times) is one line naming -o."""
    ctm = tmp_path / "in.ctm"
    ctm.write_text("".join(f"{u} 1 {t:.2f} 0.20 {w}\n" for u, words, times in ASR for w, t in zip(words, times)))
    words = [(u, w.lower().strip(".,"), t) for u, ws, ts in ASR for w, t in zip(ws, ts)]
    readable = cli("punctuate", "-m", pkg, ctm, "-q").stdout
    assert readable.startswith("utt1 ") and len(readable.splitlines()) == 2
    cli("punctuate", "-m", pkg, ctm, "-o", tmp_path / "out.ctm", "-q")
    back = [(u, ln.word.lower().strip(".,?"), ln.start_s) for u, lines in read_ctm(tmp_path / "out.ctm")
            for ln in lines]
    assert back == words
    cli("punctuate", "-m", pkg, ctm, "-o", tmp_path / "out.SRT", "-q")
    assert detect_format(tmp_path / "out.SRT") == "srt"
    for name, args in (("out.txt", []), ("out2.ctm", ["--format", "readable"])):
        cli("punctuate", "-m", pkg, ctm, "-o", tmp_path / name, "-q", *args)
        assert (tmp_path / name).read_text() == readable
    src = tmp_path / "in.txt"
    src.write_text("so if we go\n")
    r = cli("punctuate", "-m", pkg, src, "-o", tmp_path / "t.ctm", ok=False)
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1
    assert "--format ctm (the format -o t.ctm names; --format readable writes text there) needs word times" in r.stderr
    assert not (tmp_path / "t.ctm").exists()


# ------------------------------------------------------------------ one reader per format

def test_one_ctm_reader_for_punctuate_and_the_acoustic_models(tmp_path):
    p = tmp_path / "ctm"
    p.write_text(";; a comment\nu1 1 0.00 0.30 so 0.9\nu1 1 0.30 0.20 well\nu2 A 0.5 0.1 ok\n")
    groups = list(read_ctm(p))
    assert [(u, [ln.word for ln in lines]) for u, lines in groups] == [("u1", ["so", "well"]), ("u2", ["ok"])]
    loaded = feats_ctm.read_ctm(p)
    assert {u: [(w.start, w.dur, w.word, w.line) for w in ws] for u, ws in loaded.items()} == \
        {u: [(ln.start_s, ln.dur_s, ln.word, ln.lineno) for ln in lines] for u, lines in groups}
    p.write_text("u1 1 0 0.3 so\nu2 1 0 0.1 ok\nu1 1 0.3 0.2 well\n")
    msg = r"ctm:3: utterance 'u1' continues after other utterances"
    with pytest.raises(PunctkitError, match=msg):
        list(read_ctm(p))
    with pytest.raises(PunctkitError, match=msg):
        feats_ctm.read_ctm(p)
    with pytest.raises(PunctkitError, match=msg):
        units_of(get_format("ctm", "units"), p, INV, RULES)


def test_one_kaldi_text_reader_for_corpora_and_punctuate(tmp_path):
    p = tmp_path / "text"
    p.write_text("a-1 So, if we go.\n\nb-2\tWell then?\na-1 again\n")
    assert [(i, u) for i, u, _ in kaldi_text_lines(p, lines=(1, 3))] == [(1, "a-1"), (3, "b-2")]
    corpus, _ = read(p, "kaldi_text", lines=(1, 3))
    assert [(u.uttid, u.words) for u in corpus] == [("a-1", ["So", "if", "we", "go"]), ("b-2", ["Well", "then"])]
    msg = r"text:4: duplicate utterance id 'a-1'"
    with pytest.raises(PunctkitError, match=msg):
        read(p, "kaldi_text")
    with pytest.raises(PunctkitError, match=msg):
        units_of(get_format("kaldi_text", "units"), p, INV, RULES)


def test_punctuate_given_a_data_directory_says_how_to_punctuate_one(tmp_path):
    d = tmp_path / "test"
    d.mkdir()
    (d / "text").write_text("utt1 so what\nutt2 i think\n")
    r = cli("punctuate", d, ok=False)
    assert r.returncode == 1 and r.stderr.strip() == (
        f"punctkit: error: {d}: a data directory, which punctuate does not read: `punctkit decode MODEL {d} OUT` "
        f"punctuates one (a speaker's utterances run on, as utt2spk says), or give its text file ({d / 'text'})")
    assert cli("punctuate", d / "text").stdout.splitlines()[0].startswith("utt1 So")


def test_a_data_directory_s_text_runs_its_speakers_utterances_on_as_decode_does(tmp_path, iwslt):
    words = [ln.split("\t")[0].lower() for ln in (iwslt / "test2011").read_text(encoding="utf-8").splitlines()
             if ln.strip()][:600]
    d = tmp_path / "test"
    d.mkdir()
    ids = [f"{'spkA' if k < 18 else 'spkB'}-{k:04d}" for k in range(30)]
    (d / "text").write_text("".join(f"{u} {' '.join(words[20 * k:20 * (k + 1)])}\n" for k, u in enumerate(ids)))
    (d / "utt2spk").write_text("".join(f"{u} {u.split('-')[0]}\n" for u in ids))
    cli("punctuate", d / "text", "--format", "kaldi_text", "-o", tmp_path / "p.txt")
    cli("decode", "fast", d, tmp_path / "d.txt", "--format", "kaldi_text")
    ran_on = (tmp_path / "p.txt").read_text()
    assert ran_on == (tmp_path / "d.txt").read_text()
    # the same lines in a file of another name: an utterance a stream, each ending a sentence
    (tmp_path / "lines.txt").write_text((d / "text").read_text())
    cli("punctuate", tmp_path / "lines.txt", "--format", "kaldi_text", "-o", tmp_path / "q.txt")
    alone = (tmp_path / "q.txt").read_text().splitlines()
    assert all(ln[-1] in ".?!" for ln in alone)
    lines = ran_on.splitlines()
    assert any(ln[-1] not in ".?!" for ln in lines[:17]) and lines[17][-1] in ".?!" and lines[-1][-1] in ".?!"
