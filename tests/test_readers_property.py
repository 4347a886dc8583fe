"""Property tests over every reader: any input gives a result or a one-line PunctkitError
that starts with the file's name (and `:LINE` within the file where there is one);
never another exception. Inputs are random bytes and random text built from the pieces
that trip readers (tabs, labels, mark tokens, numbers, JSON, BOMs, odd line breaks).
"""
from __future__ import annotations

import io
import json
import os
import re
import zipfile
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from punctkit.data.formats import asr, recognizers
from punctkit.data.formats import text as text_formats
from punctkit.data.datadir import read_data_dir
from punctkit.data.formats.base import given_words
from punctkit.data.formats import FORMATS, Report, Utterance, detect_for, detect_format, read, repair_word, write
from punctkit.data.labels import INVENTORIES, default_substitution, get_inventory
from punctkit.data.tokenize import is_mark_token
from punctkit.feats import ctm as feats_ctm
from punctkit.feats.fbank_pitch import fbank_options, pitch_options, read_conf
from punctkit.files import PunctkitError, decode_lines, iter_lines

# PK_EXAMPLES=1000 searches harder (minutes); the default keeps the file well under 30 s
SETTINGS = settings(max_examples=int(os.environ.get("PK_EXAMPLES", 80)), deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
PIECES = ["so", "If", "we", "é", "O", "COMMA", "PERIOD", "QUESTION", "U_COMMA", "L_O", "BANANA", ",COMMA",
          ".PERIOD", "?QUESTIONMARK", ",COMA", "utt1", "utt2", "a-1", "1", "0.5", "-1", "nan", "1e5", "{", "}",
          "[", "]", '"', ":", ",", ";;", "--", "=", "#", "\t", " ", "  ", "\r", "\n", "\n", "\n", "\ufeff",
          "\u2028", "\x85", "\x0c", "\x00", "'", "’", "â€™", "...", "-", "true"]
LINE_TEXT = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=3)), max_size=40).map("".join)
CONTENT = st.one_of(LINE_TEXT.map(lambda s: s.encode("utf-8")), st.binary(max_size=200),
                    LINE_TEXT.map(lambda s: s.encode("utf-16")))
INV = get_inventory("4class")
RULES = default_substitution(INV)


def expect(call: Callable[[], Any], path: Path, n_lines: int | None = None, need_line: bool = False) -> Any:
    """The result of `call`, or else check its PunctkitError: one line that starts with `path`
    (`path:LINE` with LINE a line of the file when it names one; `need_line`: it must)."""
    try:
        return call()
    except PunctkitError as e:
        msg = str(e)
        assert len(msg.splitlines()) == 1 and "\n" not in msg, msg
        assert msg.startswith(str(path)), msg
        m = re.match(re.escape(str(path)) + r":(\d+)", msg)
        assert m or not need_line, msg
        if m and n_lines is not None:
            assert 1 <= int(m.group(1)) <= n_lines, msg
        return None


def lines_in(data: bytes) -> int:
    return max(data.count(b"\n"), data.count(b"\n\x00"), data.count(b"\n\x00\x00\x00")) + 1


# ------------------------------------------------------------------ decoding

@SETTINGS
@given(text=st.text(st.characters(codec="utf-8"), max_size=60) | LINE_TEXT,
       enc=st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "utf-16-be", "utf-32", "latin-1"]),
       cut=st.integers(0, 300), first=st.integers(1, 4))
@example(text="\ufeffa\r\r\nb", enc="utf-16-be", cut=3, first=1)
@example(text="\ufeffa\nb\n", enc="utf-8", cut=1, first=2)
def test_lines_of_any_text_in_any_encoding(tmp_path, text, enc, cut, first):
    """Files and streams (a head already read off, as stdin after detection) give the same lines."""
    if enc == "latin-1":
        text = text.encode("latin-1", "ignore").decode("latin-1")
    data = text.encode(enc)
    if enc == "utf-16-be":
        data = b"\xfe\xff" + data
    given = enc if enc == "latin-1" else None
    assume(not (enc == "utf-16" and text.startswith("\x00")))  # FF FE 00 00 is UTF-32's BOM
    if enc == "utf-8" and text.startswith("\ufeff"):
        text = text[1:]  # a first U+FEFF is taken for a BOM
    pieces = text.split("\n")
    want = [(i, s.rstrip("\r")) for i, s in enumerate(pieces[:-1] if pieces[-1] == "" else pieces, 1)]
    p = tmp_path / "f"
    p.write_bytes(data)
    assert list(iter_lines(p, encoding=given)) == want
    stream = io.BytesIO(data[cut:])
    assert list(decode_lines(stream, "stdin", given, head=data[:cut])) == want
    assert list(iter_lines(p, (first, first + 1), given)) == [w for w in want if first <= w[0] <= first + 1]


# ------------------------------------------------------------------ text formats

@SETTINGS
@given(data=CONTENT, fmt=st.sampled_from([None, "twocol", "punctuator2", "text", "kaldi_text"]))
def test_read_any_format(tmp_path, data, fmt):
    p = tmp_path / "in.txt"
    p.write_bytes(data)
    got = expect(lambda: read(p, fmt), p, lines_in(data), need_line=fmt is not None)
    if got is not None:
        utts, inv = got
        assert all(len(u.words) == len(u.labels) and all(lab in inv for lab in u.labels) for u in utts)
        assert all(w and not any(c.isspace() for c in w) for u in utts for w in u.words)


@SETTINGS
@given(data=CONTENT)
def test_detect_any_content(tmp_path, data):
    p = tmp_path / "in"
    p.write_bytes(data)
    fmt = expect(lambda: detect_format(p), p, lines_in(data))
    assert fmt is None or fmt in FORMATS + ("ctm", "jsonl", "whisper", "nemo", "vosk")


WORD = st.text(st.characters(codec="utf-8", categories=["L", "N"]), min_size=1, max_size=6)


@SETTINGS
@example(utts=[[("Âª", "O")]], fmt="twocol")
@given(utts=st.lists(st.lists(st.tuples(WORD, st.sampled_from(INVENTORIES["6class"].labels)),
                              min_size=1, max_size=8), min_size=1, max_size=5),
       fmt=st.sampled_from(["twocol", "datadir"]))
def test_labelled_formats_round_trip_and_are_detected(tmp_path, utts, fmt):
    us = [Utterance(f"u{k:03d}", [w for w, _ in u], [lab for _, lab in u]) for k, u in enumerate(utts)]
    out = tmp_path / fmt
    write(us, out, fmt, INVENTORIES["6class"])
    assert detect_format(out) == fmt
    report = Report()
    back, _ = read(out, report=report)
    if fmt == "twocol" and any(repair_word(w) != w for u in us for w in u.words):
        assert report.repairs["mojibake or symbols repaired"] > 0  # e.g. 'Âª' -> 'ª': changed, but reported
        return
    assert [(u.words, u.labels) for u in back] == [(u.words, u.labels) for u in us]


# ------------------------------------------------------------------ data directories

@SETTINGS
@given(text=CONTENT, labels=st.one_of(CONTENT, st.none()), inventory=st.sampled_from([None, "4class", "case4"]))
def test_read_data_dir(tmp_path, text, labels, inventory):
    d = tmp_path / "data"
    d.mkdir(exist_ok=True)
    (d / "text").write_bytes(text)
    (d / "labels").unlink(missing_ok=True)
    if labels is not None:
        (d / "labels").write_bytes(labels)
    if inventory:
        (d / "inventory").write_text(inventory + "\n")
    expect(lambda: read_data_dir(d, need_labels=labels is not None), d)
    expect(lambda: read(d), d)


# ------------------------------------------------------------------ ASR inputs

CTM_LINE = st.tuples(st.sampled_from(["utt1", "utt2", "a"]), st.sampled_from(["1", "A"]),
                     st.sampled_from(["0", "0.5", "1.25", "-1", "x", "1e3", "nan", "inf"]),
                     st.sampled_from(["0.1", "0", "-0.2", "y", "0.3"]),
                     st.sampled_from(["so", ",", "well,so", "-", "é", "'s", "COMMA"]),
                     st.sampled_from(["", " 0.9", " x"])).map(lambda t: " ".join(t[:5]) + t[5])
CTM = st.one_of(st.lists(st.one_of(CTM_LINE, LINE_TEXT), max_size=12).map(lambda ls: "\n".join(ls).encode()),
                CONTENT)


@SETTINGS
@given(data=CTM)
def test_read_ctm_both_readers(tmp_path, data):
    p = tmp_path / "x.ctm"
    p.write_bytes(data)
    n = lines_in(data)
    expect(lambda: list(asr.ctm_units(p, INV, RULES, None, [0])), p, n, need_line=True)
    expect(lambda: feats_ctm.read_ctm(p), p, n, need_line=True)


JSON_VALUE = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
                          lambda c: st.lists(c, max_size=3) | st.dictionaries(
                              st.sampled_from(["id", "words", "text", "word", "start", "end", "duration",
                                               "token", "start_time"]), c, max_size=4), max_leaves=12)
TIME = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=3), st.lists(st.integers()))
WORD_ITEM = st.one_of(st.text(max_size=4), st.fixed_dictionaries({}, optional={
    k: st.one_of(TIME, st.sampled_from(["so", ",", "well,so", ""])) for k in
    ("word", "text", "token", "punctuated_word", "start", "end", "duration", "start_time", "end_time")}))
TIMED_ITEM = st.fixed_dictionaries({"word": st.sampled_from(["so", "well", ","])},
                                   optional={"start": TIME, "end": TIME, "duration": TIME})
OBJ = st.fixed_dictionaries({}, optional={"id": TIME, "uttid": TIME, "words": st.one_of(
    st.lists(st.one_of(WORD_ITEM, TIMED_ITEM), max_size=4),
                                                                                     TIME), "text": TIME})
JSONL = st.one_of(st.lists(st.one_of(JSON_VALUE.map(json.dumps), OBJ.map(json.dumps), LINE_TEXT), max_size=6)
                  .map(lambda ls: "\n".join(ls).encode()), CONTENT)


@SETTINGS
@given(data=JSONL)
def test_read_jsonl(tmp_path, data):
    p = tmp_path / "x.jsonl"
    p.write_bytes(data)
    expect(lambda: list(asr.jsonl_units(p, INV, RULES, None, [0])), p, lines_in(data), need_line=True)


@SETTINGS
@given(data=CONTENT, fmt=st.sampled_from(["kaldi_text", "text"]))
def test_read_asr_text(tmp_path, data, fmt):
    p = tmp_path / "x"
    p.write_bytes(data)
    reader = text_formats.kaldi_text_units if fmt == "kaldi_text" else text_formats.text_units
    expect(lambda: list(reader(p, INV, RULES)), p, lines_in(data), need_line=True)
    expect(lambda: detect_for(p, "units", command="punctuate", option="--input-format"), p)


@SETTINGS
@given(items=st.lists(TIMED_ITEM, min_size=1, max_size=4), uttid=TIME)
def test_read_jsonl_word_times(tmp_path, items, uttid):
    p = tmp_path / "x.jsonl"
    p.write_text(json.dumps({"id": uttid, "words": items}) + "\n")
    got = expect(lambda: list(asr.jsonl_units(p, INV, RULES, None, [0])), p, 1, need_line=True)
    if got is not None:
        assert got[0].uttid == ("x.jsonl-000001" if uttid is None or uttid == "" else str(uttid))


# ------------------------------------------------------------------ recognizer outputs (Whisper, NeMo, Vosk)

W_ITEM = st.one_of(JSON_VALUE, st.fixed_dictionaries({}, optional={
    "word": st.one_of(st.sampled_from([" so", " Well,", "  ", "", " ,", " é?", "x y"]), JSON_VALUE),
    "start": TIME, "end": TIME, "probability": TIME, "score": TIME}))
SEGMENT = st.one_of(JSON_VALUE, st.fixed_dictionaries({}, optional={
    "id": TIME, "start": TIME, "end": TIME, "text": st.one_of(st.sampled_from([" so what", "", " ok."]), TIME),
    "words": st.one_of(st.lists(W_ITEM, max_size=4), TIME)}))
WHISPER_DOC = st.fixed_dictionaries({"segments": st.one_of(st.lists(SEGMENT, max_size=4), TIME)},
                                    optional={"text": TIME, "language": TIME})
VOSK_OBJ = st.fixed_dictionaries({}, optional={
    "result": st.one_of(st.lists(st.one_of(W_ITEM, JSON_VALUE), max_size=3), TIME), "text": TIME,
    "partial": TIME, "alternatives": st.lists(JSON_VALUE, max_size=2)})
NEMO_OBJ = st.fixed_dictionaries({}, optional={"audio_filepath": TIME, "pred_text": TIME, "text": TIME,
                                              "duration": TIME})


def dumps_any(value: object, pretty: bool, cut: int | None) -> str:
    """JSON text of `value`, one line or pretty-printed, possibly cut short (a damaged file)."""
    text = json.dumps(value, indent=2 if pretty else None)
    return text if cut is None else text[:cut]


JSON_DOC = st.tuples(st.one_of(WHISPER_DOC, VOSK_OBJ, NEMO_OBJ, JSON_VALUE), st.booleans(),
                     st.one_of(st.none(), st.integers(0, 80)))
JSON_FILE = st.one_of(st.lists(JSON_DOC.map(lambda t: dumps_any(*t)), min_size=1, max_size=4)
                      .map(lambda ds: "\n".join(ds).encode()), JSONL, CONTENT)


@SETTINGS
@given(data=JSON_FILE, fmt=st.sampled_from(["whisper", "nemo", "vosk"]))
def test_read_recognizer_outputs(tmp_path, data, fmt):
    """Any content read as Whisper, NeMo or Vosk gives utterances or a one-line error at a line of the file."""
    p = tmp_path / "x.json"
    p.write_bytes(data)
    reader = {"whisper": recognizers.whisper_units, "nemo": recognizers.nemo_units,
              "vosk": recognizers.vosk_units}[fmt]
    got = expect(lambda: list(reader(p, INV, RULES, None, [0])), p, lines_in(data), need_line=True)
    if got is not None:
        assert all(len(u.words) == len(u.marks) == len(u.written) == len(u.records) for u in got)
        assert all(w.core for u in got for w in u.written)


@SETTINGS
@given(data=JSON_FILE)
def test_detect_recognizer_outputs_and_read_them(tmp_path, data):
    """What detection names, its reader reads or refuses in one line at a line of the file."""
    p = tmp_path / "x.json"
    p.write_bytes(data)
    fmt = expect(lambda: detect_format(p), p, lines_in(data))
    if fmt in ("whisper", "nemo", "vosk", "jsonl", "ctm", "text", "kaldi_text"):
        reader = detect_for(p, "units").units
        expect(lambda: list(reader(p, INV, RULES, None, [0])), p, lines_in(data), need_line=True)


GOOD_TIME = st.one_of(st.none(), st.floats(0, 100), st.integers(0, 100))
GOOD_SEGMENT = st.fixed_dictionaries({"text": st.text(st.sampled_from(" so,.Wé?'-"), max_size=12)}, optional={
    "start": GOOD_TIME, "end": GOOD_TIME, "words": st.lists(st.fixed_dictionaries(
        {"word": st.text(st.sampled_from(" so,.Wé?'-\u00a0x"), max_size=6)},
        optional={"start": GOOD_TIME, "end": GOOD_TIME, "probability": st.floats(0, 1)}), max_size=5)})


@SETTINGS
@given(doc=st.one_of(WHISPER_DOC, st.fixed_dictionaries({"segments": st.lists(GOOD_SEGMENT, max_size=5)})))
def test_whisper_words_pass_through(tmp_path, doc):
    """Every Whisper word with text comes back as it was written, leading spaces stripped."""
    p = tmp_path / "w.json"
    p.write_text(json.dumps(doc))
    got = expect(lambda: list(recognizers.whisper_units(p, INV, RULES, None, [0])), p, 1, need_line=True)
    if got is None:
        return
    want = []
    for seg in doc["segments"]:
        if seg.get("words"):
            want += [w["word"].strip() for w in seg["words"] if w["word"].strip()]
        elif seg.get("text"):
            want += seg["text"].split()
    given = [w for u in got for w in given_words(u)]
    assert [t for t in want if not is_mark_token(t)] == given  # a bare mark marks the word before


# ------------------------------------------------------------------ Kaldi feature confs

CONF_LINE = st.tuples(st.sampled_from(["--", "-", "", "--"]),
                      st.sampled_from(["num-mel-bins", "sample-frequency", "dither", "snip-edges", "min-f0",
                                       "window-type", "frame-shift", "bogus", "", "delay", "pitch-scale"]),
                      st.sampled_from(["=", "", "=="]),
                      st.sampled_from(["40", "16000", "0.0", "true", "false", "x", "", "1e400", "-3", "nan",
                                       "povey", "9" * 30])).map("".join)
CONF = st.one_of(st.lists(st.one_of(CONF_LINE, LINE_TEXT), max_size=6).map(lambda ls: "\n".join(ls).encode()),
                 CONTENT)


@SETTINGS
@given(data=CONF)
def test_read_kaldi_confs(tmp_path, data):
    p = tmp_path / "x.conf"
    p.write_bytes(data)
    n = lines_in(data)
    expect(lambda: read_conf(p), p, n, need_line=True)
    expect(lambda: fbank_options(p), p, n, need_line=True)
    expect(lambda: pitch_options(p), p, n, need_line=True)


# ------------------------------------------------------------------ packed models

MEMBER = st.sampled_from(["punctkit.json", "config.yaml", "model.pt", "model.onnx", "frontend/frontend.yaml",
                          "frontend/vocab.txt", "frontend/", "../evil", "/abs", "frontend/../../x"])
MANIFEST = st.fixed_dictionaries({}, optional={"format": st.sampled_from(["punctkit-model", "x"]),
                                              "format_version": st.sampled_from([1, 2, "1", None])})
MEMBER_DATA = st.one_of(st.binary(max_size=40), JSON_VALUE.map(lambda v: json.dumps(v).encode()),
                        MANIFEST.map(lambda v: json.dumps(v).encode()),
                        JSON_VALUE.map(lambda v: yaml.safe_dump(v).encode()),
                        st.sampled_from([b"kind: word\n", b"kind: bpe\n", b"kind: nope\n", b"kind: [1]\n",
                                         b"[1, 2]\n", b"kind: word\nextra: 1\n", b"resolved: {}\nmodel: {}\n"]))


def small_zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


GOOD_MANIFEST = json.dumps({"format": "punctkit-model", "format_version": 1}).encode()
# a package with every member a reader looks for, each member random or absent
NEAR_VALID = st.fixed_dictionaries(
    {}, optional={"punctkit.json": st.just(GOOD_MANIFEST) | MEMBER_DATA,
                  "config.yaml": st.sampled_from([b"resolved: {}\nmodel: {}\n", b"[1]\n", b"resolved: 1\n"])
                  | MEMBER_DATA,
                  "model.pt": st.binary(max_size=40), "frontend/frontend.yaml": MEMBER_DATA,
                  "frontend/vocab.txt": MEMBER_DATA, "frontend/codes": MEMBER_DATA})
ZIP = st.one_of(st.dictionaries(MEMBER, MEMBER_DATA, max_size=6), NEAR_VALID).map(small_zip)


@SETTINGS
@given(data=st.one_of(st.binary(max_size=300), ZIP, ZIP.flatmap(lambda z: st.integers(0, len(z)).map(lambda k: z[:k]))))
def test_read_package(tmp_path, data):
    from punctkit.punctuator import read_package

    p = tmp_path / "m.pkt"
    p.write_bytes(data)
    expect(lambda: read_package(p), p)
    assert not (tmp_path / "x").exists() and not Path("/abs").exists()


def test_package_with_only_a_manifest_names_what_is_missing(tmp_path):
    """A manifest the generator above also draws passes the first checks: later ones are reached."""
    from punctkit.punctuator import read_package

    manifest = {"format": "punctkit-model", "format_version": 1}
    p = tmp_path / "m.pkt"
    p.write_bytes(small_zip({"punctkit.json": json.dumps(manifest).encode()}))
    with pytest.raises(PunctkitError, match=r"m.pkt: incomplete packed model \(missing config.yaml"):
        read_package(p)
