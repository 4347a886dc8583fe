"""A stream is whole sentences (punctkit/decode/stream_end.py): the last word's label takes the
sentence-final mark its distribution ranks highest when the model gave it none, and a case-aware
model's first word is capitalised when the model gave it lower case."""
from __future__ import annotations

import numpy as np
import pytest

from label_util import utterance_labels, words_labels
from punctkit.data.labels import LabelSet, get_inventory
from punctkit.decode.stream_end import close_ids, closing_label, opening_label


def close_stream(labels, rows, inv, fixed=None, *, closes, opens=True, ends=True):
    """`close_ids` over labels."""
    return [inv.labels[i] for i in close_ids([inv.index(lab) for lab in labels], rows, inv, fixed, closes=closes,
                                             opens=opens, ends=ends)]


def _row(inv, mass: dict[str, float]) -> np.ndarray:
    row = np.array([mass.get(lab, 0.0) for lab in inv.labels])
    return row / row.sum()


def test_the_final_mark_of_most_mass_replaces_none_or_a_comma():
    inv = get_inventory("4class")
    row = _row(inv, {"O": 0.5, "COMMA": 0.2, "PERIOD": 0.1, "QUESTION": 0.2})
    assert closing_label("O", row, inv) == "QUESTION"
    assert closing_label("COMMA", row, inv) == "QUESTION"
    assert closing_label("PERIOD", row, inv) == "PERIOD"  # a final mark stays, whatever the row
    tie = _row(inv, {"O": 0.6, "PERIOD": 0.2, "QUESTION": 0.2})
    assert closing_label("O", tie, inv) == "PERIOD"  # a tie: the inventory's first


@pytest.mark.parametrize("name", ["truecase4", "truecase6", "case4"])
def test_case_aware_labels_keep_their_case_and_sum_the_mark_over_cases(name):
    inv = get_inventory(name)
    # PERIOD is the likeliest mark in sum over the case classes, though QUESTION has the likeliest label
    mass = {inv.labels[0]: 0.3}
    periods = [lab for lab in inv.labels if lab.endswith("_PERIOD")]
    questions = [lab for lab in inv.labels if lab.endswith("_QUESTION")]
    mass.update({lab: 0.3 / len(periods) for lab in periods})
    mass[questions[0]] = 0.25
    row = _row(inv, mass)
    upper = "U_O" if "U_O" in inv.labels else inv.labels[-1].split("_")[0] + "_O"
    assert closing_label(upper, row, inv) == upper.split("_")[0] + "_PERIOD"


def test_only_the_last_word_and_not_a_fixed_mark():
    inv = get_inventory("4class")
    rows = np.stack([_row(inv, {"O": 0.7, "PERIOD": 0.3})] * 3)
    assert close_stream(["O", "O", "O"], rows, inv, closes=True) == ["O", "O", "PERIOD"]
    assert close_stream(["O", "O", "COMMA"], rows, inv, fixed=[None, None, "COMMA"], closes=True) == ["O", "O", "COMMA"]
    assert close_stream([], rows[:0], inv, closes=True) == []
    ids = [inv.index("O")] * 3  # the label ids of decode and training's validation, closed alike
    closed = close_stream(["O"] * 3, rows, inv, closes=True)
    assert close_ids(ids, rows, inv, closes=True) == [inv.index(lab) for lab in closed]
    assert close_ids([], rows[:0], inv, closes=True) == []
    assert close_stream(["O"] * 3, rows, inv, closes=False) == ["O"] * 3
    assert close_ids(ids, rows, inv, closes=False) == ids
    commas = LabelSet("commas", ("COMMA",))  # an inventory without a sentence-final mark: nothing to add
    assert close_stream(["O"], np.array([[0.9, 0.1]]), commas, closes=True) == ["O"]


@pytest.mark.parametrize("name,capital", [("truecase4", "C"), ("truecase6", "C"), ("case4", "U")])
def test_the_first_word_of_a_case_aware_stream_begins_a_sentence(name, capital):
    inv = get_inventory(name)
    mark = inv.marks[0]
    assert opening_label(f"L_{mark}", inv) == f"{capital}_{mark}"  # its mark kept
    kept = [lab for lab in inv.labels if not lab.startswith("L_")]
    assert all(opening_label(lab, inv) == lab for lab in kept)  # C, U, M (and case4's U) stay
    rows = np.stack([_row(inv, {inv.labels[0]: 0.9, f"L_{inv.marks[1]}": 0.1})] * 3)
    labels = ["L_O", "L_O", "L_O"]
    out = close_stream(labels, rows, inv, closes=True)
    assert out[0] == f"{capital}_O" and out[1] == "L_O" and out[2].startswith("L_") and out[2] != "L_O"
    assert close_stream(labels, rows, inv, closes=False) == labels  # stream_end: open: neither end
    # a later part of a stream read in segments neither opens nor, before its end, closes it
    assert close_stream(labels, rows, inv, closes=True, opens=False, ends=False) == labels
    assert close_stream(labels, rows, inv, closes=True, opens=True, ends=False) == [f"{capital}_O", "L_O", "L_O"]
    ids = [inv.index(lab) for lab in labels]
    assert close_ids(ids, rows, inv, closes=True) == [inv.index(lab) for lab in out]
    plain = get_inventory("4class")  # no case in the labels: the renderer capitalises by rule
    assert opening_label("O", plain) == "O"


def test_a_lower_case_line_begins_with_a_capital_in_every_path(tmp_path):
    """The shipped true-case model gives 'the' at a stream's start lower case (no left context shows
    a sentence start); punctuate, --stream at any look-ahead, an utterance format and the library
    all begin the stream with a capital, and the words pass through."""
    import json
    import subprocess

    from punct_util import PK
    from punctkit.infer.engine import load_model

    line = "the nasa team met in new york and i think they were right"
    punct = load_model()
    raw = words_labels(punct, line.split())  # the labels as the engine gives them, opened
    assert raw[0].startswith("C_")
    shown = punct.punctuate(line)
    assert shown.split()[0] == "The" and shown.lower().replace(".", "").replace(",", "").split() == line.split()
    for args in ([], ["--stream"], ["--stream", "--lookahead", "2"], ["--stream", "--lookahead", "0"]):
        r = subprocess.run(PK + ["punctuate", *args], input=line + "\n", capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        assert "".join(r.stdout.split()).startswith("TheNASA"), (args, r.stdout)
    # a NeMo manifest: each line an utterance, each its own stream
    src = tmp_path / "m.jsonl"
    src.write_text("".join(json.dumps({"audio_filepath": f"{k}.wav", "pred_text": t}) + "\n"
                           for k, t in enumerate([line, "the next one starts here"])))
    r = subprocess.run(PK + ["punctuate", str(src), "--format", "nemo", "-o", str(tmp_path / "out.jsonl")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    texts = [json.loads(x)["pred_text_punctuated"] for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [t.split()[0] for t in texts] == ["The", "The"]



# ------------------------------------------------------------------ stream_end: open (chunks cut anywhere)

@pytest.fixture(scope="module")
def chunks_and_model(tmp_path_factory):
    """A tiny trained model and test2011 cut into 7-word chunks, each its own stream."""
    from punct_util import tiny_conf, train_tiny
    from punctkit.data.prepare import prepare

    d = tmp_path_factory.mktemp("open")
    train_tiny(d, tiny_conf({"type": "drnn_lwma", "n_layers": 1, "n_heads": 1, "d_model": 32}, epochs=1))
    from conftest import IWSLT

    prepare([IWSLT / "test2011"], d / "chunks", lines=(1, 700), rechunk_spec="7")
    return d / "exp", d / "chunks"


def test_open_streams_keep_the_models_last_label_in_decode_validation_and_punctuate(chunks_and_model, tmp_path):
    from punct_util import cli
    from punctkit.data.datadir import read_data_dir
    from punctkit.data.labels import SENTENCE_END, mark_of
    from punctkit.data.streams import make_streams
    from punctkit.decode.decoder import validation
    from punctkit.decode.options import DecodeOptions, read_options
    from punctkit.infer.engine import load_model
    from punctkit.text.frontend import load_frontend

    exp, chunks = chunks_and_model
    cli("decode", exp, chunks, tmp_path / "closed")
    cli("decode", exp, chunks, tmp_path / "open", "--stream-end", "open")
    closed, opened = (read_data_dir(tmp_path / x).utterances for x in ("closed", "open"))
    assert len(closed) == 100 and all(mark_of(u.labels[-1]) in SENTENCE_END for u in closed)
    ends = [mark_of(u.labels[-1]) in SENTENCE_END for u in opened]
    assert sum(ends) < len(ends)  # the model's own: chunks end inside sentences
    for c, o in zip(closed, opened):  # nothing but the last word differs
        assert c.labels[:-1] == o.labels[:-1]
        assert (c.labels[-1] == o.labels[-1]) == (mark_of(o.labels[-1]) in SENTENCE_END)
    assert read_options(tmp_path / "open" / "decode_options.yaml").stream_end == "open"
    # the library: a Engine with the option labels a stream as decode does
    punct = load_model(exp, options=[DecodeOptions(window=40, step=20, stream_end="open")])
    words = opened[0].words
    assert not punct.closes_streams and words_labels(punct, words) == opened[0].labels
    # and each utterance of an utterance format (Whisper's segments, a data dir) as its own stream
    assert list(utterance_labels(punct, [(u.words, None) for u in opened])) == [u.labels for u in opened]
    closing = load_model(exp, options=[DecodeOptions(window=40, step=20)])
    assert list(utterance_labels(closing, [(u.words, None) for u in closed])) == [u.labels for u in closed]
    # training's validation, from a decode section that says so
    fe = load_frontend(exp / "frontend")
    streams = make_streams(read_data_dir(chunks))
    inv = read_data_dir(chunks).inventory
    for end, want in (("open", opened), ("sentence", closed)):
        run, search = validation({"window": 40, "step": 20, "stream_end": end}, fe, streams, torch_cpu(), inventory=inv)
        ids = run(punct.scorer.runner.model)
        assert search["stream_end"] == end
        assert [[inv.labels[i] for i in x] for x in ids] == [u.labels for u in want]


def torch_cpu():
    import torch

    return torch.device("cpu")


def test_a_bad_stream_end_is_one_line(chunks_and_model, tmp_path):
    import subprocess

    from punct_util import PK

    exp, chunks = chunks_and_model
    r = subprocess.run([*PK, "decode", str(exp), str(chunks), str(tmp_path / "x"), "--stream-end", "maybe"],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "--stream-end 'maybe': expected one of sentence, open" in r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "x").exists()
