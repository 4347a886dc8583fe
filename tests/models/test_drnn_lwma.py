"""The uni-directional DRNN-LWMA with a fixed L-word delay (issue #19): `model: {type: drnn_lwma,
direction: uni, delay: L}` never reads more than L words of right context; `direction: bi` is unchanged."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from punct_util import cli, tiny_conf, train_tiny
from punctkit.config import load_config
from punctkit.data.formats import read
from punctkit.data.streams import pad_batch
from punctkit.files import PunctkitError
from punctkit.models.base import token_boundaries
from punctkit.models.registry import build_model

VOCAB, N_LABELS = 40, 4
KEYS = ("tokens", "token_mask", "word_pos", "word_mask")
SMALL = {"type": "drnn_lwma", "n_layers": 2, "n_heads": 2, "d_model": 8, "dropout": 0.1}

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def build(seed: int = 0, **over) -> torch.nn.Module:
    """A small DRNN-LWMA in eval mode, as the trainer builds it from `model:`."""
    torch.manual_seed(seed)
    return build_model({**SMALL, **over}, vocab_size=VOCAB, n_labels=N_LABELS, pad_id=0, embeddings=None).eval()


def batch_of(rows: list[list[list[int]]], label_first: bool = False) -> dict[str, np.ndarray]:
    """A padded batch of rows of words, each word a list of token ids; a word's label sits on its
    last piece (BPE) or, with `label_first`, its first (word-pieces of a PLM)."""
    examples = []
    for i, words in enumerate(rows):
        ends = np.cumsum([len(w) for w in words])
        pos = (ends - np.array([len(w) for w in words]) if label_first else ends - 1).tolist()
        examples.append({"tokens": [t for w in words for t in w], "word_pos": pos, "labels": [0] * len(words),
                         "index": i})
    return pad_batch(examples)


def logits(model: torch.nn.Module, batch: dict[str, np.ndarray]) -> torch.Tensor:
    with torch.no_grad():
        return model({k: torch.from_numpy(batch[k]) for k in KEYS})


UNI = {L: build(direction="uni", delay=L) for L in (0, 1, 3)}
WORDS = st.lists(st.lists(st.integers(1, VOCAB - 1), min_size=1, max_size=3), min_size=1, max_size=16)


# ------------------------------------------------------------------ (a) the right-context bound

@settings(max_examples=150, deadline=None)
@given(WORDS, st.sampled_from(sorted(UNI)), st.booleans(), st.data())
def test_word_logits_never_depend_on_words_after_t_plus_delay(words, L, label_first, data):
    """Replacing every token after word t + L's label-carrying token (and appending words, when word
    t + L exists) leaves word t's logits equal, alone or padded in one batch with the original."""
    n = len(words)
    t = data.draw(st.integers(0, n - 1), label="t")
    keep = min(t + L, n - 1)
    tail = data.draw(st.lists(st.integers(1, VOCAB - 1), min_size=len(sum(words[keep + 1:], [])),
                              max_size=len(sum(words[keep + 1:], []))), label="new tail")
    changed = [list(w) for w in words[:keep + 1]]
    if label_first:  # the pieces of word t + L after its first are beyond its label-carrying token too
        changed[keep][1:] = data.draw(st.lists(st.integers(1, VOCAB - 1), min_size=len(changed[keep]) - 1,
                                               max_size=len(changed[keep]) - 1), label="pieces")
    it = iter(tail)
    changed += [[next(it) for _ in w] for w in words[keep + 1:]]
    if t + L <= n - 1:
        changed += data.draw(WORDS, label="appended")
    model = UNI[L]
    alone = logits(model, batch_of([words], label_first))[0, t]
    together = logits(model, batch_of([words, changed], label_first))
    assert torch.allclose(together[1, t], alone, atol=1e-6)
    assert torch.allclose(together[0, t], alone, atol=1e-6)


def test_the_bound_is_tight_and_bi_reads_further():
    """Uni: changing word t + L itself does change word t's logits. Bi (the same sizes): changing a word
    far beyond t + L changes them, so the property above can fail."""
    words = [[w] for w in range(1, 16)]
    t, L = 3, 3
    far = [list(w) for w in words]
    far[12] = [30]
    at = [list(w) for w in words]
    at[t + L] = [30]
    uni, bi = UNI[L], build()
    base = logits(uni, batch_of([words]))[0, t]
    assert torch.allclose(logits(uni, batch_of([far]))[0, t], base, atol=1e-6)
    assert not torch.allclose(logits(uni, batch_of([at]))[0, t], base, atol=1e-4)
    assert not torch.allclose(logits(bi, batch_of([far]))[0, t], logits(bi, batch_of([words]))[0, t], atol=1e-4)


def test_delay_zero_labels_word_t_from_its_own_state():
    """With delay 0 the last word of a sequence and the same word followed by more words get equal logits."""
    words = [[5], [7, 8], [9]]
    model = UNI[0]
    short = logits(model, batch_of([words]))[0]
    longer = logits(model, batch_of([words + [[11], [12]]]))[0]
    assert torch.allclose(short, longer[:3], atol=1e-6)


# ------------------------------------------------------------------ (d) direction: bi is today's model

def paper_shapes(n_layers: int, d: int, n_heads: int) -> dict[str, tuple[int, ...]]:
    """State-dict names and shapes of the bidirectional DRNN-LWMA as checkpoints before the option hold them."""
    shapes: dict[str, tuple[int, ...]] = {"embed.embed.weight": (VOCAB, d)}
    for i in range(n_layers):
        d_in = d if i == 0 else 2 * d
        for sfx in ("", "_reverse"):
            shapes.update({f"birnns.{i}.weight_ih_l0{sfx}": (3 * d, d_in), f"birnns.{i}.weight_hh_l0{sfx}": (3 * d, d),
                           f"birnns.{i}.bias_ih_l0{sfx}": (3 * d,), f"birnns.{i}.bias_hh_l0{sfx}": (3 * d,)})
    shapes.update({"query_rnn.weight_ih_l0": (3 * d, 2 * d), "query_rnn.weight_hh_l0": (3 * d, d),
                   "query_rnn.bias_ih_l0": (3 * d,), "query_rnn.bias_hh_l0": (3 * d,)})
    for i in range(n_layers):
        for p, d_in in (("q", d), ("k", 2 * d), ("v", 2 * d)):
            shapes.update({f"attns.{i}.{p}_proj.weight": (n_heads * d, d_in),
                           f"attns.{i}.{p}_proj.bias": (n_heads * d,)})
    shapes.update({"out.weight": (N_LABELS, d + n_layers * n_heads * d), "out.bias": (N_LABELS,)})
    return shapes


def test_bi_keeps_the_parameter_names_shapes_and_outputs():
    default, bi = build(seed=5), build(seed=5, direction="bi", delay=0)
    want = paper_shapes(2, 8, 2)
    for model in (default, bi):
        assert {k: tuple(v.shape) for k, v in model.state_dict().items()} == want
    bi.load_state_dict(default.state_dict())  # an old checkpoint loads into an explicit `direction: bi`
    b = batch_of([[[3], [4, 5], [6]], [[7]] * 9])
    assert torch.equal(logits(default, b), logits(bi, b))
    uni = build(seed=5, direction="uni", delay=2)
    assert not any("reverse" in k for k in uni.state_dict())


@pytest.mark.parametrize("over, match", [
    ({"direction": "left"}, "direction must be 'bi' or 'uni'"),
    ({"direction": "uni", "delay": -1}, "option delay must be >= 0, got -1"),
    ({"direction": "uni", "delay": "4"}, "option delay must be int, got '4'"),
    ({"delay": 4}, "add direction: uni"),
])
def test_bad_direction_or_delay_is_a_one_line_error(over, match):
    with pytest.raises(PunctkitError, match=match) as e:
        build(**over)
    assert "\n" not in str(e.value)


def test_uni4_conf_is_the_ctx_conf_plus_the_option():
    conf_dir = Path(__file__).resolve().parents[2] / "recipes" / "iwslt" / "conf"
    base = load_config(conf_dir / "train_drnn_lwma_minilm_ctx.yaml")
    uni = load_config(conf_dir / "train_drnn_lwma_minilm_ctx_uni4.yaml")
    assert (uni["model"].pop("direction"), uni["model"].pop("delay")) == ("uni", 4)
    assert uni == base


# ------------------------------------------------------------------ (b, c) trained, packed, ONNX, streamed

TINY = tiny_conf(yaml.safe_load("{type: drnn_lwma, n_layers: 2, n_heads: 2, d_model: 32, dropout: 0.1, "
                                "direction: uni, delay: 2}"), epochs=3)


@pytest.fixture(scope="module")
def uni_packed(tmp_path_factory):
    """A tiny uni DRNN-LWMA (delay 2) trained on 8000 words of dev2012, packed with --onnx, and test2011 words."""
    pytest.importorskip("onnxruntime", reason="the onnx extra (onnxruntime) is not installed")
    d = tmp_path_factory.mktemp("uni")
    cli("pack", train_tiny(d, TINY), "-o", d / "m.pkt", "--onnx")
    utts, _ = read(d / "test")
    (d / "words.txt").write_text("".join(" ".join(u.words) + "\n" for u in utts[:3]))
    return d


def test_trained_uni_model_streams_with_lookahead_and_decodes(uni_packed):
    """Built from YAML through the registry and trained; `punctuate --stream --lookahead 2` and the
    offline `punctuate` keep every word, in order, and predict marks."""
    conf = yaml.safe_load((uni_packed / "exp" / "config.yaml").read_text())
    assert (conf["model"]["direction"], conf["model"]["delay"]) == ("uni", 2)
    words = (uni_packed / "words.txt").read_text().split()
    for backend in ("torch", "onnx"):
        r = cli("punctuate", "-m", uni_packed / "m.pkt", "--stream", "--lookahead", 2, "--backend", backend,
                "--threads", 1, uni_packed / "words.txt")
        shown = r.stdout.split()
        assert [w.strip(".,?!").lower() for w in shown] == [w.strip(".,?!").lower() for w in words]
        assert any(w[-1] in ".,?" for w in shown)
    cli("punctuate", "-m", uni_packed / "m.pkt", uni_packed / "words.txt", "--format", "twocol", "--threads", 1,
        "-o", uni_packed / "hyp")
    hyp = [lab for u in read(uni_packed / "hyp")[0] for lab in u.labels]
    assert len(hyp) == len(words) and len(set(hyp)) > 1


def test_streaming_with_less_lookahead_than_the_delay_is_a_one_line_error(uni_packed):
    """A uni model with delay 2 cannot label a word from 1 word ahead: one error line, no output."""
    r = cli("punctuate", "-m", uni_packed / "m.pkt", "--stream", "--lookahead", 1, "--threads", 1,
            uni_packed / "words.txt", ok=False)
    assert r.returncode == 1 and r.stdout == "" and "Traceback" not in r.stderr
    assert r.stderr.splitlines() == ["punctkit: error: this model reads 2 words ahead by construction "
                                     "(direction: uni, delay: 2): stream it with --lookahead 2 or more"]


def test_train_with_a_bad_delay_is_a_one_line_error(uni_packed, tmp_path):
    """`punctkit train` stops at checking the config, before any work, with one error line and no traceback."""
    r = cli("train", "--config", uni_packed / "exp" / "config.yaml", "--train-dir", uni_packed / "train",
            "--exp", tmp_path / "exp", "--set", "model.delay=-1", ok=False)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("punctkit: error:")]
    assert r.stderr.splitlines() == errors == ["punctkit: error: model 'drnn_lwma': option delay must be >= 0, got -1"]
    assert not (tmp_path / "exp").exists()


def test_packed_onnx_graph_equals_torch_on_any_batch_shape(uni_packed):
    """The graph `pack --onnx` wrote for the uni model gives torch's logits on padded batches of several
    shapes, with words of one to three pieces (so the delayed positions are not the word indices)."""
    from punctkit import load_model
    from punctkit.onnx import OnnxTagger
    from punctkit.package import read_package

    model = load_model(uni_packed / "m.pkt", threads=1, backend="torch").scorer.runner.model
    tagger = OnnxTagger(read_package(uni_packed / "m.pkt").onnx, threads=1)
    vocab = model.embed.embed.num_embeddings
    rng = np.random.default_rng(0)
    for lengths in [(1,), (7, 40, 3, 40, 12), (64, 64)]:
        rows = [[rng.integers(1, vocab, rng.integers(1, 4)).tolist() for _ in range(n)] for n in lengths]
        b = batch_of(rows)
        got, want = tagger.logits(b), logits(model, b).numpy()
        assert got.shape == want.shape
        assert np.abs(got - want)[b["word_mask"]].max() < 1e-4


# ------------------------------------------------------------------ (c) the boundary input (issue #79)

def test_boundary_input_starts_at_zero_so_a_warm_start_computes_what_it_did():
    """`boundary_input: true` adds one table (boundary.weight) and nothing else; copied from a model without it,
    the new model's logits are the old one's whatever the boundary ids; a model without it needs no `boundaries`."""
    old, new = build(seed=0), build(seed=5, boundary_input=True)
    assert set(new.state_dict()) - set(old.state_dict()) == {"boundary.weight"}
    assert "boundaries" in new.needs and "boundaries" not in old.needs
    missing, unexpected = new.load_state_dict(old.state_dict(), strict=False)
    assert missing == ["boundary.weight"] and not unexpected
    batch = batch_of([[[3], [4, 5], [6]], [[7], [8]]])
    rng = np.random.default_rng(0)
    bounds = torch.from_numpy(rng.integers(1, 12, size=batch["word_pos"].shape))
    with torch.no_grad():
        got = new({**{k: torch.from_numpy(batch[k]) for k in KEYS}, "boundaries": bounds})
    assert torch.equal(got, logits(old, batch))


def test_boundary_ids_reach_their_words_token_and_nothing_stays_untrained():
    """A word's boundary id is added at its label-carrying token only (a padded word's id changes nothing); a
    training step moves the rows it used, never row 0 (nothing known)."""
    model = build(boundary_input=True)
    with torch.no_grad():
        model.boundary.weight[1:].normal_()
    batch = {k: torch.from_numpy(v) for k, v in batch_of([[[3], [4, 5], [6]], [[7], [8]]]).items()}
    ids = token_boundaries({**batch, "boundaries": torch.tensor([[1, 2, 3], [4, 9, 7]])})
    assert ids.tolist() == [[1, 0, 2, 3], [4, 9, 0, 0]]  # row 1's third word is padding: its 7 goes nowhere
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    before = model.boundary.weight.detach().clone()
    out = model({**batch, "boundaries": torch.tensor([[0, 2, 3], [4, 0, 0]])})
    out.sum().backward()
    opt.step()
    after = model.boundary.weight.detach()
    assert torch.equal(after[0], torch.zeros_like(after[0]))
    assert not torch.equal(after[2], before[2]) and torch.equal(after[5], before[5])
