"""Every YAML punctkit reads (configs, `--set` values, decoding options, frontend descriptions,
package members) goes through one reader, punctkit.files.parse_yaml: plain data only, nesting
and aliases bounded, and anything else a one-line error naming where the text came from."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from punct_util import raised_error
from punctkit.config import load_config
from punctkit.decode.options import read_decode_config, read_options, resolve
from punctkit.files import MAX_YAML_DEPTH, parse_yaml, read_yaml_mapping
from punctkit.text.frontend import load_frontend, train_frontend

ROOT = Path(__file__).resolve().parents[2]
BASE = {"model": {"type": "drnn_lwma"}}
LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{b}: &{b} [{', '.join([f'*{a}'] * 10)}]\n" for a, b in zip("abcdef", "bcdefg"))  # 10**7 values


@pytest.mark.parametrize("text, why", [
    ("a: {b: 1", "at line 1, column 9 (while parsing a flow mapping; expected ',' or '}'"),
    ("!!python/object/apply:os.system ['touch pwned']", "could not determine a constructor for the tag "
                                                       "'tag:yaml.org,2002:python/object/apply:os.system'"),
    ("[" * 5000 + "]" * 5000, f"at line 1, column {MAX_YAML_DEPTH + 1} (nested more than 100 levels deep)"),
    ("- " * 3000 + "x", "(nested more than 100 levels deep)"),
    (LAUGHS, "at line 6, column 4 (more than 1000000 values, each alias counted as what it names)"),
    ("&a [*a]", "(an alias inside the value it names)"),
    ("2001-13-01", "(a value of the wrong form: month must be in 1..12)"),
    ("!!int x", "(a value of the wrong form: invalid literal for int()"),
    ("9" * 5000, "(a value of the wrong form: Exceeds the limit (4300 digits)"),
    ("a: 1\n---\nb: 2", "at line 2, column 1 (expected a single document in the stream"),
    ("a: \x00", "(unacceptable character #x0000"),
])
def test_text_no_reader_takes_is_one_line_naming_its_source(text, why, tmp_path):
    msg = raised_error(lambda: parse_yaml(text, "SRC"), "SRC: not valid YAML")
    assert why in msg
    assert not (tmp_path / "pwned").exists() and not Path("pwned").exists()


def test_plain_data_and_aliases_within_the_bounds_read_as_safe_load_reads_them():
    deep = "[" * MAX_YAML_DEPTH + "]" * MAX_YAML_DEPTH
    assert parse_yaml(deep, "s") is not None and parse_yaml("", "s") is None
    assert parse_yaml("w: &w 40\ndecode: {window: *w, step: 20}\nd: 2001-02-03\ns: !!set {a}\nb: !!binary aGk=\n",
                      "s") == {"w": 40, "decode": {"window": 40, "step": 20},
                               "d": __import__("datetime").date(2001, 2, 3), "s": {"a"}, "b": b"hi"}


def test_a_yaml_file_names_its_path_and_line(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("model:\n  type: [x\n")
    raised_error(lambda: read_yaml_mapping(p, "config", "a mapping"), f"{p}: not valid YAML at line 3")
    p.write_bytes(b"a: \xff\n")
    raised_error(lambda: read_yaml_mapping(p, "config", "a mapping"), f"{p}: byte 0xff at offset 3 is not UTF-8")


def test_every_yaml_read_goes_through_the_one_reader():
    """No module reads YAML but punctkit/files/yaml_data.py (parse_yaml): grep punctkit/, local/ and utils/."""
    loads = re.compile(r"yaml\.(safe_|full_|unsafe_)?load(_all)?\b|yaml\.(Safe|Full|Unsafe|C)?Loader\b|\bCSafeLoader\b")
    found = [f"{p.relative_to(ROOT)}:{i}" for d in ("punctkit", "local", "utils")
             for p in sorted((ROOT / d).rglob("*.py"))
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if loads.search(line) and p != ROOT / "punctkit" / "files" / "yaml_data.py"]
    assert found == []


# ------------------------------------------------------------------ --set and config files

@pytest.mark.parametrize("item, start", [
    ("train.lr={a: 1", "--set train.lr: not valid YAML at line 1, column 6"),
    ("train.lr=!!python/object/apply:os.system ['touch pwned']", "--set train.lr: not valid YAML"),
    ("train.lr=" + "[" * 3000, "--set train.lr: not valid YAML at line 1, column 101 (nested more than 100"),
    ("train.lr=2001-13-01", "--set train.lr: not valid YAML (a value of the wrong form: month must be in 1..12)"),
    ("foo.bar=1", "--set foo.bar: unknown config section 'foo' (known: frontend, model, embeddings"),
    ("train..lr=1", "--set expects section.key=value, got 'train..lr=1'"),
    ("train.lr", "--set expects section.key=value"),
    ("train.lr.x=1", "--set train.lr.x: 'lr' is not a section"),
    ("model.type=[drnn_lwma]", "config: the model section needs a 'type' (a model's name), got ['drnn_lwma']"),
])
def test_set_values_that_cannot_be_are_one_line(item, start):
    raised_error(lambda: load_config(BASE, [item]), start)
    assert not Path("pwned").exists()


def test_set_takes_any_yaml_value_and_odd_types_are_refused_where_used():
    from punctkit.train.trainer import TrainOptions

    conf = load_config(BASE, ["train.lr=0.5", "train.betas=[0.8, 0.9]", "train.class_weights=null",
                              "train.distill.probs=p", "decode.window=", "model.delay=4"])
    assert conf["train"]["lr"] == 0.5 and conf["train"]["betas"] == [0.8, 0.9]
    assert conf["train"]["class_weights"] is None and conf["train"]["distill"] == {"probs": "p"}
    assert conf["decode"]["window"] is None and conf["model"] == {"type": "drnn_lwma", "delay": 4}
    conf = load_config({**BASE, "train": {"distill": {"probs": "p"}}}, ["train={lr: 0.1}", "audio={}"])
    assert conf["train"]["lr"] == 0.1 and conf["train"]["seed"] == 1 and conf["audio"] == {"use": None}
    assert conf["train"]["distill"] == {}  # a whole section given by --set replaces the file's, defaults filled
    for value, shown in (("2001-01-01", "datetime.date(2001, 1, 1)"), ("!!binary aGk=", "b'hi'"),
                         ("!!set {a}", "{'a'}")):
        odd = load_config(BASE, [f"train.lr={value}"])["train"]
        raised_error(lambda: TrainOptions.from_section(odd), f"train.lr must be a finite number, got {shown}")


@pytest.mark.parametrize("text, why", [
    ("model: {type: drnn_lwma}\n1: x\n", "unknown config section(s) 1 (known: frontend"),
    ("model: {type: drnn_lwma}\ntrain: {2001-01-01: 1}\n", "unknown train option(s) 2001-01-01"),
    ("model: {type: drnn_lwma, 0: 1}\n", "model option names must be text, got 0"),
    ("[" * 5000, "not valid YAML at line 1, column 101"),
])
def test_config_file_keys_that_are_not_text_are_named(tmp_path, text, why):
    p = tmp_path / "c.yaml"
    p.write_text(text)
    raised_error(lambda: load_config(p), f"{p}: {why}")


def test_train_with_a_set_value_that_is_not_plain_data_is_one_line_and_makes_nothing(tmp_path):
    """`punctkit train --set 'train.lr=!!python/...'`: exit 1, one line, no --exp, nothing run."""
    (tmp_path / "c.yaml").write_text("model: {type: drnn_lwma}\n")
    value = "!!python/object/apply:os.system ['touch pwned']"
    r = subprocess.run([sys.executable, "-m", "punctkit.cli", "train", "--config", "c.yaml", "--train-dir", "d",
                        "--exp", "e", "--set", f"train.lr={value}"], capture_output=True, text=True, cwd=tmp_path,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("punctkit: error: --set train.lr: not valid YAML") and "internal error" not in r.stderr
    assert sorted(q.name for q in tmp_path.iterdir()) == ["c.yaml"]


# ------------------------------------------------------------------ decoding options

TRAINED = {"window": 40, "step": 20, "batch_size": 32, "beam": 1}


@pytest.mark.parametrize("text, start", [
    ("beam: [1\n", "{p}: not valid YAML at line 2"),
    ("beam: !!python/name:os.system\n", "{p}: not valid YAML at line 1, column 7 (could not determine a constructor"),
    ("- beam\n", "{p}: expected a mapping of decode options"),
    ("1: 2\n", "{p}: unknown decode option(s) 1 (known: window"),
])
def test_decode_config_files_are_read_by_the_one_reader(tmp_path, text, start):
    p = tmp_path / "decode.yaml"
    p.write_text(text)
    raised_error(lambda: read_decode_config(p), start.format(p=p))


@pytest.mark.parametrize("conf, start", [
    ({"format": ["datadir"]}, "decode option format: expected a format's name, got ['datadir']"),
    ({"checkpoint": 5}, "decode option checkpoint: expected a file name or null, got 5"),
    ({"beam": "2001-01-01"}, "decode option beam: expected a positive integer"),
])
def test_decode_option_values_of_other_types_are_one_line(conf, start):
    raised_error(lambda: resolve(trained=TRAINED, config=conf), start)


@pytest.mark.parametrize("text, why", [("window: 40\nstep: 0\n",
                                        "decode option step: expected a positive integer, got 0"),
                                       ("window: [40\n", "not valid YAML at line 2")])
def test_recorded_decode_options_are_checked_when_read(tmp_path, text, why):
    p = tmp_path / "decode_options.yaml"
    p.write_text(text)
    raised_error(lambda: read_options(p), f"{p}: {why}")


# ------------------------------------------------------------------ frontend descriptions

@pytest.mark.parametrize("text, why", [
    ("kind: [word]\n", "the frontend kind must be a name"),
    ("kind: word\nvocab: /etc/passwd\n", "{p}: 'vocab': not an option a 'word' frontend can take"),
    ("kind: word\n1: 2\n", "{p}: 1: not an option a 'word' frontend can take"),
    ("kind: word\nmin_count: x\n", "{p}: option min_count of a 'word' frontend must be a whole number >= 0, got 'x'"),
    ("kind: word\nmax_size: 2001-01-01\n", "{p}: option max_size of a 'word' frontend must be a whole number >= 1"),
    ("kind: subword_nmt\ncodes: /etc/passwd\n", "{p}: 'codes': not an option a 'subword_nmt' frontend can take"),
    ("kind: sentencepiece\nin_dir: /\n", "{p}: 'in_dir': not an option a 'sentencepiece' frontend can take"),
    ("kind: plm\nmax_len: x\n", "{p}: option max_len of a 'plm' frontend must be a whole number >= 1, got 'x'"),
    ("kind: plm\npath: [1]\n", "{p}: option path of a 'plm' frontend must be text, got [1]"),
])
def test_frontend_descriptions_of_odd_options_are_one_line(tmp_path, text, why):
    (tmp_path / "frontend.yaml").write_text(text)
    (tmp_path / "vocab.txt").write_text("<pad>\n<unk>\nso\n")
    msg = raised_error(lambda: load_frontend(tmp_path), "")
    assert why.format(p=tmp_path / "frontend.yaml") in msg


def test_a_config_frontend_section_is_checked_before_anything_is_learned(tmp_path):
    raised_error(lambda: train_frontend({"kind": "word", "min_count": "x"}, [["so", "we"]], tmp_path / "fe"),
                   "config frontend section: option min_count of a 'word' frontend must be a whole number >= 0")
    raised_error(lambda: train_frontend({"kind": "word", "out_dir": "/tmp"}, [["so"]], tmp_path / "fe"),
                   "config frontend section: 'out_dir': not an option a 'word' frontend can take")
    assert not (tmp_path / "fe").exists()
    fe = train_frontend({"kind": "word", "min_count": 1, "max_size": None}, [["so", "we"]], tmp_path / "fe")
    assert fe.vocab_size == 4
