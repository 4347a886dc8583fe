"""`train.init`: a run starts from another run's weights, copied by name (punctkit/train/warm_start.py)."""
from __future__ import annotations

import copy

import pytest
import torch

from engine_util import TINY, make_dirs
from punctkit.expdir import load_checkpoint
from punctkit.files import PunctkitError
from punctkit.fit import train
from punctkit.models.registry import build_model
from punctkit.train.checkpoint import save_checkpoint
from punctkit.train.warm_start import warm_start

HIER = {"type": "hier_seq2seq", "emb_dim": 8, "hidden": 8, "dec_hidden": 8, "label_dim": 4}


def hier(modality: str, vocab: int = 30, seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return build_model({**HIER, "modality": modality}, vocab_size=vocab, n_labels=4, pad_id=0, feat_dim=5)


def test_lexical_run_starts_the_lexical_stream_of_a_fused_model(tmp_path):
    """Klejch's fused model from a text-only lexical model: the text encoder is copied, the acoustic
    encoder keeps its fresh initialisation, and the log says which is which."""
    lexical, fused = hier("lexical", seed=1), hier("both", seed=2)
    fresh = {k: v.clone() for k, v in fused.state_dict().items()}
    save_checkpoint(tmp_path / "lex.pt", {"model": lexical.state_dict()})
    lines = []
    with pytest.raises(PunctkitError, match=r"cell\.weight_ih has shape"):  # the decoders' inputs differ
        warm_start(fused, tmp_path / "lex.pt")
    n = warm_start(fused, {"path": str(tmp_path / "lex.pt"), "keys": ["embed", "lex"]}, lines.append)
    got, src = fused.state_dict(), lexical.state_dict()
    assert n > 0 and all(torch.equal(got[k], src[k]) for k in got if k.startswith(("lex.", "embed.")))
    assert all(torch.equal(got[k], fresh[k]) for k in got if not k.startswith(("lex.", "embed.")))
    assert any(k.startswith("ac.") for k in got) and "freshly initialised: ac, " in lines[0]


def test_shape_mismatch_nothing_in_common_and_missing_source_are_one_line_errors(tmp_path):
    save_checkpoint(tmp_path / "small_vocab.pt", {"model": hier("lexical", vocab=20).state_dict()})
    with pytest.raises(PunctkitError, match=r"embed\.embed\.weight has shape \(20, 8\) there, \(30, 8\) here"):
        warm_start(hier("lexical"), tmp_path / "small_vocab.pt")
    save_checkpoint(tmp_path / "other.pt", {"model": {"unrelated.weight": torch.zeros(3)}})
    with pytest.raises(PunctkitError, match="no tensor in common"):
        warm_start(hier("lexical"), tmp_path / "other.pt")
    with pytest.raises(PunctkitError, match="ac.* is not in the checkpoint"):
        warm_start(hier("both"), {"path": str(tmp_path / "small_vocab.pt"), "keys": ["ac"]})
    with pytest.raises(PunctkitError, match="lexx .*is not in this model"):
        warm_start(hier("lexical"), {"path": str(tmp_path / "small_vocab.pt"), "keys": ["lexx"]})
    for bad in ({"path": "x", "keys": []}, {"paths": "x"}, 3, {"path": "x", "keys": "lex"}):
        with pytest.raises(PunctkitError, match="train.init must be a path or"):
            warm_start(hier("lexical"), bad)
    with pytest.raises(PunctkitError, match="no such experiment directory or checkpoint"):
        warm_start(hier("lexical"), tmp_path / "missing")
    (tmp_path / "not_a_ckpt.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(PunctkitError):
        warm_start(hier("lexical"), tmp_path / "not_a_ckpt.pt")


def test_train_init_starts_from_the_named_experiment(tmp_path):
    """`train.init: EXP` through the trainer: with learning rate 0 the run's first epoch keeps exactly
    EXP's model.avg.pt (so the weights were loaded, and before the optimizer took them)."""
    from conftest import IWSLT

    if not (IWSLT / "dev2012").is_file():
        pytest.skip(f"IWSLT reference data not found at {IWSLT}")
    dirs = make_dirs(IWSLT, tmp_path, "1:600", "601:700")
    conf = copy.deepcopy(TINY)
    conf["train"]["epochs"] = 2
    train(copy.deepcopy(conf), *dirs, tmp_path / "src", quiet=True)
    conf["train"].update(epochs=1, lr=0.0, init=str(tmp_path / "src"))
    train(conf, *dirs, tmp_path / "dst", quiet=True)
    src = load_checkpoint(tmp_path / "src" / "model.avg.pt")["model"]
    dst = load_checkpoint(tmp_path / "dst" / "checkpoints" / "epoch_1.pt")["model"]
    assert all(torch.equal(src[k], dst[k]) for k in src)
    assert "init: " in (tmp_path / "dst" / "train.log").read_text()
