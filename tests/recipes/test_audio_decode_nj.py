"""The template's stage 5 on audio: decoding a synthesized test set (global CMVN) with --nj 2
gives the same files as --nj 1, byte for byte."""
from __future__ import annotations

import filecmp
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from punct_util import recipe_copy
from punctkit.data.prepare import prepare
from punctkit.feats.cmvn import compute_cmvn
from punctkit.feats.fbank_pitch import extract_feats
from punctkit.feats.synth import synthesize_data_dir

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "recipes" / "tts_iwslt"
pytestmark = pytest.mark.skipif(shutil.which("espeak-ng") is None or shutil.which("sox") is None,
                                reason="espeak-ng or sox not installed (apt-get install -y espeak-ng sox)")

TINY_FUSED = {"frontend": {"kind": "word", "min_count": 1},
              "model": {"type": "hier_seq2seq", "modality": "both", "fusion": "stochastic", "emb_dim": 8,
                        "hidden": 8, "dec_hidden": 8, "label_dim": 4, "dropout": 0.0},
              "audio": {"use": True},
              "train": {"lr": 0.01, "batch_size": 4, "window": 20, "epochs": 1, "seed": 1, "n_average": 1,
                        "threads": 1},
              "decode": {"window": 20, "step": 10, "batch_size": 8, "beam": 3}}


def test_audio_decode_nj2_equals_nj1(tmp_path: Path, iwslt: Path) -> None:
    from punctkit.train.trainer import train

    data = tmp_path / "data"
    # 6 utterances of 20-40 words from test2011, each its own speaker, spoken by espeak-ng
    prepare([iwslt / "test2011"], tmp_path / "text", rechunk_spec="20-40", lines=(1, 180), name="t")
    synthesize_data_dir(tmp_path / "text", data / "test", nj=2, show_progress=False)
    extract_feats(data / "test", data / "test" / "feats", RECIPE / "conf" / "fbank.conf",
                  RECIPE / "conf" / "pitch.conf", show_progress=False)
    assert compute_cmvn(data / "test") == 1  # global stats: the file split-data must copy whole
    n_utts = len((data / "test" / "text").read_text().splitlines())
    assert n_utts >= 4
    train(TINY_FUSED, data / "test", data / "test", tmp_path / "exp" / "tiny", quiet=True)

    recipe = recipe_copy(RECIPE, tmp_path / "recipe")
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    hyps = {}
    for nj in (1, 2):
        p = subprocess.run(["./punct.sh", "--stage", "5", "--stop-stage", "5", "--nj", str(nj), "--use-audio", "true",
                            "--data", str(data), "--expdir", str(tmp_path / "exp"), "--tag", "tiny",
                            "--train-config", "unused.yaml", "--test-sets", "test"],
                           cwd=recipe, capture_output=True, text=True, env=env, timeout=300)
        assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
        assert f"({nj} job(s))" in p.stdout
        hyps[nj] = tmp_path / f"hyp{nj}"
        shutil.copytree(tmp_path / "exp" / "tiny" / "decode_test" / "hyp", hyps[nj])
    assert len((data / "test" / "split2" / "1" / "text").read_text().splitlines()) < n_utts
    cmvn = (data / "test" / "cmvn.scp").read_bytes()
    assert all((data / "test" / "split2" / str(k) / "cmvn.scp").read_bytes() == cmvn for k in (1, 2))
    names = sorted(p.name for p in hyps[1].iterdir())
    assert "labels" in names and names == sorted(p.name for p in hyps[2].iterdir())
    for name in names:
        assert filecmp.cmp(hyps[1] / name, hyps[2] / name, shallow=False), name
