"""Property tests over every reader: any input gives a result or a one-line PunctkitError
that starts with the file's name (and `:LINE` within the file where there is one);
never another exception. Inputs are random bytes and random text built from the pieces
that trip readers (tabs, labels, mark tokens, numbers, JSON, BOMs, odd line breaks), JSON
and YAML nested thousands deep, and YAML of every tag and odd type (dates, sets, binary,
`!!python/...`, aliases). Besides the readers of the format registry: `--set` and config
files, decoding-option files, frontend descriptions and package opening. Derandomized: the
same examples on every run.
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

from punct_util import units_of
from punctkit.data.datadir import read_data_dir
from punctkit.data.formats import (
    FORMATS,
    REGISTRY,
    Report,
    Utterance,
    asr,
    detect_for,
    detect_format,
    names,
    read,
    recognizers,
    repair_word,
    write,
)
from punctkit.data.formats import text as text_formats
from punctkit.data.formats.base import given_words
from punctkit.data.labels import INVENTORIES, default_substitution, get_inventory
from punctkit.data.tokenize import is_mark_token, split_words, strip_space
from punctkit.decode.options import NAMES as DECODE_NAMES
from punctkit.decode.options import read_decode_config, read_options, resolve
from punctkit.feats import ctm as feats_ctm
from punctkit.feats.fbank_pitch import fbank_options, pitch_options, read_conf
from punctkit.files import PunctkitError, decode_lines, iter_lines, parse_yaml, read_yaml_mapping

# PK_EXAMPLES=1000 searches harder (minutes); the default keeps the file well under 30 s
SETTINGS = settings(max_examples=int(os.environ.get("PK_EXAMPLES", 80)), deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
PIECES = ["so", "If", "we", "é", "O", "COMMA", "PERIOD", "QUESTION", "U_COMMA", "L_O", "BANANA", ",COMMA",
          ".PERIOD", "?QUESTIONMARK", ",COMA", "utt1", "utt2", "a-1", "1", "0.5", "-1", "nan", "1e5", "{", "}",
          "[", "]", '"', ":", ",", ";;", "--", "=", "#", "\t", " ", "  ", "\r", "\n", "\n", "\n", "\ufeff",
          "\u2028", "\x85", "\x0c", "\x00", "'", "’", "â€™", "...", "-", "true"]
LINE_TEXT = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=3)), max_size=40).map("".join)
CONTENT = st.one_of(LINE_TEXT.map(lambda s: s.encode("utf-8")), st.binary(max_size=200),
                    LINE_TEXT.map(lambda s: s.encode("utf-16")))
INV = get_inventory("4class")
RULES = default_substitution(INV)

# JSON and YAML nested far deeper than any parser's recursion limit, closed or cut short
OPENERS = {"[": "]", '{"a": ': "}", '{"segments": [': "]}", '{"id": "u", "words": [': "]}", '{"result": [': "]}",
           "- ": "", "{a: ": "}", "[{a: ": "}]"}
DEEP = st.tuples(st.sampled_from(sorted(OPENERS)), st.integers(1, 5000), st.booleans()).map(
    lambda t: t[0] * t[1] + ("1" + OPENERS[t[0]] * t[1] if t[2] else ""))
# YAML: the pieces that trip a YAML reader (every tag, aliases, merge keys, odd scalars, documents)
YAML_PIECES = ["a", "lr", "window", "type", "kind", "word", "plm", ":", ": ", " ", "\n", "\n  ", "- ", "[", "]", "{",
               "}", ", ", "&x ", "*x", "&y ", "*y", "!!python/object/apply:os.system ", "!!python/name:os.system ",
               "!!binary ", "!!set ", "!!timestamp ", "!!int ", "!!float ", "!!bool ", "!!str ", "!!omap ", "!!seq ",
               "!!map ", "!!null ", "!local ", "? ", "<<: ", "2001-13-45", "2001-02-03", "2001-02-03 04:05:06",
               "1e400", ".inf", ".nan", "0x1F", "0o17", "1_000", "9" * 5000, "~", "null", "yes", "'", '"', "\\", "#",
               "%YAML 1.1\n", "---\n", "...\n", "\t", "|\n", ">\n", "\x00", "\ufeff", "é", "\u2028", "\x85", "aGk=",
               "-1", "0", "1"]
YAML_TEXT = st.lists(st.one_of(st.sampled_from(YAML_PIECES), st.text(max_size=3)), max_size=30).map("".join)
# values of every type safe_load makes, odd ones included (dates, sets, binary, huge ints, nan)
ODD = st.one_of(st.none(), st.booleans(), st.integers(-10, 10 ** 30), st.floats(), st.text(max_size=8), st.dates(),
                st.datetimes(), st.binary(max_size=6), st.frozensets(st.integers(0, 3), max_size=3).map(set))
YAML_KEY = st.one_of(st.sampled_from(["type", "kind", "plm", "path", "window", "step", "lr", "x"]), st.integers(0, 3),
                     st.dates(), st.text(max_size=4))
YAML_VALUE = st.recursive(ODD, lambda c: st.lists(c, max_size=3) | st.dictionaries(YAML_KEY, c, max_size=4),
                          max_leaves=10)


def dump(value: Any) -> str:
    return yaml.safe_dump(value, sort_keys=False)


YAML_DOC = st.one_of(YAML_TEXT, YAML_VALUE.map(dump), DEEP)


def one_line(call: Callable[[], Any]) -> Any:
    """The result of `call`, or None when it raises a one-line PunctkitError (anything else fails the test)."""
    try:
        return call()
    except PunctkitError as e:
        assert "\n" not in str(e) and len(str(e).splitlines()) == 1, str(e)
        return None


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
    expect(lambda: units_of(asr.ctm_units, p, INV, RULES), p, n, need_line=True)
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
JSONL = st.one_of(st.lists(st.one_of(JSON_VALUE.map(json.dumps), OBJ.map(json.dumps), LINE_TEXT, DEEP), max_size=6)
                  .map(lambda ls: "\n".join(ls).encode()), CONTENT)


@SETTINGS
@given(data=JSONL)
def test_read_jsonl(tmp_path, data):
    p = tmp_path / "x.jsonl"
    p.write_bytes(data)
    expect(lambda: units_of(asr.jsonl_units, p, INV, RULES), p, lines_in(data), need_line=True)


@SETTINGS
@given(data=CONTENT, fmt=st.sampled_from(["kaldi_text", "text"]))
def test_read_asr_text(tmp_path, data, fmt):
    p = tmp_path / "x"
    p.write_bytes(data)
    reader = text_formats.kaldi_text_units if fmt == "kaldi_text" else text_formats.text_units
    expect(lambda: units_of(reader, p, INV, RULES), p, lines_in(data), need_line=True)
    expect(lambda: detect_for(p, "units", command="punctuate", option="--input-format"), p)


@SETTINGS
@given(items=st.lists(TIMED_ITEM, min_size=1, max_size=4), uttid=TIME)
def test_read_jsonl_word_times(tmp_path, items, uttid):
    p = tmp_path / "x.jsonl"
    p.write_text(json.dumps({"id": uttid, "words": items}) + "\n")
    got = expect(lambda: units_of(asr.jsonl_units, p, INV, RULES), p, 1, need_line=True)
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
                      .map(lambda ds: "\n".join(ds).encode()), JSONL, CONTENT, DEEP.map(str.encode))


@SETTINGS
@given(data=JSON_FILE, fmt=st.sampled_from(["whisper", "nemo", "vosk"]))
def test_read_recognizer_outputs(tmp_path, data, fmt):
    """Any content read as Whisper, NeMo or Vosk gives utterances or a one-line error at a line of the file."""
    p = tmp_path / "x.json"
    p.write_bytes(data)
    reader = {"whisper": recognizers.whisper_units, "nemo": recognizers.nemo_units,
              "vosk": recognizers.vosk_units}[fmt]
    got = expect(lambda: units_of(reader, p, INV, RULES), p, lines_in(data), need_line=True)
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
        expect(lambda: units_of(reader, p, INV, RULES), p, lines_in(data), need_line=True)


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
    got = expect(lambda: units_of(recognizers.whisper_units, p, INV, RULES), p, 1, need_line=True)
    if got is None:
        return
    want = []
    for seg in doc["segments"]:
        if seg.get("words"):
            want += [strip_space(w["word"]) for w in seg["words"] if strip_space(w["word"])]
        elif seg.get("text"):
            want += split_words(seg["text"])  # never at a no-break space
    given = [w for u in got for w in given_words(u)]
    assert [t for t in want if not is_mark_token(t)] == given  # a bare mark marks the word before


# ------------------------------------------------------------------ every reader of the registry

FILE_READERS = sorted({n for n in names("units")} | {n for n in names("reader") if not REGISTRY[n].directory})
ANY_INPUT = st.one_of(CONTENT, JSON_FILE, CTM, DEEP.map(str.encode))


def test_the_registry_readers_are_all_driven():
    """Every format punctkit reads is drawn below (data directories: test_read_data_dir)."""
    assert {"whisper", "nemo", "vosk", "ctm", "jsonl", "text", "kaldi_text", "twocol",
            "punctuator2"} <= set(FILE_READERS)
    assert set(names("units")) | set(names("reader")) == set(FILE_READERS) | {"datadir"}


@SETTINGS
@given(data=ANY_INPUT, fmt=st.sampled_from(FILE_READERS))
def test_every_registered_reader(tmp_path, data, fmt):
    """Each format's corpus reader and punctuate reader, given any content (deep JSON included), read it
    or refuse it in one line at a line of the file."""
    p = tmp_path / "x"
    p.write_bytes(data)
    entry = REGISTRY[fmt]
    if entry.reader is not None:
        expect(lambda: read(p, fmt), p, lines_in(data), need_line=True)
    if entry.units is not None:
        expect(lambda: units_of(entry, p, INV, RULES), p, lines_in(data), need_line=True)


# ------------------------------------------------------------------ YAML: the one reader, --set, configs

@SETTINGS
@given(text=YAML_DOC)
@example(text="[" * 5000)
def test_parse_any_yaml(tmp_path, text):
    """Any text gives plain data or one line naming its source; as a file, one line naming the file."""
    expect(lambda: parse_yaml(text, "SRC"), Path("SRC"))
    p = tmp_path / "c.yaml"
    p.write_text(text, encoding="utf-8", errors="surrogatepass")
    expect(lambda: read_yaml_mapping(p, "config", "a mapping"), p)


SET_KEY = st.lists(st.one_of(st.sampled_from(["train", "model", "frontend", "decode", "embeddings", "audio", "resolved",
                                              "lr", "betas", "distill", "probs", "type", "kind", "window", "x", "",
                                              "1"]), st.text(max_size=3)), min_size=1, max_size=3).map(".".join)
BASE_CONFIG = {"model": {"type": "drnn_lwma"}}


def before_training(conf_or_path: Any, overrides: list[str]) -> Any:
    """What `punctkit train` checks of its config and `--set` before it makes --exp."""
    from punctkit.config import load_config
    from punctkit.models.registry import model_needs
    from punctkit.train.trainer import TrainOptions

    conf = load_config(conf_or_path, overrides)
    model_needs(conf["model"])
    return TrainOptions.from_section(conf["train"])


@SETTINGS
@given(key=SET_KEY, eq=st.sampled_from(["=", "=", ""]), value=YAML_DOC)
@example(key="train.lr", eq="=", value="{a: 1")
@example(key="train.lr", eq="=", value="!!python/object/apply:os.system ['touch pwned']")
def test_set_any_key_and_value(key, eq, value):
    one_line(lambda: before_training(BASE_CONFIG, [key + eq + value]))


SECTION_KEYS = {"frontend": ["kind", "min_count", "path"], "train": ["lr", "betas", "window", "distill", "lookahead"],
                "embeddings": ["word", "freeze", "plm_vectors"], "decode": ["window", "step", "beam"],
                "audio": ["use"], "resolved": ["inventory", "env"], "bogus": ["x"]}
MODEL_SECTION = st.one_of(st.fixed_dictionaries({"type": st.one_of(st.sampled_from(["drnn_lwma", "transformer",
                                                                                      "nope"]), YAML_VALUE)},
                                                optional={k: YAML_VALUE for k in ("dropout", "direction", "delay",
                                                                                  "n_layers", "plm")}), YAML_VALUE)
CONFIG_DOC = st.one_of(st.fixed_dictionaries({"model": MODEL_SECTION}, optional={
    sec: st.one_of(st.dictionaries(st.sampled_from(keys) | YAML_KEY, YAML_VALUE, max_size=3), YAML_VALUE)
    for sec, keys in SECTION_KEYS.items()}).map(dump), YAML_DOC)


@SETTINGS
@given(doc=CONFIG_DOC)
def test_config_file_of_any_yaml(tmp_path, doc):
    p = tmp_path / "c.yaml"
    p.write_text(doc, encoding="utf-8", errors="surrogatepass")
    one_line(lambda: before_training(p, []))


DECODE_DOC = st.one_of(st.dictionaries(st.sampled_from(list(DECODE_NAMES) + ["x"]) | YAML_KEY,
                                       YAML_VALUE | st.integers(-2, 60), max_size=4).map(dump), YAML_DOC)


@SETTINGS
@given(doc=DECODE_DOC)
def test_decoding_options_file_of_any_yaml(tmp_path, doc):
    """A decoding config (resolved as `decode --config` resolves it) and a recorded decode_options.yaml."""
    p = tmp_path / "decode.yaml"
    p.write_text(doc, encoding="utf-8", errors="surrogatepass")
    conf = expect(lambda: read_decode_config(p), p)
    if conf is not None:
        one_line(lambda: resolve(trained={"window": 40, "step": 20, "batch_size": 32, "beam": 1}, config=conf))
    expect(lambda: read_options(p), p)


FRONTEND_DOC = st.one_of(st.fixed_dictionaries({}, optional={
    "kind": st.one_of(st.sampled_from(["word", "subword_nmt", "sentencepiece", "nope"]), YAML_VALUE),
    **{k: st.one_of(YAML_VALUE, st.integers(-1, 9)) for k in ("min_count", "max_size", "lowercase", "label_on",
                                                               "merges", "vocab", "codes", "in_dir", "max_len")}})
    .map(dump), YAML_DOC)


@SETTINGS
@given(doc=FRONTEND_DOC)
def test_frontend_description_of_any_yaml(tmp_path, doc):
    """frontend.yaml beside a good vocabulary: the frontend, or one line naming a file of the directory."""
    from punctkit.text.frontend import load_frontend

    (tmp_path / "frontend.yaml").write_text(doc, encoding="utf-8", errors="surrogatepass")
    (tmp_path / "vocab.txt").write_text("<pad>\n<unk>\nso\n")
    msg = one_line(lambda: load_frontend(tmp_path))
    assert msg is None or msg.vocab_size > 0


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
                          "frontend/vocab.txt", "frontend/", "../evil", "/abs", "frontend/../../x",
                          "models/0/punctkit.json", "models/0/config.yaml", "models/0/frontend/frontend.yaml",
                          "models/0/frontend/vocab.txt", "models/0/model.pt", "models/1/punctkit.json"])
MANIFEST = st.fixed_dictionaries({}, optional={"format": st.sampled_from(["punctkit-model", "x"]),
                                              "format_version": st.sampled_from([1, 2, "1", None]),
                                              "kind": st.sampled_from(["ensemble", "x"]) | JSON_VALUE,
                                              "weights": st.just([1.0]) | JSON_VALUE, "card": JSON_VALUE})
MEMBER_DATA = st.one_of(st.binary(max_size=40), JSON_VALUE.map(lambda v: json.dumps(v).encode()),
                        MANIFEST.map(lambda v: json.dumps(v).encode()),
                        JSON_VALUE.map(lambda v: yaml.safe_dump(v).encode()), YAML_DOC.map(str.encode),
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
    from punctkit.package import read_package

    p = tmp_path / "m.pkt"
    p.write_bytes(data)
    expect(lambda: read_package(p), p)
    assert not (tmp_path / "x").exists() and not Path("/abs").exists()


LEGACY_WORD = Path(__file__).resolve().parents[1] / "fixtures" / "legacy" / "word.pkt"


@st.composite
def changed_package(draw: Any) -> bytes:
    """tests/fixtures/legacy/word.pkt with punctkit.json, config.yaml or frontend/frontend.yaml changed:
    a value anywhere in it replaced by any YAML value, removed, or a key added, up to three times."""
    with zipfile.ZipFile(LEGACY_WORD) as z:
        members = {i.filename: z.read(i) for i in z.infolist()}
    name = draw(st.sampled_from(["punctkit.json", "config.yaml", "frontend/frontend.yaml"]))
    data = yaml.safe_load(members[name])  # trusted: our own legacy file (JSON is YAML)
    for _ in range(draw(st.integers(1, 3))):
        node = data
        while draw(st.booleans()) and any(isinstance(v, dict) for v in node.values()):
            node = node[draw(st.sampled_from(sorted((k for k, v in node.items() if isinstance(v, dict)), key=str)))]
        key = draw(st.sampled_from(sorted(node, key=str)) | YAML_KEY) if node else draw(YAML_KEY)
        if draw(st.booleans()):
            node[key] = draw(YAML_VALUE)
        else:
            node.pop(key, None)
    text = json.dumps(data, default=str, skipkeys=True) if name.endswith(".json") else dump(data)
    return small_zip(dict(members, **{name: text.encode()}))


@SETTINGS
@given(data=changed_package())
def test_open_a_changed_package(tmp_path, data):
    """What `punctuate -m` does with a package whose config, frontend description or manifest holds
    values of any type: it punctuates, or says in one line why not; nothing else is raised."""
    from punctkit import load_model

    p = tmp_path / "m.pkt"
    p.write_bytes(data)
    model = one_line(lambda: load_model(p, backend="torch", threads=1))
    if model is not None:
        got = one_line(lambda: model.punctuate("so we went home and then we slept"))
        assert got is None or ([w.strip(",.?!").lower() for w in got.split()]
                               == "so we went home and then we slept".split())


def test_package_with_only_a_manifest_names_what_is_missing(tmp_path):
    """A manifest the generator above also draws passes the first checks: later ones are reached."""
    from punctkit.package import read_package

    manifest = {"format": "punctkit-model", "format_version": 1}
    p = tmp_path / "m.pkt"
    p.write_bytes(small_zip({"punctkit.json": json.dumps(manifest).encode()}))
    with pytest.raises(PunctkitError, match=r"m.pkt: incomplete packed model \(missing config.yaml"):
        read_package(p)
