"""`train.init: model.pkt`: a run starts from a packed model's ONNX graph, with the package's frontend and labels as
its inputs (punctkit/package/to_torch.py, which punctkit/fit.py hands the trainer as a `PackageStart`)."""
from __future__ import annotations

import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from conftest import IWSLT
from punct_util import cli, cli_error, raised_error
from punctkit.config import load_config
from punctkit.data.prepare import prepare
from punctkit.data.streams import pad_batch
from punctkit.expdir import find_checkpoint, load_checkpoint
from punctkit.models.registry import build_model
from punctkit.onnx import CLIP_TOLERANCE, INPUTS, OnnxTagger
from punctkit.package import read_package
from punctkit.package.to_torch import (
    INT8_AGREEMENT,
    INT8_MEAN_DIFF,
    frontend_difference,
    graph_of,
    graph_tensors,
    package_start,
    same_distributions,
    start_of,
    token_table,
    unclipped,
)
from punctkit.pretrained import shipped_path
from punctkit.text.frontend import load_frontend
from punctkit.train.inputs import prepare_inputs
from punctkit.train.trainer import train as train_model
from punctkit.train.warm_start import warm_start

FAST = shipped_path("fast")


def package_model(pkg_path: Path, **changes) -> torch.nn.Module:
    """The torch model of a package's config.yaml model section (with `changes`), built without pre-trained vectors."""
    pkg = read_package(pkg_path)
    env = pkg.conf["resolved"]["env"]
    torch.manual_seed(0)
    return build_model({**pkg.conf["model"], **changes}, vocab_size=env["vocab_size"], n_labels=env["n_labels"],
                       pad_id=env["pad_id"])


def logits(model: torch.nn.Module, batch: dict[str, np.ndarray]) -> np.ndarray:
    model.eval()
    with torch.no_grad():
        return model({k: torch.from_numpy(batch[k]) for k in INPUTS}).numpy()


def test_fast_network_from_its_package_gives_its_graphs_logits(iwslt):
    """Every weight of the shipped fast network mapped right: on test2011's first 100 words the torch model's logits
    are the graph's within 1e-4 (the graph as trained, without its GRU clip; with it, within the label probabilities
    `pack` accepts for the clip)."""
    pkg = read_package(FAST)
    words = [line.split("\t")[0] for line in (iwslt / "test2011").read_text().splitlines()[:100]]
    ids, pos = pkg.frontend.encode(words)
    batch = pad_batch([{"tokens": ids, "word_pos": pos, "labels": [0] * len(pos), "index": 0}], pkg.frontend.pad_id)
    exact = OnnxTagger(unclipped(graph_of(FAST)), threads=1).logits(batch)
    model = package_model(FAST)
    assert model.embed.proj is None and model.embed.embed.weight.shape == (30000, 128)
    assert np.abs(logits(model, batch) - exact).max() > 1.0  # a fresh model is not the package's
    lines = []
    assert warm_start(model, FAST, lines.append, start_of(FAST)) == len(model.state_dict())
    got = logits(model, batch)
    assert got.shape == (1, 100, 16) and np.abs(got - exact).max() < 1e-4
    shipped = OnnxTagger(pkg.onnx, threads=1).logits(batch)
    softmax = torch.softmax(torch.from_numpy(got), -1) - torch.softmax(torch.from_numpy(shipped), -1)
    assert float(softmax.abs().max()) < CLIP_TOLERANCE
    n = len(model.state_dict())  # the boundary table too: the check batch gives it random ids
    assert lines[0].startswith(f"init: {n} of {n} tensors from {FAST} (model.onnx); logits within")


def test_tiny_package_round_trip(tiny_package):
    """A package's network is the checkpoint it was packed from, tensor for tensor, in a model built from its config
    (another DRNN-LWMA than fast: d_model 32, trained with look-ahead)."""
    pkg = read_package(tiny_package.pkt)
    packed = load_checkpoint(tiny_package.exp / pkg.manifest["card"]["checkpoint"])["model"]
    model = package_model(tiny_package.pkt)
    assert not all(torch.equal(v, packed[k]) for k, v in model.state_dict().items())
    warm_start(model, tiny_package.pkt, lambda _: None, pickle.loads(pickle.dumps(start_of(tiny_package.pkt))))
    got = model.state_dict()
    assert set(got) == set(packed)
    for k, v in got.items():
        assert torch.allclose(v, packed[k], atol=1e-6, rtol=0), k


def test_partial_copy_and_mismatched_models_are_one_line_errors(tmp_path, tiny_package):
    """`keys` copies only those modules; a model of another type or shape, a config with pre-trained vectors (the
    package's table is folded) and a package of another type are refused in one line each."""
    model = package_model(tiny_package.pkt)
    start = start_of(tiny_package.pkt)
    fresh = {k: v.clone() for k, v in model.state_dict().items()}
    n = warm_start(model, {"path": str(tiny_package.pkt), "keys": ["birnns"]}, lambda _: None, start)
    assert n == 16 and all(torch.equal(v, fresh[k]) != k.startswith("birnns.") for k, v in model.state_dict().items())
    raised_error(lambda: warm_start(package_model(tiny_package.pkt, n_layers=3), tiny_package.pkt, start=start),
                 start=f"train.init: {tiny_package.pkt}: its graph has 3 GRU layers and 7 weight matrices, this "
                       f"model 4 and 10")
    assert "is not birnns.0" in raised_error(lambda: warm_start(package_model(tiny_package.pkt, d_model=16),
                                                                tiny_package.pkt, start=start))
    vectors = np.zeros((read_package(tiny_package.pkt).frontend.vocab_size, 7), np.float32)
    assert "fits no embedding of this model" in raised_error(
        lambda: warm_start(package_model(tiny_package.pkt, embeddings=vectors), tiny_package.pkt, start=start))
    other = build_model({"type": "transformer_tagger", "d_model": 8, "n_heads": 2, "n_layers": 1, "d_ff": 8},
                        vocab_size=40, n_labels=4, pad_id=0)
    assert "can warm-start drnn_lwma, plm_tagger models only, not transformer_tagger" in raised_error(
        lambda: warm_start(other, tiny_package.pkt, start=start))
    with zipfile.ZipFile(tiny_package.pkt) as z:
        members = {i.filename: z.read(i) for i in z.infolist()}
    conf = yaml.safe_load(members["config.yaml"])
    conf["model"] = {"type": "transformer_tagger", "d_model": 32, "n_heads": 2, "n_layers": 1}
    members["config.yaml"] = yaml.safe_dump(conf).encode()
    with zipfile.ZipFile(tmp_path / "transformer.pkt", "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    assert "a package can warm-start drnn_lwma, plm_tagger models only, and this one's is transformer_tagger" in \
        raised_error(lambda: start_of(tmp_path / "transformer.pkt"))


def fine_tune_conf(tmp_path: Path, **train) -> Path:
    """A fine-tune config of fast (its model section, no embeddings: section) with `train.init` its package, its
    folded table kept fixed as recipes/ted/conf/train_drnn_lwma_turns.yaml keeps it (`freeze_embeddings: true`; the
    shipped package's own section says how it was trained, its table trained too)."""
    model = dict(read_package(FAST).conf["model"], freeze_embeddings=True)
    conf = {"frontend": {"kind": "word"}, "model": model,
            "train": {"lr": 0.002, "epochs": 1, "batch_size": 4, "window": 100, "threads": 1, "n_average": 1,
                      "init": str(FAST), **train},
            "decode": {"window": 100, "step": 50, "batch_size": 16, "beam": 1}}
    path = tmp_path / f"conf{len(list(tmp_path.glob('conf*.yaml')))}.yaml"
    path.write_text(yaml.safe_dump(conf))
    return path


def test_recipe_command_fine_tunes_fast_with_its_inputs(tmp_path, iwslt, one_torch_thread):
    """recipes' stage-4 call (`--inputs EXP/inputs`, which stage 3 did not make) with `train.init: fast.pkt`: the run
    reads the package's frontend, starts from its network and keeps its folded table fixed
    (`freeze_embeddings: true`) while the rest trains. Stage 3 with the config writes the package's frontend; a
    frontend learned from the data there, other labels or an `embeddings:` section are one-line errors."""
    for name, lines in (("train", (1, 400)), ("valid", (401, 500))):
        prepare([iwslt / "dev2012"], tmp_path / name, inventory="truecase4", block_len=100, lines=lines,
                show_progress=False)
    conf, exp = fine_tune_conf(tmp_path), tmp_path / "exp"
    data = ["--train-dir", tmp_path / "train", "--valid-dir", tmp_path / "valid"]
    cli("train", "--config", conf, *data, "--exp", exp, "--inputs", exp / "inputs", "--ngpu", "0")
    pkg = read_package(FAST)
    assert frontend_difference(load_frontend(exp / "frontend"), pkg.frontend) is None
    got = load_checkpoint(exp / "checkpoints" / "epoch_1.pt")["model"]
    table = token_table(FAST)
    assert np.array_equal(got["embed.embed.weight"].numpy(), table)  # frozen: as the package has it
    start = {b.name: b.value for b in graph_tensors(package_model(FAST), FAST)}
    assert set(start) == set(got)
    moved = [k for k in got if not np.allclose(got[k].numpy(), start[k], atol=1e-7)]
    assert "out.weight" in moved and "embed.embed.weight" not in moved
    saved = yaml.safe_load((exp / "config.yaml").read_text())
    assert saved["resolved"]["inventory"] == "truecase4"
    assert saved["resolved"]["env"]["embeddings_shape"] == [30000, 128]
    log = (exp / "train.log").read_text()
    model = package_model(FAST)  # every tensor copied; trainable: all but the frozen token table
    n = len(model.state_dict())
    trainable = sum(p.numel() for k, p in model.named_parameters() if k != "embed.embed.weight")
    assert f"init: {n} of {n} tensors from {FAST} (model.onnx)" in log and f"({trainable} trainable)" in log

    cli("prepare-inputs", "--config", conf, tmp_path / "train", tmp_path / "stage3")
    assert frontend_difference(load_frontend(tmp_path / "stage3" / "frontend"), pkg.frontend) is None
    learned = tmp_path / "learned.yaml"
    learned.write_text(yaml.safe_dump({**yaml.safe_load(conf.read_text()), "train": {"init": None}}))
    cli("prepare-inputs", "--config", learned, tmp_path / "train", tmp_path / "own")
    cli_error(cli("train", "--config", conf, *data, "--exp", tmp_path / "e2", "--inputs", tmp_path / "own", ok=False),
              f"train.init: {FAST}: {tmp_path / 'own' / 'frontend'} is not the package's frontend")
    prepare([iwslt / "dev2012"], tmp_path / "train4", block_len=100, lines=(1, 200), show_progress=False)
    cli_error(cli("train", "--config", conf, "--train-dir", tmp_path / "train4", "--exp", tmp_path / "e3", ok=False),
              "its labels are truecase4, the training data's", "4class", "--inventory truecase4")
    vectors = tmp_path / "vectors.yaml"
    vectors.write_text(yaml.safe_dump({**yaml.safe_load(conf.read_text()), "embeddings": {"word": "w2v.txt"}}))
    cli_error(cli("prepare-inputs", "--config", vectors, tmp_path / "train", tmp_path / "s4", ok=False),
              "drop the config's embeddings: section")


def test_only_a_run_given_its_start_reads_a_package(tmp_path, iwslt, tiny_package):
    """The train layer reads no package itself: the trainer called on its own (not through punctkit.fit.train),
    `warm_start` without a start and stage 3 without the package's frontend refuse a `train.init` package in one
    line each, before anything is written; a checkpoint's warm start needs no start."""
    prepare([iwslt / "dev2012"], tmp_path / "train", inventory="truecase4", block_len=100, lines=(1, 100),
            show_progress=False)
    conf = fine_tune_conf(tmp_path)
    raised_error(lambda: train_model(conf, tmp_path / "train", None, tmp_path / "exp"),
                 start=f"train.init: {FAST}: a packed model, which only `punctkit train` (punctkit.fit.train) reads")
    assert not (tmp_path / "exp").exists()
    assert "only `punctkit train`" in raised_error(lambda: warm_start(package_model(tiny_package.pkt),
                                                                      tiny_package.pkt))
    assert "`punctkit prepare-inputs` writes" in raised_error(
        lambda: prepare_inputs(yaml.safe_load(conf.read_text()), tmp_path / "train", tmp_path / "stage3"))
    assert not (tmp_path / "stage3" / "frontend").exists()


def test_package_start_checks_the_runs_frontends(tmp_path, iwslt):
    """`package_start` (punctkit/fit.py's, before the run): None for a config without a package; with one, a frontend
    in `--exp` (a resumed run's) or in `--inputs` that is not the package's is a one-line error naming it, the
    package's own passes, and the start holds the package's frontend and its graph's token table."""
    train = tmp_path / "train"
    prepare([iwslt / "dev2012"], train, inventory="truecase4", block_len=100, lines=(1, 100), show_progress=False)
    conf = load_config(fine_tune_conf(tmp_path))
    learned = load_config(fine_tune_conf(tmp_path, init=None))
    assert package_start(learned, train, None, tmp_path / "exp") is None
    prepare_inputs(learned, train, tmp_path / "own", log=lambda _: None)
    for exp, inputs in ((tmp_path / "own", None), (tmp_path / "exp", tmp_path / "own")):
        raised_error(lambda: package_start(conf, train, inputs, exp),
                     start=f"train.init: {FAST}: {tmp_path / 'own' / 'frontend'} is not the package's frontend")
    pkg = read_package(FAST)
    pkg.frontend.save(tmp_path / "exp" / "frontend")
    start = package_start(conf, train, None, tmp_path / "exp")
    assert start.path == FAST and np.array_equal(start.table, token_table(FAST))
    assert frontend_difference(start.frontend, pkg.frontend) is None


ACCURATE = shipped_path("accurate")


@pytest.mark.slow  # the nine-layer encoder built and checked against its graph (about 15 s)
def test_accurate_int8_package_warm_starts_a_boundary_input_plm_tagger():
    """The shipped accurate package (plm_tagger, MiniLM grown to 9 layers, reading turns and pauses: `boundary_input`,
    int8 graph): every tensor of a plm_tagger of its model section, its boundary table too, is bound from the graph
    (int8 weights dequantized, the grown layers' folded gates), and the copy passes the int8 check; its start carries
    the package's PLM frontend and no token table. A model of another depth is refused in one line."""
    pkg = read_package(ACCURATE)
    assert pkg.conf["model"].get("boundary_input") is True
    model = package_model(ACCURATE)
    fresh = {k: v.clone() for k, v in model.state_dict().items()}
    start = start_of(ACCURATE)
    assert start.table is None and frontend_difference(start.frontend, pkg.frontend) is None
    lines = []
    n = len(fresh)
    assert warm_start(model, ACCURATE, lines.append, start) == n
    assert lines[0].startswith(f"init: {n} of {n} tensors from {ACCURATE} (model.onnx); labels as its int8 graph's on")
    got = model.state_dict()
    assert not fresh["boundary.weight"].any() and got["boundary.weight"][1:].abs().mean() > 0.001  # its trained table
    assert all(not torch.equal(got[k], fresh[k]) for k in got if "LayerNorm" not in k)
    gate = got["plm.encoder.layer.6.gate"]
    assert gate.shape == (384,) and float(gate.abs().mean()) > 0.001  # GATE_SCALE g, divided back
    agree, diff = same_distributions(model, ACCURATE)
    assert agree >= INT8_AGREEMENT and diff <= INT8_MEAN_DIFF
    shallow = package_model(ACCURATE, plm={**pkg.conf["model"]["plm"], "extra_layers": 2})
    assert "which this model has not" in raised_error(lambda: warm_start(shallow, ACCURATE, start=start))


@pytest.fixture(scope="module")
def tiny_plm(tmp_path_factory) -> Path:
    """A tiny `boundary_input` plm_tagger (a 1-layer BERT of the data's words, tests/ff2_util.py) trained one epoch
    on 1000 words of dev2012, its boundary table then set to random values (plain text trains only its zero
    NOTHING row; these make the boundaries matter), packed float (float.pkt: `pack --onnx`) and int8 (int8.pkt)."""
    from ff2_util import tiny_bert_dir
    from punct_util import tiny_conf
    from punctkit.fit import train

    if not (IWSLT / "dev2012").is_file():
        pytest.skip(f"IWSLT reference data not found at {IWSLT}")
    d = tmp_path_factory.mktemp("tiny_plm")
    prepare([IWSLT / "dev2012"], d / "train", block_len=100, lines=(1, 1000), show_progress=False)
    words = [w for ln in (d / "train" / "text").read_text().splitlines() for w in ln.split()[1:]]
    bert = tiny_bert_dir(d / "bert", words, layers=2)
    conf = {**tiny_conf({"type": "plm_tagger", "plm": str(bert), "boundary_input": True}, epochs=1),
            "frontend": {"kind": "plm", "path": str(bert)}}
    train(conf, d / "train", None, d / "exp", quiet=True)
    ckpt = find_checkpoint(d / "exp", None)
    state = load_checkpoint(ckpt)
    table = state["model"]["boundary.weight"]
    table[1:] = torch.randn(table[1:].shape, generator=torch.Generator().manual_seed(0))
    torch.save(state, ckpt)
    cli("pack", d / "exp", "-o", d / "float.pkt", "--onnx")
    cli("pack", d / "exp", "-o", d / "int8.pkt", "--onnx", "--int8")
    return d


@pytest.mark.slow  # trains a tiny plm_tagger and packs it twice (about 30 s)
def test_tiny_boundary_input_plm_warm_starts_from_its_float_and_int8_packages(tiny_plm):
    """A trained `boundary_input` plm_tagger packed float and int8, each warm-started into a fresh model of its
    model section through train.init's path (`start_of`, `warm_start`): every tensor bound, the boundary table the
    trained one (dequantized where int8), the float copy's logits its graph's within onnx.TOLERANCE, the int8 copy
    passing the int8 check; a copy with one matrix transposed (float) or its boundary table zeroed (both) fails
    the check in one line."""
    from punctkit.onnx import TOLERANCE
    from punctkit.package.to_torch import same_logits, same_network

    packed = load_checkpoint(find_checkpoint(tiny_plm / "exp", None))["model"]
    for kind in ("float", "int8"):
        pkt = tiny_plm / f"{kind}.pkt"
        assert bool(graph_of(pkt).graph.initializer) and (kind == "int8") == any(
            i.data_type == 3 for i in graph_of(pkt).graph.initializer)  # int8 weights only in the int8 graph
        model = package_model(pkt)
        start = start_of(pkt)
        assert start.table is None
        lines = []
        n = len(model.state_dict())
        assert warm_start(model, pkt, lines.append, start) == n
        assert lines[0].startswith(f"init: {n} of {n} tensors from {pkt} (model.onnx); ")
        got = model.state_dict()
        assert set(got) == set(packed)
        for k, v in got.items():
            assert torch.allclose(v, packed[k], atol=1e-6 if kind == "float" else 0.05, rtol=0), (kind, k)
        if kind == "float":
            assert "logits within" in lines[0] and same_logits(model, pkt) <= TOLERANCE
        else:
            assert "labels as its int8 graph's" in lines[0]
            agree, diff = same_distributions(model, pkt)
            assert agree >= INT8_AGREEMENT and diff <= INT8_MEAN_DIFF
        query = "plm.encoder.layer.0.attention.output.dense.weight"  # the query: too little in an untrained BERT
        # int8: a barely trained tiny encoder's labels are flat enough that a transposed matrix stays within the
        # int8 check's tolerance (calibrated on the accurate model); its boundary table zeroed does not
        for broken in (query, "boundary.weight") if kind == "float" else ("boundary.weight",):
            copy = package_model(pkt)
            copy.load_state_dict(got)
            with torch.no_grad():
                w = copy.get_parameter(broken)
                w.copy_(w.T.clone() if broken == query else torch.zeros_like(w))
            message = raised_error(lambda: same_network(copy, pkt), start=f"train.init: {pkt}: this model's ")
            assert ("logits differ" if kind == "float" else "int8 graph's") in message, message
