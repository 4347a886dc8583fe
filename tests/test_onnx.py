"""`punctkit pack --onnx` and the onnxruntime backend of `punctkit punctuate` (no torch at run time)."""
from __future__ import annotations

import json
import subprocess
import sys
import zipfile

import numpy as np
import pytest
import torch

from punct_util import cli, json_without
from punctkit.data.formats import read
from punctkit.files import PunctkitError
from punctkit.models.registry import build_model

pytest.importorskip("onnxruntime", reason="the onnx extra (onnxruntime) is not installed")
from punctkit.onnx import INPUTS, OPSET, OnnxTagger, export_onnx  # noqa: E402


@pytest.fixture(scope="module")
def packed(tiny_package, tmp_path_factory):
    """The run's tiny DRNN-LWMA packed with --onnx (conftest.tiny_package), copied here, and test2011 words."""
    return tiny_package.copy_to(tmp_path_factory.mktemp("onnx"))


def _batch(lengths: tuple[int, ...], vocab: int, seed: int) -> dict[str, np.ndarray]:
    from punctkit.data.streams import pad_batch

    rng = np.random.default_rng(seed)
    return pad_batch([{"tokens": rng.integers(1, vocab, n).tolist(), "word_pos": list(range(n)),
                       "labels": [0] * n, "index": i} for i, n in enumerate(lengths)])


@pytest.mark.parametrize("conf", [
    {"type": "drnn_lwma", "n_layers": 2, "n_heads": 2, "d_model": 16},          # TorchScript exporter (GRUs)
    {"type": "transformer_tagger", "n_layers": 2, "d_model": 16, "n_heads": 2, "d_ff": 32},  # export-based
], ids=["drnn_lwma", "transformer_tagger"])
def test_exported_graph_equals_torch_on_any_batch_shape(conf):
    """Batch size and lengths are free in the graph, and padding changes no real word's logits."""
    torch.manual_seed(0)
    model = build_model(conf, vocab_size=50, n_labels=4, pad_id=0, embeddings=None).eval()
    tagger = OnnxTagger(export_onnx(model, 50, 0), threads=1)
    for lengths in [(1,), (7, 40, 3, 40, 12), (64, 64)]:
        b = _batch(lengths, 50, seed=len(lengths))
        with torch.no_grad():
            want = model({k: torch.from_numpy(b[k]) for k in INPUTS}).numpy()
        got = tagger.logits(b)
        assert got.shape == want.shape
        assert np.abs(got - want)[b["word_mask"]].max() < 1e-4



def _gru_clips(graph: bytes) -> list[float | None]:
    import onnx

    return [next((onnx.helper.get_attribute_value(a) for a in n.attribute if a.name == "clip"), None)
            for n in onnx.load_from_string(graph).graph.node if n.op_type == "GRU"]


def test_exported_gru_gates_are_clipped_without_changing_labels(monkeypatch):
    """GRU nodes carry `clip` (onnxruntime's branch-free clip before its branching one: a saturated
    model ran 8 % slower without it); with gate inputs far past +-10 the probabilities stay within
    CLIP_TOLERANCE of the exact graph's and the labels are the same; past the tolerance the exact
    graph is kept."""
    import punctkit.onnx as ponnx

    torch.manual_seed(0)
    model = build_model({"type": "drnn_lwma", "n_layers": 2, "n_heads": 2, "d_model": 16}, vocab_size=50,
                        n_labels=4, pad_id=0, embeddings=None).eval()
    with torch.no_grad():  # saturate the gates, as long training does
        for name, w in model.named_parameters():
            if "weight_hh" in name or "weight_ih" in name:
                w.mul_(6.0)
    graph = export_onnx(model, 50, 0)
    assert len(_gru_clips(graph)) == 3 and all(c == ponnx.GRU_CLIP for c in _gru_clips(graph))
    with monkeypatch.context() as m:
        m.setattr(ponnx, "CLIP_TOLERANCE", 0.0)  # nothing may move: the exact graph is kept
        exact = export_onnx(model, 50, 0)
    assert _gru_clips(exact) == [None] * 3
    b = _batch((7, 40, 3, 40, 12), 50, seed=3)
    got, want = OnnxTagger(graph, threads=1).logits(b), OnnxTagger(exact, threads=1).logits(b)
    assert 0 < np.abs(got - want)[b["word_mask"]].max()  # the clip did change something
    from punctkit.decode.windows import softmax

    assert np.abs(softmax(got) - softmax(want))[b["word_mask"]].max() <= ponnx.CLIP_TOLERANCE
    assert (got.argmax(-1) == want.argmax(-1))[b["word_mask"]].all()
    assert ponnx.clipped_grus(exact) == graph  # clipping is all that differs


def _guarded_softmax(fill: float):
    """An ONNX graph of the attention softmax as torch exports it: Softmax(x + Where(keep, 0, fill)),
    then its NaN guard, Where(IsNaN(p), 0, p); inputs x (1, 2, 3, 3) and keep (1, 1, 3, 3)."""
    import onnx
    from onnx import TensorProto, helper

    h = helper
    nodes = [h.make_node("Where", ["keep", "zero", "fill"], ["mask"]), h.make_node("Add", ["x", "mask"], ["s"]),
             h.make_node("Softmax", ["s"], ["p"], axis=-1), h.make_node("IsNaN", ["p"], ["nan"]),
             h.make_node("Where", ["nan", "zero", "p"], ["q"]), h.make_node("Mul", ["q", "two"], ["y"])]
    inits = [onnx.numpy_helper.from_array(np.array(v, np.float32), n) for n, v in
             (("zero", 0.0), ("fill", fill), ("two", 2.0))]
    graph = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 3, 3]),
                                      h.make_tensor_value_info("keep", TensorProto.BOOL, [1, 1, 3, 3])],
                         [h.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 3, 3])], inits)
    return h.make_model(graph, opset_imports=[h.make_opsetid("", OPSET)]).SerializeToString()


def test_attention_nan_guards_go_where_the_mask_is_finite():
    """torch's exporter guards each attention softmax against NaN rows (Where over batch x heads x
    tokens x tokens: 12 % of the accurate model's time on an AVX2 CPU). With a finite mask fill a row
    whose every key is masked is uniform, never NaN: the guard goes and every value stays bit for bit,
    that row included. With an infinite fill that row is NaN, the guard does work, and it is kept."""
    import onnxruntime as ort

    from punctkit.onnx import without_nan_guards
    from punctkit.pretrained import shipped_path

    rng = np.random.default_rng(0)
    feed = {"x": rng.normal(size=(1, 2, 3, 3)).astype(np.float32) * 5,
            "keep": np.array([[[[1, 1, 0], [1, 0, 0], [0, 0, 0]]]], bool)}  # the last query sees no key

    def run(g: bytes) -> np.ndarray:
        return ort.InferenceSession(g, providers=["CPUExecutionProvider"]).run(None, feed)[0]

    finite = _guarded_softmax(float(np.finfo(np.float32).min))
    lean = without_nan_guards(finite)
    assert b"IsNaN" in finite and b"IsNaN" not in lean and len(lean) < len(finite)
    assert np.array_equal(run(lean), run(finite))
    assert np.allclose(run(lean)[0, :, 2], 2 / 3)  # the row without keys: uniform (x 2)
    infinite = _guarded_softmax(-np.inf)
    assert without_nan_guards(infinite) == infinite
    assert (run(infinite)[0, :, 2] == 0).all()  # its guard turns that row's NaN into zeros: kept
    with zipfile.ZipFile(shipped_path("fast")) as z:  # DRNN-LWMA: no guards, the graph as it is
        graph = z.read("model.onnx")
    assert without_nan_guards(graph) is graph


@pytest.mark.slow  # a PLM exported (about 18 s)
def test_exported_plm_tagger_has_no_nan_guards_and_torch_logits(monkeypatch):
    """A BERT tagger (the accurate model's kind) exported by `export_onnx`: torch's exporter writes a
    NaN guard after each layer's softmax; the packed graph has none and gives the same logits."""
    import punctkit.onnx as ponnx

    bert = {"model_type": "bert", "vocab_size": 60, "hidden_size": 32, "num_hidden_layers": 2,
            "num_attention_heads": 4, "intermediate_size": 64, "max_position_embeddings": 64}
    torch.manual_seed(0)
    model = build_model({"type": "plm_tagger", "plm": {"config": bert}}, vocab_size=60, n_labels=4, pad_id=0,
                        embeddings=None).eval()
    lean = export_onnx(model, 60, 0)
    with monkeypatch.context() as m:
        m.setattr(ponnx, "without_nan_guards", lambda g: g)
        guarded = export_onnx(model, 60, 0)
    assert guarded.count(b"IsNaN") >= 2 and b"IsNaN" not in lean
    b = _batch((7, 40, 3), 60, seed=3)
    with torch.no_grad():
        want = model({k: torch.from_numpy(b[k]) for k in INPUTS}).numpy()
    got, before = OnnxTagger(lean, threads=1).logits(b), OnnxTagger(guarded, threads=1).logits(b)
    assert np.array_equal(got[b["word_mask"]], before[b["word_mask"]])
    assert np.abs(got - want)[b["word_mask"]].max() < 1e-4


def test_projected_pretrained_vectors_are_folded_into_the_graph():
    """Pre-trained vectors wider than the model (pooled MiniLM: 384-d) are projected once at export:
    the graph holds the (vocab, d_model) table, not the wider one and the projection, and gives
    torch's logits."""
    torch.manual_seed(0)
    vectors = np.random.default_rng(0).normal(size=(50, 77)).astype(np.float32)
    model = build_model({"type": "drnn_lwma", "n_layers": 1, "n_heads": 1, "d_model": 16}, vocab_size=50,
                        n_labels=4, pad_id=0, embeddings=vectors).eval()
    graph = export_onnx(model, 50, 0)
    import onnx

    shapes = [tuple(t.dims) for t in onnx.load_from_string(graph).graph.initializer]
    assert (50, 16) in shapes and not any(77 in s for s in shapes)
    b = _batch((7, 30), 50, seed=3)
    with torch.no_grad():
        want = model({k: torch.from_numpy(b[k]) for k in INPUTS}).numpy()
    assert np.abs(OnnxTagger(graph, threads=1).logits(b) - want)[b["word_mask"]].max() < 1e-4
    assert model.embed.proj is not None  # the trained model itself is left as it was


def test_onnx_punctuate_equals_torch_and_scores(packed):
    """The same labels from both backends on test2011 words; the model predicts marks, so this is not trivial."""
    from punctkit.score import score_files

    for backend in ("torch", "onnx"):
        cli("punctuate", "-m", packed / "m.pkt", packed / "words.txt", "--format", "twocol", "--threads", 1,
            "--backend", backend, "-o", packed / f"hyp.{backend}")
    assert (packed / "hyp.onnx").read_text() == (packed / "hyp.torch").read_text()
    assert score_files(packed / "test", packed / "hyp.onnx")["overall"]["f1"] > 0


def test_onnx_backend_runs_without_torch(packed):
    """`auto` picks onnx for a package that has it, and punctuating never imports torch."""
    code = ("import sys\nfrom punctkit import load_model\n"
            f"p = load_model({str(packed / 'm.pkt')!r}, threads=1)\n"
            "out = p.punctuate('so i think we should go now what do you think')\n"
            "print(p.backend, 'torch' in sys.modules)\nprint(out)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    first, text = r.stdout.splitlines()
    assert first.split() == ["onnx", "False"]
    assert "".join(c for c in text.lower() if c.isalpha()) == "soithinkweshouldgonowwhatdoyouthink"


def test_onnx_errors_are_one_line(packed, tmp_path):
    """No graph in the package, a corrupt graph, an encoder-decoder: each a one-line error."""
    cli("pack", packed / "exp", "-o", tmp_path / "plain.pkt")
    r = cli("punctuate", "-m", tmp_path / "plain.pkt", "--backend", "onnx", packed / "words.txt", ok=False)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "has no ONNX graph" in r.stderr
    with zipfile.ZipFile(packed / "m.pkt") as src, zipfile.ZipFile(tmp_path / "bad.pkt", "w") as dst:
        for n in src.namelist():
            dst.writestr(n, src.read(n)[:100] if n == "model.onnx" else src.read(n))
    r = cli("punctuate", "-m", tmp_path / "bad.pkt", "--backend", "onnx", packed / "words.txt", ok=False)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "(model.onnx): does not load" in r.stderr
    seq2seq = build_model({"type": "transformer_seq2seq", "n_layers": 1, "d_model": 16, "n_heads": 2, "d_ff": 32},
                          vocab_size=50, n_labels=4, pad_id=0, embeddings=None)
    with pytest.raises(PunctkitError, match="encoder-decoder"):
        export_onnx(seq2seq, 50, 0)


def test_int8_graph_is_quantized_and_labels_like_float(packed, tmp_path):
    """`pack --onnx --int8`: integer MatMuls in the graph, the card says so, and (almost) the float labels."""
    import onnx

    cli("pack", packed / "exp", "-o", tmp_path / "q.pkt", "--onnx", "--int8")
    with zipfile.ZipFile(tmp_path / "q.pkt") as z:
        graph = onnx.load_from_string(z.read("model.onnx"))
        card = json.loads(z.read("punctkit.json"))["card"]
    assert card["onnx"] == "int8"
    assert any(n.op_type in ("MatMulInteger", "DynamicQuantizeMatMul") for n in graph.graph.node)
    # 7-bit weights: CPUs without VNNI (AVX2) multiply u8 x s8 pairs into saturating int16 sums, which
    # full-range int8 weights overflow (an MPNet package scored 0.1 F1 on an AVX2 EPYC, 70.4 with these)
    from onnx import numpy_helper

    weights = [numpy_helper.to_array(t) for t in graph.graph.initializer if t.data_type == onnx.TensorProto.INT8]
    assert weights and all(abs(int(w.min())) <= 64 and int(w.max()) <= 64 for w in weights)  # full range: 127
    cli("punctuate", "-m", tmp_path / "q.pkt", packed / "words.txt", "--format", "twocol", "--threads", 1,
        "-o", tmp_path / "hyp.int8")
    cli("punctuate", "-m", packed / "m.pkt", packed / "words.txt", "--format", "twocol", "--threads", 1,
        "-o", tmp_path / "hyp.float")
    q8 = [u.labels for u in read(tmp_path / "hyp.int8")[0]]
    fp = [u.labels for u in read(tmp_path / "hyp.float")[0]]
    same = sum(a == b for x, y in zip(q8, fp) for a, b in zip(x, y))
    assert same >= 0.95 * sum(len(x) for x in fp)
    r = cli("pack", packed / "exp", "-o", tmp_path / "bad.pkt", "--int8", ok=False)
    assert r.returncode == 1 and "add --onnx" in r.stderr and not (tmp_path / "bad.pkt").exists()


def test_onnx_only_package_has_no_torch_weights_and_labels_as_onnx(packed, tmp_path):
    """`pack --onnx-only`: model.onnx without model.pt (smaller); it punctuates as the --onnx package
    does, without torch; the torch backend is a one-line error, and so is a package with no weights."""
    cli("pack", packed / "exp", "-o", tmp_path / "only.pkt", "--onnx-only")
    with zipfile.ZipFile(tmp_path / "only.pkt") as z:
        names = z.namelist()
    assert "model.onnx" in names and "model.pt" not in names
    assert (tmp_path / "only.pkt").stat().st_size < (packed / "m.pkt").stat().st_size
    for pkg, out in ((tmp_path / "only.pkt", "hyp.only"), (packed / "m.pkt", "hyp.both")):
        cli("punctuate", "-m", pkg, packed / "words.txt", "--format", "twocol", "--threads", 1, "--backend", "onnx",
            "-o", tmp_path / out)
    assert (tmp_path / "hyp.only").read_text() == (tmp_path / "hyp.both").read_text()
    r = cli("punctuate", "-m", tmp_path / "only.pkt", "--backend", "torch", packed / "words.txt", ok=False)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "ONNX graph only" in r.stderr
    with zipfile.ZipFile(tmp_path / "only.pkt") as src, zipfile.ZipFile(tmp_path / "none.pkt", "w") as dst:
        for n in src.namelist():
            if n != "model.onnx":
                dst.writestr(n, src.read(n))
    r = cli("punctuate", "-m", tmp_path / "none.pkt", packed / "words.txt", ok=False)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "missing model.pt or model.onnx" in r.stderr


def test_decode_runs_a_package_as_punctuate_does(packed, tmp_path):
    """`punctkit decode PKG DATA OUT`: the package's own graph labels a data dir (what users run is
    what a recipe scores, or a teacher labels): the labels and probabilities of the experiment it was
    packed from, the package's decoding options under the command line's; its int8 graph decodes too;
    what only an experiment dir has (--checkpoint, n-best lists) and ensemble packages are one-line errors."""
    from punctkit.data.probs import DIGITS, read_probs
    from punctkit.score import score_files

    # the command, where torch cannot be imported: a package's graph needs none (only an experiment does)
    argv = ["decode", str(packed / "m.pkt"), str(packed / "test"), str(tmp_path / "pkg"), "--probs", "--threads", "1",
            "--step", "40"]
    assert json_without(f"from punctkit.cli import main\nmain({argv!r})\nprint(json.dumps('decoded'))") == "decoded"
    cli("decode", packed / "exp", packed / "test", tmp_path / "exp", "--probs", "--step", 40)
    assert (tmp_path / "pkg" / "labels").read_text() == (tmp_path / "exp" / "labels").read_text()
    got, want = read_probs(tmp_path / "pkg" / "probs", 4), read_probs(tmp_path / "exp" / "probs", 4)
    assert list(got) == list(want) and len(got) > 5
    unit = 10.0 ** -DIGITS  # the file's last written place: ONNX and torch may round either side of it
    assert max(np.abs(got[u] - want[u]).max() for u in want) < 1.5 * unit
    assert "step: 40" in (tmp_path / "pkg" / "decode_options.yaml").read_text()
    assert score_files(packed / "test", tmp_path / "pkg")["overall"]["f1"] > 0

    cli("pack", packed / "exp", "-o", tmp_path / "q.pkt", "--onnx", "--int8")
    cli("decode", tmp_path / "q.pkt", packed / "test", tmp_path / "q", "--threads", 1)
    q = (tmp_path / "q" / "labels").read_text().split()
    f = (tmp_path / "exp" / "labels").read_text().split()
    assert len(q) == len(f) and sum(a == b for a, b in zip(q, f)) > 0.9 * len(f)

    for args, says in ((["--checkpoint", "model.best.pt"], "is a package"), (["--nbest", "2"], "n-best lists")):
        r = cli("decode", packed / "m.pkt", packed / "test", tmp_path / "bad", *args, ok=False)
        assert r.returncode == 1 and r.stderr.count("\n") == 1 and says in r.stderr, r.stderr
    cli("pack", packed / "exp", packed / "exp", "-o", tmp_path / "ens.pkt")
    r = cli("decode", tmp_path / "ens.pkt", packed / "test", tmp_path / "bad", ok=False)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "ensemble package" in r.stderr, r.stderr
    assert not (tmp_path / "bad").exists()
