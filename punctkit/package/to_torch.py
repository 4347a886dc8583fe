"""Warm start from a packed model (`train.init: model.pkt`): a run fine-tunes the network of a package, such as
the shipped `fast` one (punctkit/pretrained/fast.pkt), of which no torch checkpoint exists anywhere. The train layer
knows only the `PackageStart` (punctkit/train/warm_start.py) that `package_start` builds here and punctkit/fit.py
hands it, as it hands it decoding's validation; stage 3 (`punctkit prepare-inputs`) gets `package_frontend`.

The weights are the initializers of the package's model.onnx (what `--onnx-only` packs and the shipped models
hold), for the model types in `PACKAGE_TYPES` (DRNN-LWMA); another type is a one-line error. The package is read
as any package is (punctkit/package: validated members, nothing written from a name inside it). Its graph is
walked node by node and each initializer bound to the torch tensor it is; initializer names (`onnx::MatMul_785`)
are never read:

- a Gather from an initializer table is an `nn.Embedding` of the same shape (the token table, a `boundary` table);
- the GRU nodes, in graph order, are the recurrent layers and then the query GRU. ONNX's W and R
  [directions, 3H, in] hold the gates in the order z, r, h, torch's weight_ih/weight_hh r, z, n; B [directions, 6H]
  is [Wb; Rb] (bias_ih, bias_hh); direction 1 is torch's `_reverse`; `linear_before_reset` must be 1 (torch's GRU);
- the MatMul nodes with an initializer (W transposed) and the Add of an initializer after them (the bias), in
  graph order, are each attention's k, v and q projections (the order its forward runs them), then the output layer.

A package's embedding is folded (punctkit/onnx.py `folded_projections`): one table [vocab, d_model], the frozen
pre-trained vectors times their projection. So the fine-tune config has no `embeddings:` section and says
`freeze_embeddings: true`: the run reads that table as its pre-trained vectors (kept fixed), and the package's
frontend (vocabulary, case lexicon, case prior) and label inventory are its inputs, so that every token id means
what it meant (`package_start`). Stage 3 (`punctkit prepare-inputs`) with such a config writes the package's
frontend; a different frontend in `--inputs` (or in a resumed `--exp`), other labels or an `embeddings:` section
are one-line errors. Tensors the package lacks (`boundary_input`'s zero table) keep their initialisation. After the
copy the model's logits are checked against onnxruntime's on the package's graph (`unclipped`; `onnx.TOLERANCE`):
a package whose network is not this model (another `model:` section) is refused, not trained from.

The recipe's call (recipes/TEMPLATE/punct.sh stage 4) is unchanged; with conf/train_drnn_lwma_turns.yaml
(`train.init: exp/fast_words.pkt`, the words-only `fast` package that stage 6 of local/conversation.sh writes) it runs

    punctkit train --config conf/train_drnn_lwma_turns.yaml --train-dir data/train_conv --valid-dir data/valid_conv \\
      --exp exp/drnn_lwma_turns --inputs exp/drnn_lwma_turns/inputs --ngpu 0

Needs the `onnx` package to read the graph (pip install 'punctkit[onnx]').
"""
from __future__ import annotations

import functools
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from punctkit.data.datadir import read_data_dir
from punctkit.data.labels import LabelSet, get_inventory
from punctkit.files import PunctkitError
from punctkit.package.read import EnsemblePackage, Package, read_package
from punctkit.text.frontend import CONF_FILE, Frontend, load_frontend
from punctkit.train.warm_start import (
    PackageStart,
    fresh_modules,
    init_package,
    package_file,  # noqa: F401 (what a package is: the train layer tells it)
    under,
)

if TYPE_CHECKING:
    import torch

PACKAGE_TYPES = ("drnn_lwma",)  # the model types whose ONNX graph a run can start from


@dataclass(frozen=True)
class Bound:
    """One torch tensor's value from a package's graph, in torch's layout."""

    name: str          # the tensor's name in the model's state dict
    value: np.ndarray
    source: str        # the graph's node it comes from (for messages)


def open_package(path: Path) -> Package:
    """The validated package `train.init` names, with a graph of a type in PACKAGE_TYPES (read once per file
    version)."""
    st = path.stat()
    return _open(str(path.resolve()), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=2)
def _open(path: str, mtime_ns: int, size: int) -> Package:
    pkg = read_package(path)
    where = f"train.init: {path}"
    if isinstance(pkg, EnsemblePackage):
        raise PunctkitError(f"{where}: an ensemble package; start from one of its members' experiments instead")
    kind = pkg.conf["model"].get("type")
    if kind not in PACKAGE_TYPES:
        raise PunctkitError(f"{where}: a package can warm-start {', '.join(PACKAGE_TYPES)} models only, "
                            f"and this one's is {kind} (start from its experiment directory instead)")
    if pkg.onnx is None:
        raise PunctkitError(f"{where}: holds no model.onnx to read the network from (pack it with --onnx, or "
                            f"start from its experiment directory)")
    return pkg


def graph_of(path: Path) -> Any:
    """The package's model.onnx as an onnx ModelProto; a quantized graph is a one-line error."""
    try:
        import onnx
    except ImportError:
        raise PunctkitError("train.init of a packed model reads its ONNX graph: pip install 'punctkit[onnx]'") \
            from None
    proto = onnx.load_from_string(open_package(path).onnx)
    quantized = [i.name for i in proto.graph.initializer
                 if i.data_type in (onnx.TensorProto.INT8, onnx.TensorProto.UINT8)]
    if quantized:
        raise PunctkitError(f"train.init: {path}: its graph is quantized (int8 {quantized[0]}, ...): start from a "
                            f"package packed without --int8")
    return proto


def _arrays(proto: Any) -> dict[str, np.ndarray]:
    from onnx import numpy_helper

    return {i.name: numpy_helper.to_array(i) for i in proto.graph.initializer}


def token_table(path: Path) -> np.ndarray:
    """The package's token embedding (vocab, d_model): the initializer a Gather looks the `tokens` input up in."""
    proto = graph_of(path)
    arrays = _arrays(proto)
    for node in proto.graph.node:
        if node.op_type == "Gather" and node.input[1] == "tokens" and node.input[0] in arrays:
            return arrays[node.input[0]].astype(np.float32)
    raise PunctkitError(f"train.init: {path}: its graph looks up no token table (not a graph `punctkit pack` wrote)")


def _attr(node: Any, name: str, default: Any = None) -> Any:
    from onnx import helper

    for a in node.attribute:
        if a.name == name:
            value = helper.get_attribute_value(a)
            return value.decode() if isinstance(value, bytes) else value
    return default


def _gru(prefix: str, rnn: Any, node: Any, arrays: dict[str, np.ndarray], where: str) -> list[Bound]:
    """The tensors of torch GRU `rnn` (named `prefix`) from ONNX GRU `node`: gates z, r, h -> r, z, n."""
    h = rnn.hidden_size
    dirs = 2 if rnn.bidirectional else 1
    want = "bidirectional" if dirs == 2 else "forward"
    if _attr(node, "linear_before_reset", 0) != 1 or _attr(node, "direction", "forward") != want or \
            _attr(node, "hidden_size") != h or rnn.num_layers != 1:
        raise PunctkitError(f"{where}: GRU node {node.name} is not {prefix} ({want}, hidden size {h}, "
                            f"linear_before_reset 1)")
    if node.input[1] not in arrays or node.input[2] not in arrays:
        raise PunctkitError(f"{where}: GRU node {node.name} reads weights that are not initializers of the graph")
    w, r = arrays[node.input[1]], arrays[node.input[2]]
    b = arrays[node.input[3]] if len(node.input) > 3 and node.input[3] else np.zeros((dirs, 6 * h), np.float32)
    if w.shape[0] != dirs or r.shape != (dirs, 3 * h, h) or b.shape != (dirs, 6 * h):
        raise PunctkitError(f"{where}: GRU node {node.name} has weights {w.shape}, {r.shape}, {b.shape}, not those "
                            f"of {prefix} ({dirs} direction(s), hidden size {h})")
    order = np.r_[h:2 * h, 0:h, 2 * h:3 * h]  # rows of torch's r, z, n in ONNX's z, r, h
    out = []
    for d, suffix in zip(range(dirs), ("", "_reverse")):
        for name, value in (("weight_ih", w[d]), ("weight_hh", r[d]), ("bias_ih", b[d, :3 * h]),
                            ("bias_hh", b[d, 3 * h:])):
            out.append(Bound(f"{prefix}.{name}_l0{suffix}", value[order], f"GRU {node.name}"))
    return out


def graph_tensors(model: "torch.nn.Module", path: Path) -> list[Bound]:
    """Every tensor of `model` (a DRNN-LWMA) that the package's graph holds, bound by walking its nodes (see the
    module's docstring); a graph whose layers are not the model's is a one-line error."""
    from torch import nn

    from punctkit.models.drnn_lwma import DRNNLWMA

    where = f"train.init: {path}"
    if not isinstance(model, DRNNLWMA):
        raise PunctkitError(f"{where}: a package can warm-start {', '.join(PACKAGE_TYPES)} models only, not "
                            f"{getattr(model, 'type_name', type(model).__name__)}")
    proto = graph_of(path)
    arrays = _arrays(proto)
    names = {id(m): n for n, m in model.named_modules()}
    tables = [(n, m) for n, m in model.named_modules() if isinstance(m, nn.Embedding)]
    grus = [*model.birnns, model.query_rnn]
    linears = [p for a in model.attns for p in (a.k_proj, a.v_proj, a.q_proj)] + [model.out]
    consumers: dict[str, list[Any]] = {}
    for node in proto.graph.node:
        for x in node.input:
            consumers.setdefault(x, []).append(node)
    graph_grus = [n for n in proto.graph.node if n.op_type == "GRU"]
    graph_linears = [n for n in proto.graph.node if n.op_type == "MatMul" and n.input[1] in arrays]
    if (len(graph_grus), len(graph_linears)) != (len(grus), len(linears)):
        raise PunctkitError(f"{where}: its graph has {len(graph_grus)} GRU layers and {len(graph_linears)} weight "
                            f"matrices, this model {len(grus)} and {len(linears)}: build it with the package's "
                            f"config.yaml model: section")
    out: list[Bound] = []
    for rnn, node in zip(grus, graph_grus):
        out += _gru(names[id(rnn)], rnn, node, arrays, where)
    for linear, node in zip(linears, graph_linears):
        out += _linear(names[id(linear)], node, arrays, consumers, where)
    for node in proto.graph.node:
        if node.op_type == "Gather" and node.input[0] in arrays and arrays[node.input[0]].ndim == 2 \
                and arrays[node.input[0]].dtype.kind == "f":
            table = arrays[node.input[0]]
            match = next((n for n, m in tables if tuple(m.weight.shape) == table.shape), None)
            if match is None:
                have = ", ".join(f"{n} {tuple(m.weight.shape)}" for n, m in tables)
                raise PunctkitError(f"{where}: its table {table.shape} (Gather {node.name}) fits no embedding of "
                                    f"this model ({have}); a package's token table is folded to d_model: drop the "
                                    f"config's embeddings: section")
            tables = [(n, m) for n, m in tables if n != match]
            out.append(Bound(f"{match}.weight", table, f"Gather {node.name}"))
    return out


def _linear(prefix: str, node: Any, arrays: dict[str, np.ndarray], consumers: dict[str, list[Any]],
            where: str) -> list[Bound]:
    """nn.Linear `prefix`'s weight (the MatMul's initializer, transposed) and bias (the initializer its Add adds)."""
    out = [Bound(f"{prefix}.weight", arrays[node.input[1]].T, f"MatMul {node.name}")]
    adds = [n for n in consumers.get(node.output[0], []) if n.op_type == "Add"]
    bias = [x for n in adds for x in n.input if x in arrays]
    if len(bias) > 1:
        raise PunctkitError(f"{where}: MatMul {node.name} ({prefix}) is followed by more than one bias")
    if bias:
        out.append(Bound(f"{prefix}.bias", arrays[bias[0]], f"Add after {node.name}"))
    return out


def copy_package(path: Path, model: "torch.nn.Module", keys: list[str] | None,
                 log: Callable[[str], None] = print) -> int:
    """Copy the network of the package at `path` into `model` (only the tensors under module names `keys`, when
    given); the number of tensors copied. Without `keys`, the model's logits must then be the graph's.
    `PackageStart.copy` is this function with its `path` bound."""
    import torch

    where = f"train.init: {path}"
    own = model.state_dict()
    bound = [b for b in graph_tensors(model, path) if keys is None or under(b.name, keys)]
    if keys is not None:
        missing = [k for k in keys if not any(under(b.name, [k]) for b in bound)]
        if missing:
            raise PunctkitError(f"{where}: {missing[0]} (of keys {', '.join(keys)}) is not in its graph")
    for b in bound:
        if b.name not in own or tuple(own[b.name].shape) != b.value.shape:
            here = tuple(own[b.name].shape) if b.name in own else "no such tensor"
            raise PunctkitError(f"{where}: {b.name} has shape {b.value.shape} there ({b.source}), {here} here "
                                f"(build the model with the package's config.yaml model: section)")
    with torch.no_grad():
        for b in bound:
            own[b.name].copy_(torch.from_numpy(np.array(b.value, copy=True)).to(own[b.name].dtype))
    copied = {b.name for b in bound}
    fresh = fresh_modules(list(own), copied)
    check = "" if keys is not None else f"; logits within {same_logits(model, path):.1g} of its graph's"
    log(f"init: {len(copied)} of {len(own)} tensors from {path} (model.onnx)"
        + (f"; freshly initialised: {', '.join(fresh)}" if fresh else "") + check)
    return len(copied)


def unclipped(proto: Any) -> bytes:
    """The graph without its GRU nodes' `clip` (punctkit/onnx.py `clipped_grus`, a speed-up of inference that
    torch's GRU does not have): the network exactly as it was trained."""
    for node in proto.graph.node:
        if node.op_type == "GRU":
            kept = [a for a in node.attribute if a.name != "clip"]
            del node.attribute[:]
            node.attribute.extend(kept)
    return proto.SerializeToString()


def same_logits(model: "torch.nn.Module", path: Path) -> float:
    """The largest |logit difference| between `model` (in eval mode) and onnxruntime on the package's graph
    (`unclipped`) over punctkit/onnx.py's check batch; over `onnx.TOLERANCE` is a one-line error."""
    import torch

    from punctkit.onnx import INPUTS, TOLERANCE, OnnxTagger, check_batch

    pkg = open_package(path)
    batch = check_batch(pkg.frontend.vocab_size, pkg.frontend.pad_id)
    want = OnnxTagger(unclipped(graph_of(path)), threads=1, source=f"{path} (model.onnx)").logits(batch)
    device = next(model.parameters()).device
    training = model.training
    model.eval()
    try:
        with torch.no_grad():
            keys = (*INPUTS, *(k for k in getattr(model, "needs", ()) if k in batch and k not in INPUTS))  # boundaries
            got = model({k: torch.from_numpy(batch[k]).to(device) for k in keys}).float().cpu().numpy()
    finally:
        model.train(training)
    diff = float(np.abs(got - want)[batch["word_mask"]].max())
    if diff > TOLERANCE:
        raise PunctkitError(f"train.init: {path}: this model's logits differ from its graph's by {diff:.2g} "
                            f"(> {TOLERANCE}) once its weights are copied: build the model with the package's "
                            f"config.yaml model: section")
    return diff


def checked_package(conf: dict[str, Any], path: Path, inventory: LabelSet | None,
                    data: str | os.PathLike) -> Package:
    """The package a run's `train.init` names, checked against the run: the training data's labels (`data`'s
    `inventory`, when known) are its inventory, and the config has no `embeddings:` section (the package's table is
    its pre-trained vectors)."""
    pkg = open_package(path)
    where = f"train.init: {path}"
    if conf.get("embeddings"):
        raise PunctkitError(f"{where}: a package brings its own embedding (folded to d_model): drop the config's "
                            f"embeddings: section and set model.freeze_embeddings")
    theirs = pkg.conf["resolved"]["inventory"]
    if inventory is not None and theirs != inventory.name:
        raise PunctkitError(f"{where}: its labels are {theirs}, the training data's ({data}) {inventory.name}: "
                            f"prepare the data with --inventory {theirs}")
    return pkg


def check_frontends(path: Path, frontend: Frontend, dirs: list[Path]) -> None:
    """A one-line error when a frontend directory among `dirs` (where there is one) is not the package's."""
    for d in dirs:
        if (d / CONF_FILE).is_file():
            differs = frontend_difference(load_frontend(d), frontend)
            if differs:
                raise PunctkitError(f"train.init: {path}: {d} is not the package's frontend ({differs} differs), so "
                                    f"token ids would not match: remove it, or make it with `punctkit "
                                    f"prepare-inputs` and this config")


def frontend_difference(a: Frontend, b: Frontend) -> str | None:
    """The first file that differs when the two frontends are saved (frontend.yaml, vocab.txt, case lexicon, ...),
    or None when they read alike."""
    with tempfile.TemporaryDirectory(prefix="punctkit-frontends-") as tmp:
        files = []
        for i, fe in enumerate((a, b)):
            fe.save(Path(tmp) / str(i))
            root = Path(tmp) / str(i)
            files.append({p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()})
        for name in sorted(set(files[0]) | set(files[1])):
            if files[0].get(name) != files[1].get(name):
                return name
    return None


def data_inventory(data: str | os.PathLike) -> LabelSet:
    """The label inventory of data directory `data`: the one its `inventory` file names, else the one its labels
    read as (`read_data_dir`)."""
    named = Path(data) / "inventory"
    return get_inventory(named.read_text().strip()) if named.is_file() else read_data_dir(data).inventory


def package_frontend(conf: dict[str, Any], train_dir: str | os.PathLike) -> Frontend | None:
    """Stage 3's frontend of a config whose `train.init` is a package (`checked_package` against the training
    data's labels): the package's, for `prepare_inputs` to save (nothing learned); None for any other config."""
    path = init_package(conf)
    if path is None:
        return None
    return checked_package(conf, path, data_inventory(train_dir), train_dir).frontend


def package_start(conf: dict[str, Any], train_dir: str | os.PathLike, inputs_dir: str | os.PathLike | None,
                  exp_dir: str | os.PathLike | None = None) -> PackageStart | None:
    """What a run whose `train.init` is a package starts from (None when it is not), checked before the run
    starts: `checked_package` (the training data's labels, no `embeddings:` section) and the frontends of
    `--exp` (a resumed run's) and `--inputs` (stage 3's), where there are some, must be the package's
    (`check_frontends`). Then `start_of` it."""
    path = init_package(conf)
    if path is None:
        return None
    fe = checked_package(conf, path, data_inventory(train_dir), train_dir).frontend
    check_frontends(path, fe, [Path(d) / "frontend" for d in (exp_dir, inputs_dir) if d])
    return start_of(path)


def start_of(path: Path) -> PackageStart:
    """The `PackageStart` of the package at `path` (`package_start` checks it against a run first): its frontend,
    its token table, and `copy_package` with its path bound (picklable, for DDP's processes)."""
    return PackageStart(path, open_package(path).frontend, token_table(path), functools.partial(copy_package, path))
