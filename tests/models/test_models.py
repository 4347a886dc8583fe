"""The lexical models: registry, shapes, padding, layer-wise attention, embeddings, learning."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from punctkit.config import load_config
from punctkit.files import PunctkitError
from punctkit.models.registry import build_model, model_class
from punctkit.nn.embedding import InputEmbedding

VOCAB, N_LABELS, PAD = 30, 4, 0
O, COMMA, PERIOD = 0, 1, 2
END = 5  # the synthetic "sentence end" word: it gets PERIOD
PAUSE = 7  # this word gets COMMA

SMALL = {
    "drnn_lwma": "{type: drnn_lwma, n_layers: 2, n_heads: 2, d_model: 32, dropout: 0.1}",
    "transformer_tagger": "{type: transformer_tagger, n_layers: 2, d_model: 32, n_heads: 4, d_ff: 64, dropout: 0.1}",
    "transformer_seq2seq": (
        "{type: transformer_seq2seq, n_layers: 2, n_dec_layers: 1, d_model: 32, n_heads: 4, d_ff: 64, dropout: 0.1}"
    ),
}


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def build(name: str, embeddings: np.ndarray | None = None, **over) -> torch.nn.Module:
    """A small model from its YAML-like config, as the trainer builds it."""
    conf = yaml.safe_load(SMALL[name])
    conf.update(over)
    return build_model(conf, vocab_size=VOCAB, n_labels=N_LABELS, pad_id=PAD, embeddings=embeddings, feat_dim=None)


def make_batch(lengths: list[int], gen: torch.Generator, pieces: bool = False) -> dict[str, torch.Tensor]:
    """Random word rows (left-aligned, padded) labelled by the word: END -> PERIOD, PAUSE -> COMMA.

    With `pieces`, every third word is split into two tokens and labelled on its last one.
    """
    rows = []
    for n in lengths:
        words = torch.randint(1, VOCAB, (n,), generator=gen)
        labels = torch.full((n,), O)
        labels[words == END] = PERIOD
        labels[words == PAUSE] = COMMA
        toks, pos = [], []
        for i, w in enumerate(words.tolist()):
            if pieces and i % 3 == 2:
                toks.append(int(torch.randint(1, VOCAB, (1,), generator=gen)))  # a first piece
            toks.append(w)
            pos.append(len(toks) - 1)
        rows.append((toks, pos, labels))
    t_max = max(len(r[0]) for r in rows)
    w_max = max(lengths)
    b = len(rows)
    batch = {
        "tokens": torch.full((b, t_max), PAD),
        "token_mask": torch.zeros(b, t_max, dtype=torch.bool),
        "word_pos": torch.zeros(b, w_max, dtype=torch.long),
        "word_mask": torch.zeros(b, w_max, dtype=torch.bool),
        "labels": torch.full((b, w_max), -100),
    }
    for i, (toks, pos, labels) in enumerate(rows):
        batch["tokens"][i, : len(toks)] = torch.tensor(toks)
        batch["token_mask"][i, : len(toks)] = True
        batch["word_pos"][i, : len(pos)] = torch.tensor(pos)
        batch["word_mask"][i, : len(pos)] = True
        batch["labels"][i, : len(pos)] = labels
    return batch


def row(batch: dict[str, torch.Tensor], i: int) -> dict[str, torch.Tensor]:
    """Item i alone, cut to its own length (no padding)."""
    nt, nw = int(batch["token_mask"][i].sum()), int(batch["word_mask"][i].sum())
    tok_keys = ("tokens", "token_mask")
    return {k: v[i : i + 1, : (nt if k in tok_keys else nw)] for k, v in batch.items()}


@pytest.mark.parametrize("name", sorted(SMALL))
def test_registry_builds_from_yaml_and_forward_gives_one_vector_per_word(name):
    torch.manual_seed(0)
    model = build(name)
    assert type(model).type_name == name
    batch = make_batch([9, 4], torch.Generator().manual_seed(1), pieces=True)
    out = model(batch)
    assert out.shape == (2, 9, N_LABELS)
    assert torch.isfinite(out).all()


def test_unknown_model_or_option_is_a_one_line_error():
    with pytest.raises(PunctkitError, match="no option.*n_layer"):
        build_model({"type": "drnn_lwma", "n_layer": 2}, vocab_size=VOCAB, n_labels=N_LABELS, pad_id=PAD)
    with pytest.raises(PunctkitError, match="unknown model type 'drnn'"):
        build_model({"type": "drnn"}, vocab_size=VOCAB, n_labels=N_LABELS, pad_id=PAD)


RECIPE_CONFIGS = sorted(Path(__file__).resolve().parents[2].glob("recipes/*/conf/train_*.yaml"))


@pytest.mark.parametrize("path", RECIPE_CONFIGS, ids=lambda p: f"{p.parts[-3]}/{p.name}")
def test_every_recipe_config_names_known_options(path):
    """Each training config of every recipe loads, and its model section names only options
    its model takes (the paper-size configs are never trained in the suite)."""
    from punctkit.train.options import TrainOptions

    conf = load_config(path)
    assert model_class(conf["model"]).type_name == conf["model"]["type"]
    TrainOptions.from_section(conf["train"])  # and its train section passes the options' rules


@pytest.mark.parametrize("name", sorted(SMALL))
def test_logits_do_not_change_when_batched_with_a_longer_item(name):
    torch.manual_seed(0)
    model = build(name).eval()
    batch = make_batch([5, 17, 11], torch.Generator().manual_seed(2), pieces=True)
    with torch.no_grad():
        together = model(batch)
        for i in range(3):
            alone = model(row(batch, i))
            n = alone.size(1)
            torch.testing.assert_close(together[i, :n], alone[0], atol=1e-5, rtol=1e-4)


def _layer_grads(model, batch) -> list[float]:
    # leaves cut from the stack: layer i also feeds layer i+1, and only direct reads count here
    layers, s = model.encode_layers(batch)
    layers = [h.detach().requires_grad_() for h in layers]
    out = model.classify(layers, s, batch)
    grads = torch.autograd.grad(out.sum(), layers, allow_unused=True)
    return [0.0 if g is None else float(g.abs().sum()) for g in grads]


def test_layerwise_attention_reads_every_encoder_layer():
    torch.manual_seed(0)
    batch = make_batch([12, 8], torch.Generator().manual_seed(3))
    model = build("drnn_lwma", n_layers=3, dropout=0.0)
    # the classifier depends directly on every layer's outputs (not only through the top one)
    assert all(g > 0 for g in _layer_grads(model, batch))
    # ... and perturbing any single layer's outputs changes the logits
    with torch.no_grad():
        layers, s = model.encode_layers(batch)
        base = model.classify(layers, s, batch)
        for i in range(3):
            moved = [h + (1.0 if j == i else 0.0) * torch.randn_like(h) for j, h in enumerate(layers)]
            assert not torch.allclose(model.classify(moved, s, batch), base)
    # the top-layer-only variant of the paper's ablation does not read the lower layers directly
    top = build("drnn_lwma", n_layers=3, dropout=0.0, attend="top")
    grads = _layer_grads(top, batch)
    assert grads[:2] == [0.0, 0.0] and grads[2] > 0


def test_drnn_attention_masks_padded_tokens():
    torch.manual_seed(0)
    model = build("drnn_lwma", dropout=0.0).eval()
    batch = make_batch([6, 10], torch.Generator().manual_seed(4))
    with torch.no_grad():
        ref = model(batch)
        batch["tokens"][0, 6:] = 9  # garbage under the padding mask
        torch.testing.assert_close(model(batch), ref)


def test_seq2seq_steps_reproduce_teacher_forcing():
    torch.manual_seed(0)
    model = build("transformer_seq2seq").eval()
    batch = make_batch([7, 5], torch.Generator().manual_seed(5), pieces=True)
    labels = batch["labels"].clamp(min=0)
    with torch.no_grad():
        forced = torch.log_softmax(model(batch), -1)
        memory = model.encode(batch)
        prev = torch.full((2,), model.bos_id)
        state = None
        for t in range(7):
            logp, state = model.step(memory, prev, state, t)
            torch.testing.assert_close(logp, forced[:, t], atol=1e-5, rtol=1e-4)
            prev = labels[:, t]


@pytest.mark.parametrize("name", sorted(SMALL))
def test_each_model_learns_a_synthetic_task(name):
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(6)
    model = build(name)
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    dev = make_batch([30] * 32, torch.Generator().manual_seed(99), pieces=True)

    def dev_eval() -> tuple[float, float]:
        model.eval()
        with torch.no_grad():
            logits = model(dev)
        model.train()
        gold = dev["labels"]
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), gold.flatten())
        marks = gold > 0
        recall = float((logits.argmax(-1)[marks] == gold[marks]).float().mean())
        return float(loss), recall

    loss0, recall0 = dev_eval()
    for _ in range(60):
        batch = make_batch([int(n) for n in torch.randint(10, 30, (16,), generator=gen)], gen, pieces=True)
        loss = torch.nn.functional.cross_entropy(model(batch).flatten(0, 1), batch["labels"].flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
    loss1, recall1 = dev_eval()
    assert loss1 < 0.5 * loss0
    assert recall1 > 0.8 > recall0


def test_input_embedding_learned_and_projected_pretrained():
    learned = InputEmbedding(VOCAB, 16, PAD)
    assert learned(torch.tensor([[1, 2, PAD]])).shape == (1, 3, 16)
    vecs = np.random.default_rng(0).normal(size=(VOCAB, 8)).astype(np.float32)
    pre = InputEmbedding(VOCAB, 16, PAD, pretrained=vecs)
    out = pre(torch.tensor([[1, PAD]]))
    assert out.shape == (1, 2, 16)
    torch.testing.assert_close(pre.embed.weight[1], torch.from_numpy(vecs[1]))
    same = InputEmbedding(VOCAB, 8, PAD, pretrained=vecs)
    assert same.proj is None
    with pytest.raises(PunctkitError, match=r"shape \(30, 8\).*\(31, dim\)"):
        InputEmbedding(VOCAB + 1, 16, PAD, pretrained=vecs)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_frozen_pretrained_vectors_stay_and_finetuned_ones_move(name):
    vecs = np.random.default_rng(0).normal(size=(VOCAB, 8)).astype(np.float32)
    batch = make_batch([10, 6], torch.Generator().manual_seed(7))
    for freeze in (True, False):
        torch.manual_seed(0)
        model = build(name, embeddings=vecs, freeze_embeddings=freeze)
        emb = next(m for m in model.modules() if isinstance(m, InputEmbedding))
        before = emb.embed.weight.detach().clone()
        proj_before = emb.proj.weight.detach().clone()
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        loss = torch.nn.functional.cross_entropy(model(batch).flatten(0, 1), batch["labels"].flatten())
        loss.backward()
        opt.step()
        used = batch["tokens"][batch["token_mask"]].unique()
        assert not torch.equal(emb.proj.weight, proj_before)  # the projection always trains
        if freeze:
            assert torch.equal(emb.embed.weight, before)
        else:
            assert not torch.equal(emb.embed.weight[used], before[used])
            assert torch.equal(emb.embed.weight[PAD], before[PAD])


def test_learned_positions_refuse_longer_inputs():
    model = build("transformer_tagger", positions="learned", max_len=8)
    with pytest.raises(PunctkitError, match="longer than max_len 8"):
        model(make_batch([12], torch.Generator().manual_seed(8)))
