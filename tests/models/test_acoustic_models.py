"""Acoustic models (hier_seq2seq, concat_transformer), fusion modes, the audio batcher and the tiny TTS recipe."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from punct_util import recipe_copy
from punctkit.batch import collate
from punctkit.data.streams import IGNORE, Stream, Window
from punctkit.decode.search import beam_search
from punctkit.files import PunctkitError
from punctkit.models.registry import build_model
from punctkit.nn.fusion import MODES, Fusion

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------ fusion

def test_stochastic_pooling_test_time_is_expectation_and_training_picks_elementwise() -> None:
    torch.manual_seed(0)
    x_l, x_a = torch.randn(3, 5, 8), torch.randn(3, 5, 8)
    f = Fusion("stochastic", 8, 8, p=0.3).eval()
    assert torch.equal(f(x_l, x_a), 0.3 * x_l + 0.7 * x_a)
    f.train()
    r = f(x_l, x_a)
    from_l, from_a = r == x_l, r == x_a
    assert bool((from_l | from_a).all())          # every element is one of the two inputs
    share = from_l.float().mean().item()
    assert bool(from_l.any()) and bool(from_a.any()) and 0.1 < share < 0.5  # about p of them lexical
    assert not torch.equal(f(x_l, x_a), r)         # a new mask every call


@pytest.mark.parametrize("mode", MODES)
def test_each_fusion_mode_forward_backward(mode: str) -> None:
    x_l = torch.randn(2, 4, 6, requires_grad=True)
    x_a = torch.randn(2, 4, 6, requires_grad=True)
    f = Fusion(mode, 6, 6).train()
    r = f(x_l, x_a)
    assert r.shape == (2, 4, f.out_dim) and f.out_dim == (12 if mode == "concat" else 6)
    r.sum().backward()
    assert x_l.grad is not None and x_a.grad is not None
    assert float(x_l.grad.abs().sum() + x_a.grad.abs().sum()) > 0
    expect = {"concat": torch.cat([x_l, x_a], -1), "add": x_l + x_a, "max": torch.maximum(x_l, x_a),
              "average": (x_l + x_a) / 2}
    if mode in expect:
        assert torch.allclose(f(x_l, x_a), expect[mode])


def test_fusion_rejects_bad_settings() -> None:
    with pytest.raises(PunctkitError, match="unknown fusion mode"):
        Fusion("sum", 4, 4)
    with pytest.raises(PunctkitError, match="equal"):
        Fusion("add", 4, 6)


# ------------------------------------------------------------------ models on a synthetic batch

FEAT_DIM = 5


def synthetic_batch(seed: int = 0, B: int = 4, W: int = 7) -> dict[str, torch.Tensor]:
    """Words 2..9; the label (COMMA=1 / PERIOD=2 / O) is given by a loud frame after a word in the audio
    or by token 3 in the text, so that both modalities carry signal."""
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(2, 10, (B, W), generator=g)
    n_words = torch.tensor([W, W - 2, W, W - 3][:B])
    frames_per_word = 4
    feats = torch.randn(B, W * frames_per_word, FEAT_DIM, generator=g) * 0.1
    labels = torch.zeros(B, W, dtype=torch.long)
    labels[tokens == 3] = 1
    loud = torch.rand(B, W, generator=g) < 0.3
    labels[loud & (labels == 0)] = 2
    for b in range(B):
        for w in range(W):
            if loud[b, w]:
                feats[b, w * frames_per_word + frames_per_word - 1, 0] += 3.0
    word_mask = torch.arange(W)[None] < n_words[:, None]
    feat_mask = torch.arange(W * frames_per_word)[None] < (n_words * frames_per_word)[:, None]
    labels = labels.masked_fill(~word_mask, IGNORE)
    return {"tokens": tokens, "token_mask": word_mask, "word_pos": torch.arange(W).repeat(B, 1),
            "word_mask": word_mask, "labels": labels, "feats": feats, "feat_mask": feat_mask,
            "word_end_frame": (torch.arange(W) * frames_per_word + frames_per_word - 1).repeat(B, 1),
            "pauses": torch.zeros(B, W, 2)}


MODEL_CONFS = {
    "hier_both_stochastic": {"type": "hier_seq2seq", "fusion": "stochastic", "emb_dim": 16, "hidden": 16,
                             "dec_hidden": 16, "label_dim": 8, "dropout": 0.0},
    "hier_acoustic": {"type": "hier_seq2seq", "modality": "acoustic", "emb_dim": 16, "hidden": 16,
                      "dec_hidden": 16, "label_dim": 8, "dropout": 0.0},
    "concat_transformer": {"type": "concat_transformer", "n_layers": 1, "d_model": 32, "n_heads": 2,
                           "d_ff": 64, "audio_hidden": 16, "dropout": 0.0},
}


@pytest.mark.parametrize("name", sorted(MODEL_CONFS))
def test_model_trains_and_beam_search_labels_every_word(name: str) -> None:
    torch.manual_seed(0)
    model = build_model(MODEL_CONFS[name], vocab_size=12, n_labels=3, pad_id=0, embeddings=None, feat_dim=FEAT_DIM)
    assert model.seq2seq and "feats" in model.needs
    batch = synthetic_batch()
    loss_fn = torch.nn.CrossEntropyLoss(ignore_index=IGNORE)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    model.train()
    for _ in range(30):
        logits = model(batch)
        assert logits.shape == (4, 7, 3)
        loss = loss_fn(logits.reshape(-1, 3), batch["labels"].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.6 * losses[0], losses
    res = beam_search(model, batch, beam=3, nbest=2)
    n_words = batch["word_mask"].sum(1).tolist()
    for b, hyps in enumerate(res):
        assert 1 <= len(hyps) <= 2
        assert all(len(h) == n_words[b] for h, _ in hyps)
        assert hyps[0][1] >= hyps[-1][1]
    # the best hypothesis after training matches most reference labels
    ref = batch["labels"][batch["word_mask"]].tolist()
    hyp = [lab for h in res for lab in h[0][0]]
    assert np.mean(np.array(ref) == np.array(hyp)) > 0.7


def test_acoustic_only_uses_the_audio() -> None:
    """An acoustic-only model's output changes with the features and not with the tokens."""
    torch.manual_seed(0)
    model = build_model(MODEL_CONFS["hier_acoustic"], vocab_size=12, n_labels=3, feat_dim=FEAT_DIM).eval()
    batch = synthetic_batch()
    out = model(batch)
    other = dict(batch, tokens=torch.randint(2, 10, batch["tokens"].shape))
    assert torch.allclose(model(other), out)
    louder = dict(batch, feats=batch["feats"] * 3)
    assert not torch.allclose(model(louder), out)
    with pytest.raises(PunctkitError, match="feat_dim"):
        build_model({"type": "hier_seq2seq"}, vocab_size=12, n_labels=3)


# ------------------------------------------------------------------ the audio batcher

def test_audio_extra_cuts_and_rebases_frames(tmp_path: Path) -> None:
    from punctkit.batch import AudioExtra
    from punctkit.feats.loader import AcousticUtterance

    extra = AudioExtra.__new__(AudioExtra)
    extra.sources = []
    u1 = AcousticUtterance("u1", np.arange(10, dtype=np.float32)[:, None], [2, 5, 9], np.zeros((3, 2), np.float32))
    u2 = AcousticUtterance("u2", 100 + np.arange(6, dtype=np.float32)[:, None], [1, 5], np.ones((2, 2), np.float32))
    extra.cache = {"u1": u1, "u2": u2}
    s = Stream("spk", ["u1", "u2"], [0, 3], list("abcde"), [0] * 5)
    whole = extra(s, Window(0, 0, 5))
    assert whole["feats"][:, 0].tolist() == list(range(10)) + [100 + i for i in range(6)]
    assert whole["word_end_frame"].tolist() == [2, 5, 9, 11, 15] and whole["feat_mask"].all()
    assert whole["pauses"].shape == (5, 2)
    mid = extra(s, Window(0, 1, 4))  # words b, c (u1) and d (u2)
    assert mid["feats"][:, 0].tolist() == [3, 4, 5, 6, 7, 8, 9, 100, 101]
    assert mid["word_end_frame"].tolist() == [2, 6, 8]
    ex = [dict(tokens=[1, 2], word_pos=[0, 1], labels=[0, 0], index=0, **extra(s, Window(0, 3, 5))),
          dict(tokens=[1], word_pos=[0], labels=[0], index=1, **extra(s, Window(0, 2, 3)))]
    batch = collate(ex)
    assert batch["feats"].shape == (2, 6, 1) and batch["feat_mask"].sum(1).tolist() == [6, 4]
    bad = Stream("spk", ["u1"], [0], list("ab"), [0, 0])
    with pytest.raises(PunctkitError, match="u1"):
        extra(bad, Window(0, 0, 2))


# ------------------------------------------------------------------ the tiny TTS recipe, end to end

@pytest.mark.slow  # a recipe end to end
@pytest.mark.skipif(shutil.which("espeak-ng") is None or shutil.which("sox") is None,
                    reason="espeak-ng or sox not installed (apt-get install -y espeak-ng sox)")
def test_tiny_tts_recipe_fused_end_to_end(tmp_path: Path, iwslt: Path) -> None:
    recipe = recipe_copy(ROOT / "recipes" / "tts_iwslt", tmp_path / "tts_iwslt")
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    # every stage, as the template numbers them (7 and 8 are skipped for audio models)
    p = subprocess.run(["./run.sh", "--local-data-opts", "--tiny true", "--nj", "2",
                        "--train-config", "conf/train_tiny_stochastic.yaml"],
                       cwd=recipe, capture_output=True, text=True, env=env, timeout=900)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    assert "stage 8: skipped" in p.stdout
    exp = recipe / "exp" / "train_tiny_stochastic"
    assert "audio: 43-dim features" in (exp / "train.log").read_text()
    n_ref = sum(len(line.split()) - 1 for line in (recipe / "data" / "test" / "text").read_text().splitlines())
    hyp = (exp / "decode_test" / "hyp" / "labels").read_text().splitlines()
    assert sum(len(line.split()) - 1 for line in hyp) == n_ref  # one label per word
    fused = json.loads((exp / "decode_test" / "score.json").read_text())["overall"]["f1"]
    # one source of decoding options: scored at the window the model was trained and validated at
    # (the recipe's decode.yaml may not change it), with that file's beam and step; validated with
    # the training config's own decode section (no hard-coded beam 1)
    trained = yaml.safe_load((exp / "config.yaml").read_text())["decode"]
    recipe_decode = yaml.safe_load((recipe / "conf" / "decode.yaml").read_text())
    used = yaml.safe_load((exp / "decode_test" / "decode_options.yaml").read_text())
    assert used["window"] == trained["window"] == 30
    assert used["beam"] == recipe_decode.get("beam", trained["beam"])
    assert used["step"] == recipe_decode.get("step", trained["step"])
    assert trained["beam"] == 3  # conf/train_tiny_stochastic.yaml's, what validation decoded with
    if recipe_decode.get("window", 30) != 30:
        logs = "".join(p.read_text() for p in (exp / "decode_test" / "log").glob("decode*.log"))
        assert "but the model was trained at 30: keeping 30" in logs
    # the same model and schedule on text alone, through the template's stages 3-6
    p = subprocess.run(["./punct.sh", "--stage", "3", "--stop-stage", "6", "--tag", "lexical",
                        "--train-config", "conf/train_tiny_stochastic.yaml", "--train-args",
                        "--set model.modality=lexical --set audio.use=false"],
                       cwd=recipe, capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    assert "audio:" not in (recipe / "exp" / "lexical" / "train.log").read_text()
    lexical = json.loads((recipe / "exp" / "lexical" / "decode_test" / "score.json").read_text())["overall"]["f1"]
    # 25 training utterances teach text alone nothing; espeak's pauses at marks are heard
    assert fused > lexical + 10, (fused, lexical)
