"""recipes/asr_iwslt: its configs load, the pause-features model hears the pauses, and the
tiny recipe runs end to end (stages 1-6: text, synthesis, alignment, recognition, features,
inputs, training, decoding and scoring of test_ref and test_asr)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import torch

from punctkit.config import load_config
from punctkit.feats.validate import validate_data_dir
from punctkit.models.registry import build_model

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "recipes" / "asr_iwslt"
IGNORE = -100


def test_every_recipe_config_loads_and_synth_conf_holds_the_fixed_prosody() -> None:
    names = sorted(p.stem for p in (RECIPE / "conf").glob("train_*.yaml"))
    for m in ("lexical", "acoustic", "fused_concat", "fused_add", "fused_max", "fused_average", "fused_stochastic",
              "lexical_pauses", "concat_transformer", "yitao_word_speech_sum", "faber_w2v_s2v_concat",
              "lexical_scratch"):
        assert f"train_{m}" in names
    for n in names:
        load_config(RECIPE / "conf" / f"{n}.yaml")
    assert load_config(RECIPE / "conf" / "train_yitao_word_speech_sum.yaml")["embeddings"]["combine"] == "sum"
    assert load_config(RECIPE / "conf" / "train_faber_w2v_s2v_concat.yaml")["embeddings"]["combine"] == "concat"
    opts = [ln for ln in (RECIPE / "conf" / "synth.conf").read_text().splitlines() if ln and not ln.startswith("#")]
    assert opts == ["--mark-prob=PERIOD=0.8,QUESTION=0.8,COMMA=0.5", "--hesitation-rate=0.04"]


def pause_batch(seed: int, B: int = 8, W: int = 12) -> dict[str, torch.Tensor]:
    """Random tokens; a word is followed by PERIOD exactly when a long pause follows it."""
    g = torch.Generator().manual_seed(seed)
    pauses = torch.zeros(B, W, 2)
    long = torch.rand(B, W, generator=g) < 0.3
    pauses[..., 1] = torch.where(long, 0.6, 0.02)
    pauses[:, 1:, 0] = pauses[:, :-1, 1]
    mask = torch.ones(B, W, dtype=torch.bool)
    return {"tokens": torch.randint(2, 30, (B, W), generator=g), "token_mask": mask,
            "word_pos": torch.arange(W).repeat(B, 1), "word_mask": mask, "labels": long.long() * 2,
            "pauses": pauses}


def test_pause_features_model_learns_from_pauses_alone(one_torch_thread) -> None:
    conf = load_config(RECIPE / "conf" / "train_lexical_pauses.yaml")["model"]
    small = dict(conf, emb_dim=16, hidden=16, dec_hidden=16, label_dim=8, dropout=0.0)
    final = {}
    for pauses in (True, False):
        torch.manual_seed(0)
        model = build_model(dict(small, pauses=pauses), vocab_size=30, n_labels=3, pad_id=0, feat_dim=43)
        assert ("pauses" in model.needs) == pauses and "feats" not in model.needs
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        for step in range(25):
            b = pause_batch(step)
            loss = torch.nn.functional.nll_loss(model(b).reshape(-1, 3), b["labels"].reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.eval()
        b = pause_batch(1000)
        final[pauses] = (model(b).argmax(-1) == b["labels"]).float().mean().item()
    assert final[True] > 0.95 and final[False] < 0.85, final


@pytest.mark.skipif(any(shutil.which(t) is None for t in ("espeak-ng", "flite", "sox")),
                    reason="espeak-ng, flite or sox not installed (apt-get install -y espeak-ng flite sox)")
def test_tiny_asr_recipe_end_to_end(tmp_path: Path, iwslt: Path) -> None:
    data, exp = tmp_path / "data", tmp_path / "exp"
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    p = subprocess.run(["./run.sh", "--local-data-opts", "--tiny true --nj 1", "--train-config", "conf/train_tiny.yaml",
                        "--nj", "1", "--stop-stage", "6", "--data", str(data), "--expdir", str(exp)],
                       cwd=RECIPE, capture_output=True, text=True, env=env, timeout=900)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    for x in ("train", "valid", "test_ref", "test_asr"):
        assert validate_data_dir(data / x) == [], x
        assert (data / x / "feats.scp").is_file() and (data / x / "ctm").is_file()
    assert (data / "valid_asr" / "ctm").is_file()
    voices = {x: {ln.split()[1] for ln in (data / x / "utt2voice").read_text().splitlines()}
              for x in ("train", "valid", "test_ref")}
    assert voices["valid"] == voices["test_ref"] == {"flite:rms"}  # the held-out voice
    assert "flite:rms" not in voices["train"]
    # text held out: no test utterance's words are a training utterance's
    words = {x: {ln.split(" ", 1)[1] for ln in (data / x / "text").read_text().splitlines()}
             for x in ("train", "valid", "test_ref")}
    assert not words["train"] & words["test_ref"] and not words["train"] & words["valid"]
    # the marks were not all spoken: the synthesizer's text has fewer marks than the labels
    n_marks = n_spoken = 0
    for x in ("train_espeak", "train_flite", "valid", "test_ref"):
        n_marks += sum(len(ln.split()) - 1 - ln.split().count("O")
                       for ln in (data / x / "labels").read_text().splitlines())
        n_spoken += sum(ln.split(" ", 3)[3].count(c) for ln in (data / x / "synthesize.log").read_text().splitlines()
                        for c in ",.?")
    assert 0.4 * n_marks < n_spoken < 0.95 * n_marks
    # recognized words are scored directly against the projected marks
    for x in ("test_ref", "test_asr"):
        score = json.loads((exp / "train_tiny" / f"decode_{x}" / "score.json").read_text())
        assert "overall" in json.dumps(score)
    ref = (data / "test_ref" / "text").read_text()
    asr = (data / "test_asr" / "text").read_text()
    assert ref != asr and len(asr.split()) > 0.5 * len(ref.split())
