"""Distillation: the KL term on hand-computable cases, the mix with the hard-label loss, the
teacher's `probs` file as soft labels in the training windows, and a tiny distilled training."""
from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

from engine_util import TINY, make_dirs
from punct_util import cli
from punctkit.batch import collate
from punctkit.data.datadir import read_data_dir
from punctkit.data.probs import write_probs
from punctkit.data.streams import IGNORE, Window, WindowDataset, make_streams
from punctkit.files import PunctkitError
from punctkit.text.frontend import train_frontend
from punctkit.train.distill import DistillOptions, distill_kl, distill_loss, soft_labels
from punctkit.train.losses import make_loss


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    from conftest import IWSLT

    if not (IWSLT / "dev2012").is_file():
        pytest.skip(f"IWSLT reference data not found at {IWSLT}")
    return make_dirs(IWSLT, tmp_path_factory.mktemp("distill"), "1:1500", "1501:1800")


def teacher_rows(data_dir, row, drop=None, short=None):
    """(uttid, rows) of every utterance of `data_dir`, each word's row `row`; `drop` leaves one
    utterance out, `short` gives one a word too few."""
    out = []
    for u in sorted(read_data_dir(data_dir).utterances, key=lambda u: u.uttid):
        if u.uttid == drop:
            continue
        n = len(u.words) - (u.uttid == short)
        out.append((u.uttid, np.tile(np.asarray(row, dtype=float), (n, 1))))
    return out


# ------------------------------------------------------------------ the loss

def test_kl_term_equals_the_formula_and_skips_rows_without_teacher():
    # teacher (3/4, 1/4), student softmax(0, ln 3) = (1/4, 3/4): KL = 1/2 ln 3
    logits = torch.tensor([[[0.0, math.log(3)], [5.0, -1.0]]])
    soft = torch.tensor([[[0.75, 0.25], [IGNORE, IGNORE]]])  # the second word has no teacher row
    assert distill_kl(logits, soft).item() == pytest.approx(0.5 * math.log(3), rel=1e-5)
    # T = 2: both re-tempered to (a, b) and (b, a), a = sqrt3 / (1 + sqrt3): T^2 (a - b) ln(a / b)
    a, b = math.sqrt(3) / (1 + math.sqrt(3)), 1 / (1 + math.sqrt(3))
    assert distill_kl(logits, soft, 2.0).item() == pytest.approx(4 * (a - b) * math.log(a / b), rel=1e-5)
    # a teacher's 0 adds nothing (no nan), a student equal to its teacher costs 0
    same = torch.log(torch.tensor([[[1.0, 1e-9]]]))
    assert distill_kl(same, torch.tensor([[[1.0, 0.0]]])).item() == pytest.approx(0.0, abs=1e-6)
    assert distill_kl(logits, torch.full((1, 2, 2), float(IGNORE))).item() == 0.0


def test_weight_mixes_the_kl_and_the_hard_loss():
    torch.manual_seed(0)
    logits = torch.randn(2, 5, 4)
    labels = torch.tensor([[0, 1, 2, 3, IGNORE], [1, 1, 0, IGNORE, IGNORE]])
    soft = torch.softmax(torch.randn(2, 5, 4), -1)
    soft[labels == IGNORE] = IGNORE
    hard = make_loss("ce")(logits, labels)
    kl = distill_kl(logits, soft)
    mix = lambda w: distill_loss(hard, logits, soft, DistillOptions("p", weight=w)).item()  # noqa: E731
    assert mix(0.0) == hard.item()
    assert mix(1.0) == pytest.approx(kl.item(), rel=1e-6)
    assert mix(0.7) == pytest.approx(0.7 * kl.item() + 0.3 * hard.item(), rel=1e-6)
    assert kl.item() > 0


def test_options_are_checked():
    assert DistillOptions.from_section({}) is None and DistillOptions.from_section({"weight": 0.5}) is None
    assert DistillOptions.from_section({"probs": "x"}) == DistillOptions("x", 0.7, 1.0)
    for bad, what in (({"probs": "x", "weight": 1.5}, "weight"), ({"probs": "x", "temperature": 0}, "temperature"),
                      ({"probs": "x", "temp": 2}, "unknown option")):
        with pytest.raises(PunctkitError, match=what):
            DistillOptions.from_section(bad)


# ------------------------------------------------------------------ soft labels from a probs file

def test_soft_labels_travel_with_the_windows(dirs, tmp_path):
    dd = read_data_dir(dirs[0])
    streams = make_streams(dd)
    rows = teacher_rows(dirs[0], [0.1, 0.2, 0.3, 0.4])
    rows[1] = (rows[1][0], np.tile([0.7, 0.1, 0.1, 0.1], (len(rows[1][1]), 1)))  # the second utterance differs
    write_probs(tmp_path / "probs", rows)
    soft = soft_labels(tmp_path / "probs", streams, 4, dirs[0], "4class")
    assert [len(s) for s in soft] == [len(s) for s in streams]
    first, second = streams[0].utt_spans()[:2]
    assert np.allclose(soft[0][second[1]:second[2]], [0.7, 0.1, 0.1, 0.1])
    assert np.allclose(soft[0][first[1]:first[2]], [0.1, 0.2, 0.3, 0.4])
    fe = train_frontend({"kind": "word"}, [s.words for s in streams], tmp_path / "fe")
    ds = WindowDataset(streams, fe, soft=soft)
    ds.set_windows([Window(0, second[1] - 3, second[1] + 2), Window(0, 0, 2)])
    batch = collate([ds[0], ds[1]], fe.pad_id)
    assert batch["soft"].shape == (2, 5, 4)
    assert np.allclose(batch["soft"][0, :3], [0.1, 0.2, 0.3, 0.4])
    assert np.allclose(batch["soft"][0, 3:], [0.7, 0.1, 0.1, 0.1])
    assert (batch["soft"][1, 2:] == IGNORE).all()  # padding: no word, no teacher row


def test_probs_that_disagree_with_text_are_one_line_errors(dirs, tmp_path):
    streams = make_streams(read_data_dir(dirs[0]))
    utts = [u for u, _, _ in streams[0].utt_spans()]
    row = [0.25] * 4
    write_probs(tmp_path / "missing", teacher_rows(dirs[0], row, drop=utts[2]))
    with pytest.raises(PunctkitError, match=f"missing: no line for utterance '{utts[2]}' of .*text"):
        soft_labels(tmp_path / "missing", streams, 4, dirs[0])
    write_probs(tmp_path / "short", teacher_rows(dirs[0], row, short=utts[3]))
    with pytest.raises(PunctkitError, match=rf"short:4 \(utterance {utts[3]}\): \d+ words' probabilities, but"):
        soft_labels(tmp_path / "short", streams, 4, dirs[0])
    with pytest.raises(PunctkitError, match="5 probabilities for a word, the inventory has 4"):
        write_probs(tmp_path / "five", teacher_rows(dirs[0], [0.2] * 5))
        soft_labels(tmp_path / "five", streams, 4, dirs[0])
    (tmp_path / "dec").mkdir()
    write_probs(tmp_path / "dec" / "probs", teacher_rows(dirs[0], row))
    (tmp_path / "dec" / "inventory").write_text("6class\n")
    with pytest.raises(PunctkitError, match="inventory: the teacher's labels are 6class, the training data's 4class"):
        soft_labels(tmp_path / "dec" / "probs", streams, 4, dirs[0], "4class")


# ------------------------------------------------------------------ training

def test_a_distilled_training_follows_its_teacher(dirs, tmp_path):
    """A teacher that says COMMA after every word (weight 1: its rows alone) makes a model that
    puts commas nearly everywhere, which the hard labels (about 1 word in 10) never would."""
    from punctkit.decode.decoder import decode_streams_rows
    from punctkit.expdir import load_experiment_model
    from punctkit.fit import train

    write_probs(tmp_path / "probs", teacher_rows(dirs[0], [0.02, 0.94, 0.02, 0.02]))
    conf = copy.deepcopy(TINY)
    conf["train"].update(epochs=2, distill={"probs": str(tmp_path / "probs"), "weight": 1.0})
    train(conf, *dirs, tmp_path / "exp", quiet=True)
    assert "distill: soft labels of 1500 words" in (tmp_path / "exp" / "train.log").read_text()
    model, fe, inv, _ = load_experiment_model(tmp_path / "exp")
    valid = make_streams(read_data_dir(dirs[1]))
    hyp = [got.best for got in decode_streams_rows(model, fe, valid, window=40, step=20)][0]
    assert inv.labels[1] == "COMMA" and hyp.count(1) > 0.8 * len(hyp)
    ref = valid[0].labels
    assert ref.count(1) < 0.3 * len(ref)
    # its package's card names the teacher's labels it learnt from (a gold-label package has none)
    from punctkit.package import model_files

    card = model_files(tmp_path / "exp")[0]["card"]  # the manifest pack writes (the model is this test's)
    # relative to the experiment's parent: a card never holds the packing machine's absolute paths
    assert card["distilled_from"] == {"probs": "probs", "weight": 1.0}


def test_cli_reports_a_probs_file_that_misses_an_utterance(dirs, tmp_path):
    utt = make_streams(read_data_dir(dirs[0]))[0].uttids[0]
    write_probs(tmp_path / "probs", teacher_rows(dirs[0], [0.25] * 4, drop=utt))
    r = cli("train", "--config", "recipes/iwslt/conf/train_tiny.yaml", "--train-dir", dirs[0], "--valid-dir",
            dirs[1], "--exp", tmp_path / "exp", "--set", f"train.distill.probs={tmp_path / 'probs'}", ok=False)
    last = r.stderr.strip().splitlines()[-1]  # after the run's log lines, no traceback
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert last.startswith("punctkit: error: ") and f"probs: no line for utterance '{utt}'" in last


def test_a_missing_probs_file_is_refused_before_the_experiment_is_made(dirs, tmp_path):
    r = cli("train", "--config", "recipes/iwslt/conf/train_tiny.yaml", "--train-dir", dirs[0], "--valid-dir",
            dirs[1], "--exp", tmp_path / "exp", "--set", f"train.distill.probs={tmp_path / 'no_probs'}", ok=False)
    assert r.returncode == 1 and r.stderr.strip().count("\n") == 0, r.stderr
    assert r.stderr.startswith("punctkit: error: probs file (train.distill.probs) not found: ")
    assert not (tmp_path / "exp").exists()  # no frontend, no train.log, no lock left behind


def test_the_distill_conf_takes_the_teacher_from_the_command_line():
    from pathlib import Path

    from punctkit.config import load_config

    path = Path(__file__).resolve().parents[2] / "recipes/iwslt/conf/train_drnn_lwma_minilm_ctx_distill.yaml"
    conf = load_config(path, ["train.distill.probs=exp/ff2/decode_train/probs"])
    want = DistillOptions("exp/ff2/decode_train/probs", 0.7, 1.0)
    assert DistillOptions.from_section(conf["train"]["distill"]) == want
    assert "--probs" in path.read_text() and "train.distill.probs=" in path.read_text()
