"""Decoding options have one source: command line > what training fixed (the window) >
the decoding config > the model's `decode:` section > defaults (punctkit/decode/options.py),
for `punctkit decode`, validation inside training, `Engine` and `pack`'s card."""
from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
import yaml

from conftest import IWSLT
from punct_util import cli, json_without, tiny_conf, train_tiny
from punctkit.decode.options import DecodeOptions, read_decode_config, read_options, resolve
from punctkit.files import PunctkitError
from punctkit.package.write import model_package

TRAINED = {"window": 40, "step": 20, "batch_size": 32, "beam": 1}


# ------------------------------------------------------------------ the resolve function alone

def test_defaults_then_model_then_config_then_command_line():
    assert resolve() == DecodeOptions()
    assert resolve(trained=TRAINED) == DecodeOptions(window=40, step=20, batch_size=32, beam=1)
    conf = {"beam": 4, "step": 10, "batch_size": 8, "nbest": 3, "format": "twocol"}
    o = resolve(trained=TRAINED, config=conf)
    assert (o.window, o.step, o.batch_size, o.beam, o.nbest, o.format) == (40, 10, 8, 4, 3, "twocol")
    o = resolve({"beam": 2, "step": 5, "batch_size": 4, "nbest": 1, "format": "datadir", "window": None},
                TRAINED, conf)
    assert (o.window, o.step, o.batch_size, o.beam, o.nbest, o.format) == (40, 5, 4, 2, 1, "datadir")


def test_a_decoding_config_cannot_change_the_trained_window():
    said: list[str] = []
    o = resolve(trained=TRAINED, config={"window": 50, "step": 25}, config_name="conf/decode.yaml", log=said.append)
    assert o.window == 40 and o.step == 25
    assert len(said) == 1 and "conf/decode.yaml sets window 50" in said[0] and "keeping 40" in said[0]
    said.clear()
    o = resolve({"window": 50}, TRAINED, {"window": 50}, log=said.append)
    assert o.window == 50 and len(said) == 1 and "from the command line" in said[0]
    said.clear()
    assert resolve(trained=TRAINED, config={"window": 40}, log=said.append).window == 40 and not said


def test_values_no_decoding_can_use_are_one_line_errors(tmp_path):
    with pytest.raises(PunctkitError, match="--step 60: must be between 1 and the window"):
        resolve({"step": 60}, TRAINED)
    with pytest.raises(PunctkitError, match="beam: expected a positive integer"):
        resolve(trained=TRAINED, config={"beam": 0})
    with pytest.raises(PunctkitError, match="^decode step 50: must be between 1 and the window"):
        resolve(trained=TRAINED, config={"step": 50})
    bad = tmp_path / "d.yaml"
    bad.write_text("beam: 2\nlength_penalty: 1\n")
    with pytest.raises(PunctkitError, match="unknown decode option.*length_penalty"):
        read_decode_config(bad)


# ------------------------------------------------------------------ through the commands

SEQ2SEQ = tiny_conf({"type": "transformer_seq2seq", "n_layers": 1, "n_dec_layers": 1, "d_model": 32, "n_heads": 2,
                     "d_ff": 64, "dropout": 0.1}, epochs=3)
SEQ2SEQ["decode"] = {"window": 30, "step": 15, "batch_size": 32, "beam": 1}


@pytest.fixture(scope="module")
def exp(tmp_path_factory) -> Path:
    return train_tiny(tmp_path_factory.mktemp("opts"), SEQ2SEQ)


def test_training_writes_the_decoding_it_validated_with(exp):
    conf = yaml.safe_load((exp / "config.yaml").read_text())
    assert conf["decode"] == {"window": 30, "step": 15, "batch_size": 32, "beam": 1, "stream_end": "sentence",
                              "overlap": "central", "capital_threshold": 0.1, "capital_weight": 0.0}
    hist = json.loads((exp / "history.json").read_text())
    assert hist[0]["valid_f1"] is not None  # validated (fit.py passes decode's validation)


def test_validation_scores_what_decode_gives_with_the_same_options(exp, tmp_path):
    """n_average 1: model.avg.pt is the best validated epoch; `punctkit decode` of the dev set
    under the model's own options scores exactly the dev F1 training logged for it."""
    d = exp.parent
    cli("decode", exp, d / "valid", tmp_path / "hyp")
    assert read_options(tmp_path / "hyp" / "decode_options.yaml").search() == {**SEQ2SEQ["decode"],
                                                                              "stream_end": "sentence",
                                                                              "overlap": "central",
                                                                              "capital_threshold": 0.1,
                                                                              "capital_weight": 0.0}
    cli("score", d / "valid", tmp_path / "hyp", "--out", tmp_path)
    f1 = json.loads((tmp_path / "score.json").read_text())["overall"]["f1"]
    best = max(h["valid_f1"] for h in json.loads((exp / "history.json").read_text()))
    assert best > 0 and best == pytest.approx(f1, abs=1e-9)


def test_nbest_1_and_format_datadir_on_the_command_line_beat_the_config(exp, tmp_path):
    d = exp.parent
    conf = tmp_path / "decode_nbest.yaml"
    conf.write_text("nbest: 3\nformat: twocol\nbeam: 2\nwindow: 50\n")
    r = cli("decode", exp, d / "test", tmp_path / "a", "--config", conf, "--nbest", "1", "--format", "datadir")
    out = tmp_path / "a"
    assert (out / "text").is_file() and not (out / "nbest").exists()  # a data dir, no n-best lists
    opts = read_options(out / "decode_options.yaml")
    assert (opts.nbest, opts.format, opts.beam, opts.window, opts.step) == (1, "datadir", 2, 30, 15)
    assert "sets window 50" in r.stderr and "keeping 30" in r.stderr
    # the config alone: its n-best and format hold, its window still does not
    cli("decode", exp, d / "test", tmp_path / "b.tsv", "--config", conf)
    assert (tmp_path / "b.tsv.nbest").is_file()
    opts = read_options(tmp_path / "b.tsv.decode_options.yaml")
    assert (opts.nbest, opts.format, opts.window) == (3, "twocol", 30)
    # an explicit --window is the one way to decode at another window
    r = cli("decode", exp, d / "test", tmp_path / "c.tsv", "--config", conf, "--window", "50")
    assert read_options(tmp_path / "c.tsv.decode_options.yaml").window == 50
    assert "window 50 from the command line" in r.stderr


def test_the_cards_beam_is_the_beam_of_its_score(exp, tmp_path):
    d = exp.parent
    dec = tmp_path / "decode_test_beam3"
    cli("decode", exp, d / "test", dec / "hyp", "--beam", "3")
    cli("score", d / "test", dec / "hyp", "--out", dec)
    cli("pack", exp, "-o", tmp_path / "m.pkt", "--card-results", dec / "score.json")
    with zipfile.ZipFile(tmp_path / "m.pkt") as z:
        card = json.loads(z.read("punctkit.json"))["card"]
        packed = yaml.safe_load(z.read("config.yaml"))
    score = json.loads((dec / "score.json").read_text())["overall"]["f1"]
    res = card["results"]["decode_test_beam3"]
    assert res["f1"] == score and res["decode"] == {"window": 30, "step": 15, "beam": 3, "overlap": "central",
                                                   "capital_threshold": 0.1, "capital_weight": 0.0}
    assert card["decode"]["beam"] == 3 and packed["decode"]["beam"] == 3  # not the model's beam 1
    from punctkit import load_model

    assert load_model(tmp_path / "m.pkt").options.beam == 3
    # scores decoded with different settings cannot share one card
    other = tmp_path / "decode_test"
    cli("decode", exp, d / "test", other / "hyp")
    cli("score", d / "test", other / "hyp", "--out", other)
    r = cli("pack", exp, "-o", tmp_path / "n.pkt", "--card-results", dec / "score.json",
            "--card-results", other / "score.json", ok=False)
    assert r.returncode != 0 and "decoded with different settings" in r.stderr
    assert not (tmp_path / "n.pkt").exists()


def test_a_package_decodes_with_the_overlap_of_its_quoted_scores(exp, tmp_path):
    """Scores decoded with `--overlap average` give the package that overlap: it then decodes as they
    were decoded (the same hypothesis), and the card says so."""
    d = exp.parent
    dec = tmp_path / "decode_test_avg"
    cli("decode", exp, d / "test", dec / "hyp", "--overlap", "average", "--step", "10")
    assert read_options(dec / "hyp" / "decode_options.yaml").overlap == "average"
    cli("score", d / "test", dec / "hyp", "--out", dec)
    cli("pack", exp, "-o", tmp_path / "m.pkt", "--card-results", dec / "score.json")
    with zipfile.ZipFile(tmp_path / "m.pkt") as z:
        card = json.loads(z.read("punctkit.json"))["card"]
        packed = yaml.safe_load(z.read("config.yaml"))
    assert packed["decode"]["overlap"] == "average" and card["decode"]["overlap"] == "average"
    from punctkit import load_model

    assert load_model(tmp_path / "m.pkt").options.overlap == "average"
    cli("decode", tmp_path / "m.pkt", d / "test", tmp_path / "again")
    assert (tmp_path / "again" / "labels").read_text() == (dec / "hyp" / "labels").read_text()
    central = tmp_path / "central"
    cli("decode", exp, d / "test", central, "--step", "10")
    assert (central / "labels").read_text() != (dec / "hyp" / "labels").read_text()  # the overlap made a difference
    r = cli("decode", exp, d / "test", tmp_path / "bad", "--overlap", "mean", ok=False)
    assert r.returncode != 0 and r.stderr.strip().splitlines()[-1].endswith("expected one of central, average")
    for opt, value in (("--capital-weight", "-1"), ("--capital-threshold", "1.5"), ("--capital-weight", "nan")):
        r = cli("decode", exp, d / "test", tmp_path / "bad", opt, value, ok=False)
        assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert f"{opt} {float(value)!r}: expected a number from 0 to" in r.stderr, r.stderr


def test_a_package_is_repacked_with_the_decoding_chosen_after_packing(exp, tmp_path):
    """`punctkit pack PACKAGE --card-results ...`: the same model members (weights, frontend), the decoding
    of the quoted scores (here averaged windows every 10 words) and their figures on the card; the new
    package decodes as they were decoded. Its own card entries stay its own; it never replaces itself."""
    d = exp.parent
    cli("pack", exp, "-o", tmp_path / "m.pkt")
    dec = tmp_path / "decode_test_avg10"
    cli("decode", tmp_path / "m.pkt", d / "test", dec / "hyp", "--overlap", "average", "--step", "10",
        "--capital-weight", "0.5")
    cli("score", d / "test", dec / "hyp", "--out", dec)
    r = cli("pack", tmp_path / "m.pkt", "-o", tmp_path / "r.pkt", "--card-results", dec / "score.json",
            "--card-note", "rebuild=punctkit pack m.pkt --card-results ...")
    assert "re-packed" in r.stderr
    with zipfile.ZipFile(tmp_path / "m.pkt") as a, zipfile.ZipFile(tmp_path / "r.pkt") as b:
        assert a.namelist() == b.namelist()
        for name in a.namelist():
            if name not in ("punctkit.json", "config.yaml"):
                assert a.read(name) == b.read(name), name  # the model as it was
        old_conf, conf = yaml.safe_load(a.read("config.yaml")), yaml.safe_load(b.read("config.yaml"))
        card = json.loads(b.read("punctkit.json"))["card"]
    assert conf["decode"] == {**old_conf["decode"], "step": 10, "overlap": "average", "capital_weight": 0.5}
    assert {k: v for k, v in conf.items() if k != "decode"} == {k: v for k, v in old_conf.items() if k != "decode"}
    score = json.loads((dec / "score.json").read_text())["overall"]["f1"]
    assert card["results"]["decode_test_avg10"]["f1"] == score and card["decode"]["overlap"] == "average"
    assert card["rebuild"].startswith("punctkit pack m.pkt")
    cli("decode", tmp_path / "r.pkt", d / "test", tmp_path / "again")
    assert (tmp_path / "again" / "labels").read_text() == (dec / "hyp" / "labels").read_text()
    for args, msg in (([tmp_path / "m.pkt", "-o", tmp_path / "m.pkt", "--card-results", dec / "score.json"],
                       "is the package being re-packed"),
                      ([tmp_path / "m.pkt", "-o", tmp_path / "x.pkt", "--card-results", dec / "score.json",
                        "--card-note", "results=mine"], "the card's own entry"),
                      ([tmp_path / "m.pkt", "-o", tmp_path / "x.pkt", "--onnx"], "are for an EXP_DIR"),
                      # the shell's list after the option: the second score file reads as a model to pack
                      ([tmp_path / "m.pkt", "-o", tmp_path / "x.pkt", "--card-results", dec / "score.json",
                        dec / "score.json"], "give --card-results before each one"),
                      ([tmp_path / "m.pkt", exp, "-o", tmp_path / "x.pkt"], "a package cannot be an ensemble member")):
        r = cli("pack", *args, ok=False)
        assert r.returncode != 0 and msg in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (tmp_path / "x.pkt").exists()
    # without --card-results: its decoding and figures as they were (the graph, the frontend the same)
    r = cli("pack", tmp_path / "r.pkt", "-o", tmp_path / "same.pkt")
    assert "as they were" in r.stderr
    with zipfile.ZipFile(tmp_path / "r.pkt") as a, zipfile.ZipFile(tmp_path / "same.pkt") as b:
        assert [(n, a.read(n)) for n in a.namelist() if n != "punctkit.json"] == \
            [(n, b.read(n)) for n in b.namelist() if n != "punctkit.json"]
        old_card, new_card = (json.loads(z.read("punctkit.json"))["card"] for z in (a, b))
    assert new_card == old_card
    # the Python API given a package where a trained model directory goes: says so, and how to re-pack it
    with pytest.raises(PunctkitError, match="a file, not a trained model directory.*--card-results"):
        model_package(tmp_path / "m.pkt")


def test_the_accurate_package_repacked_keeps_its_lean_graph_and_every_label(tmp_path):
    """`punctkit pack accurate -o NEW`: the shipped graph (packed without the attention's NaN guards, whose rewrite
    tests/test_onnx.py checks on graphs that have them) re-packed with this version's same-logits rewrites: the same
    graph, its card and decoding as they were, and the same output on test2011's words."""
    import onnx

    from punctkit.pretrained import shipped_path

    r = cli("pack", "accurate", "-o", tmp_path / "a.pkt")
    assert "as they were" in r.stderr
    with zipfile.ZipFile(shipped_path("accurate")) as a, zipfile.ZipFile(tmp_path / "a.pkt") as b:
        assert a.namelist() == b.namelist()
        was, now = a.read("model.onnx"), b.read("model.onnx")
        assert json.loads(a.read("punctkit.json"))["card"] == json.loads(b.read("punctkit.json"))["card"]
    ops = [n.op_type for n in onnx.load_from_string(now).graph.node]
    assert "IsNaN" not in ops and now == was
    words = [line.split("\t")[0] for line in (IWSLT / "test2011").read_text().splitlines()[:1500]]
    src = tmp_path / "words.txt"
    src.write_text("\n".join(" ".join(words[i:i + 100]) for i in range(0, len(words), 100)) + "\n")
    assert cli("punctuate", "-m", tmp_path / "a.pkt", src).stdout == cli("punctuate", "-m", "accurate", src).stdout
    # where only onnxruntime is installed (no onnx package), the graph is kept as it was
    code = ("from punctkit.packing import repack\nfrom punctkit.pretrained import shipped_path\n"
            f"repack(shipped_path('accurate'), {str(tmp_path / 'b.pkt')!r})\nprint(1)")
    assert json_without(code, blocked=("onnx",)) == 1
    with zipfile.ZipFile(tmp_path / "b.pkt") as b:
        assert b.read("model.onnx") == was


def test_punctuator_takes_the_packed_options_without_changing_them(exp, tmp_path):
    from punctkit import load_model

    cli("pack", exp, "-o", tmp_path / "m.pkt")
    p = load_model(tmp_path / "m.pkt", step=10, beam=2)
    assert (p.window, p.step, p.options.beam) == (30, 10, 2)
    assert p.scorer.conf["decode"]["step"] == 15  # the packed section is not rewritten
    assert load_model(tmp_path / "m.pkt").options.beam == 1  # the model's, no silent fallback
    with pytest.raises(PunctkitError, match="--step 31: must be between 1 and the window"):
        load_model(tmp_path / "m.pkt", step=31)
