"""Warm start from a packed model (`train.init: model.pkt`): a run fine-tunes the network of a package, such as
the shipped `fast` one (punctkit/pretrained/fast.pkt), of which no torch checkpoint exists anywhere. The train layer
knows only the `PackageStart` (punctkit/train/warm_start.py) that `package_start` builds here and punctkit/fit.py
hands it, as it hands it decoding's validation; stage 3 (`punctkit prepare-inputs`) gets `package_frontend`.

The weights are the initializers of the package's model.onnx (what `--onnx-only` packs and the shipped models
hold), for the model types in `PACKAGE_TYPES` (DRNN-LWMA; plm_tagger, float or int8: `plm_tensors`, checked by
`same_network`); another type is a one-line error. The package is read
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

PACKAGE_TYPES = ("drnn_lwma", "plm_tagger")  # the model types whose ONNX graph a run can start from
QUANTIZED = "_quantized"  # onnxruntime's quantizer names a weight W's int8 copy W_quantized, W_scale, W_zero_point
INT8_AGREEMENT = 0.8  # an int8 package: the least share of words whose arg-max label the copy gives as its graph
INT8_MEAN_DIFF = 0.15  # and the largest mean total variation of their label distributions (`same_distributions`)


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
    """The package's model.onnx as an onnx ModelProto."""
    try:
        import onnx
    except ImportError:
        raise PunctkitError("train.init of a packed model reads its ONNX graph: pip install 'punctkit[onnx]'") \
            from None
    return onnx.load_from_string(open_package(path).onnx)


def quantized_weights(proto: Any) -> list[str]:
    """The names of the graph's int8/uint8 initializers (a graph `punctkit pack --int8` wrote), in order."""
    from onnx import TensorProto

    return [i.name for i in proto.graph.initializer if i.data_type in (TensorProto.INT8, TensorProto.UINT8)]


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
    from punctkit.models.ff2 import PlmTagger

    where = f"train.init: {path}"
    if not isinstance(model, (DRNNLWMA, PlmTagger)):
        raise PunctkitError(f"{where}: a package can warm-start {', '.join(PACKAGE_TYPES)} models only, not "
                            f"{getattr(model, 'type_name', type(model).__name__)}")
    theirs = open_package(path).conf["model"].get("type")
    if model.type_name != theirs:
        raise PunctkitError(f"{where}: its network is a {theirs}, this model a {model.type_name}: build the model "
                            f"with the package's config.yaml model: section")
    proto = graph_of(path)
    if isinstance(model, PlmTagger):
        return plm_tensors(model, proto, where)
    quantized = quantized_weights(proto)
    if quantized:
        raise PunctkitError(f"{where}: its graph is quantized (int8 {quantized[0]}, ...): start a {theirs} from a "
                            f"package packed without --int8")
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


def dequantized(q: np.ndarray, scale: np.ndarray, zero_point: np.ndarray, axis: int = -1) -> np.ndarray:
    """The float value `(q - zero_point) * scale` of an int8/uint8 tensor; a scale and zero point with one value
    per slice of `axis` (per channel) apply along it, a scalar pair to all of it."""
    scale, zero_point = np.asarray(scale, np.float32), np.asarray(zero_point).astype(np.float32)
    if scale.ndim:
        shape = [1] * q.ndim
        shape[axis] = -1
        scale, zero_point = scale.reshape(shape), zero_point.reshape(shape)
    return (q.astype(np.float32) - zero_point) * scale


def _torch_name(name: str, own: set[str]) -> str | None:
    """The state-dict name an initializer is named after (the exporters name a parameter `m.` + its name, the
    `m` of punctkit/onnx.py's wrapper; the quantizer adds `_quantized`), else None."""
    name = name[:-len(QUANTIZED)] if name.endswith(QUANTIZED) else name
    for n in (name, name[2:] if name.startswith("m.") else None):
        if n in own:
            return n
    return None


def _quantized_value(name: str, arrays: dict[str, np.ndarray], zero_point: str | None, where: str) -> np.ndarray:
    """The float value of int8 initializer `name` (`W_quantized`, with its `W_scale` and `W_zero_point`: per
    output column of a MatMulInteger's B), checked to be the zero point its node reads (`zero_point`, when given)."""
    base = name[:-len(QUANTIZED)]
    scale, zp = f"{base}_scale", f"{base}_zero_point"
    if not name.endswith(QUANTIZED) or scale not in arrays or zp not in arrays or zero_point not in (None, zp):
        raise PunctkitError(f"{where}: its int8 weight {name} has no {scale} and {zp} beside it (not a graph "
                            f"`punctkit pack --int8` wrote)")
    return dequantized(arrays[name], arrays[scale], arrays[zp])


def plm_tensors(model: "torch.nn.Module", proto: Any, where: str) -> list[Bound]:
    """Every tensor of `model` (a plm_tagger) that the package's graph (float, or int8 as `pack --int8` writes it)
    holds. The exporters keep a parameter's name where the graph reads it as it is (`m.` + its state-dict name:
    tables, biases, layer norms); an int8 one is read `(q - zero_point) * scale` (`dequantized`). The rest are
    bound by the nodes that read them:

    - a MatMul (or int8 MatMulInteger) weight B [in, out] is nn.Linear's weight transposed, and which Linear's
      says the bias its product is added to (through the Cast and Mul of an int8 product's scales);
    - a grown layer's gate (punctkit/models/plm_grow.py: out = x + (GATE_SCALE g) (layer(x) - x)) is folded into
      one constant GATE_SCALE g: the Mul of a constant and a Sub whose product is added to the Sub's second
      input; these, in graph order, are the grown layers' gates in theirs.

    A float initializer named after a tensor this model lacks (another depth, a grown layer more) is a one-line
    error."""
    from punctkit.models.plm_grow import GATE_SCALE, GatedLayer

    arrays = _arrays(proto)
    own = model.state_dict()
    names = set(own)
    made = {out: n for n in proto.graph.node for out in n.output}
    consumers: dict[str, list[Any]] = {}
    for node in proto.graph.node:
        for x in node.input:
            consumers.setdefault(x, []).append(node)
    out: dict[str, Bound] = {}

    def bind(b: Bound) -> None:
        if b.name in out:
            raise PunctkitError(f"{where}: {b.name} is read twice in its graph ({out[b.name].source}, {b.source})")
        out[b.name] = b

    matmul_weights = {n.input[1] for n in proto.graph.node if n.op_type in ("MatMul", "MatMulInteger")}
    for name, value in arrays.items():
        target = _torch_name(name, names)
        if name in matmul_weights or name.endswith(("_scale", "_zero_point")):
            continue
        if target is None:
            if name.startswith("m.") and (value.dtype.kind == "f" or name.endswith(QUANTIZED)):
                raise PunctkitError(f"{where}: its graph holds {name[2:]}, which this model has not: build the "
                                    f"model with the package's config.yaml model: section")
            continue
        if name.endswith(QUANTIZED):
            value = _quantized_value(name, arrays, None, where)
        bind(Bound(target, value, f"initializer {name}"))
    for node in proto.graph.node:
        if node.op_type in ("MatMul", "MatMulInteger") and node.input[1] in arrays:
            prefix = _bias_of(node, arrays, consumers, names)
            if prefix is None:
                raise PunctkitError(f"{where}: {node.op_type} {node.name} adds no bias named after a layer of this "
                                    f"model (not a plm_tagger graph `punctkit pack` wrote)")
            b = node.input[1]
            value = arrays[b] if node.op_type == "MatMul" else \
                _quantized_value(b, arrays, node.input[3] if len(node.input) > 3 else None, where)
            bind(Bound(f"{prefix}.weight", value.T, f"{node.op_type} {node.name}"))
    gated = [n for n, m in model.named_modules() if isinstance(m, GatedLayer) and f"{n}.gate" not in out]
    gates = [n for n in proto.graph.node if n.op_type == "Mul" and _gate_constant(n, arrays, made, consumers)]
    if len(gates) != len(gated):
        raise PunctkitError(f"{where}: its graph has {len(gates)} gated grown layers, this model {len(gated)}: "
                            f"build it with the package's config.yaml model: section")
    for layer, node in zip(gated, gates):
        bind(Bound(f"{layer}.gate", arrays[_gate_constant(node, arrays, made, consumers)] / GATE_SCALE,
                   f"Mul {node.name}"))
    return list(out.values())


def _bias_of(node: Any, arrays: dict[str, np.ndarray], consumers: dict[str, list[Any]],
             names: set[str]) -> str | None:
    """The module whose bias the product of MatMul `node` is added to (`x.bias` -> `x`), following its output
    through Cast and Mul nodes (an int8 product's scaling), else None."""
    frontier, seen = [node.output[0]], 0
    while frontier and seen < 8:
        value = frontier.pop(0)
        for n in consumers.get(value, []):
            seen += 1
            if n.op_type == "Add":
                bias = [t for x in n.input if x in arrays and (t := _torch_name(x, names)) and t.endswith(".bias")]
                if len(bias) == 1:
                    return bias[0][:-len(".bias")]
            elif n.op_type in ("Cast", "Mul"):
                frontier.append(n.output[0])
    return None


def _gate_constant(node: Any, arrays: dict[str, np.ndarray], made: dict[str, Any],
                   consumers: dict[str, list[Any]]) -> str | None:
    """The folded gate constant of Mul `node` when it is a grown layer's gate (`plm_tensors`), else None."""
    for c, d in ((node.input[0], node.input[1]), (node.input[1], node.input[0])):
        sub = made.get(d)
        if c in arrays and arrays[c].ndim == 1 and arrays[c].dtype.kind == "f" and sub is not None \
                and sub.op_type == "Sub" and any(n.op_type == "Add" and sub.input[1] in n.input
                                                 for n in consumers.get(node.output[0], [])):
            return c
    return None


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
    check = "" if keys is not None else f"; {same_network(model, path)}"
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


def same_network(model: "torch.nn.Module", path: Path) -> str:
    """Check that `model` computes the package's network once its weights are copied (a one-line error when not),
    and say how closely: a float graph by its logits (`same_logits`), an int8 one by its label distributions
    (`same_distributions`)."""
    if quantized_weights(graph_of(path)):
        agree, diff = same_distributions(model, path)
        return f"labels as its int8 graph's on {100 * agree:.1f} % of the check's words (mean variation {diff:.2g})"
    return f"logits within {same_logits(model, path):.1g} of its graph's"


def graph_tagger(path: Path) -> Any:
    """onnxruntime on the package's graph (`unclipped`), one thread: what the checks compare a copy with."""
    from punctkit.onnx import OnnxTagger

    return OnnxTagger(unclipped(graph_of(path)), threads=1, source=f"{path} (model.onnx)")


def _both_logits(model: "torch.nn.Module", graph: Any, batch: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(model's, graph's) logits of `batch`: `model` in eval mode, `graph` a `graph_tagger`."""
    import torch

    from punctkit.onnx import INPUTS

    want = graph.logits(batch)
    device = next(model.parameters()).device
    training = model.training
    model.eval()
    try:
        with torch.no_grad():
            keys = (*INPUTS, *(k for k in getattr(model, "needs", ()) if k in batch and k not in INPUTS))  # boundaries
            got = model({k: torch.from_numpy(batch[k]).to(device) for k in keys}).float().cpu().numpy()
    finally:
        model.train(training)
    return got, want


def same_distributions(model: "torch.nn.Module", path: Path) -> tuple[float, float]:
    """(share of words with the same arg-max label, mean total variation |p - q|_1 / 2 of their label
    distributions) of `model` and the package's int8 graph over punctkit/onnx.py's check batch (71 words of
    random tokens), its windows one at a time (as the engine runs an int8 graph: its activations are quantized per
    batch). Dequantized weights are not the graph's arithmetic, which quantizes every activation too, so logits
    cannot match to `onnx.TOLERANCE`, and random tokens, far from any text, leave many words between two labels.
    Measured on the shipped accurate package (9 layers) and a copy of it: 91.5 % the same label, mean variation
    0.07 (on test2011's first 150 words 99.3 % and 0.013); wrong copies: the grown layers' gates shut 51 % and
    0.65, the query matrices transposed 34 % and 0.56. So the check asks at least INT8_AGREEMENT (80 %) and at most
    INT8_MEAN_DIFF (0.15), between the two with a margin each way; outside is a one-line error. A float package
    keeps the exact check (`same_logits`)."""
    from punctkit.decode.windows import softmax
    from punctkit.onnx import check_batch

    pkg = open_package(path)
    batch = check_batch(pkg.frontend.vocab_size, pkg.frontend.pad_id)
    graph = graph_tagger(path)
    same, diffs = 0, []
    for i in range(len(batch["tokens"])):
        row = {k: v[i:i + 1] for k, v in batch.items() if isinstance(v, np.ndarray) and len(v) == len(batch["tokens"])}
        got, want = _both_logits(model, graph, row)
        keep = row["word_mask"][0]
        p, q = softmax(got[0][keep]), softmax(want[0][keep])
        same += int((p.argmax(-1) == q.argmax(-1)).sum())
        diffs.append(np.abs(p - q).sum(-1) / 2)  # per word
    agree, diff = same / sum(len(d) for d in diffs), float(np.concatenate(diffs).mean())
    if agree < INT8_AGREEMENT or diff > INT8_MEAN_DIFF:
        raise PunctkitError(f"train.init: {path}: this model's labels are its int8 graph's on {100 * agree:.1f} % of "
                            f"the words (mean variation {diff:.2g}; at least {100 * INT8_AGREEMENT:g} % and at "
                            f"most {INT8_MEAN_DIFF} wanted) once its weights are copied: build the model with the "
                            f"package's config.yaml model: section")
    return agree, diff


def same_logits(model: "torch.nn.Module", path: Path) -> float:
    """The largest |logit difference| between `model` (in eval mode) and onnxruntime on the package's graph
    (`unclipped`) over punctkit/onnx.py's check batch; over `onnx.TOLERANCE` is a one-line error."""
    from punctkit.onnx import TOLERANCE, check_batch

    pkg = open_package(path)
    batch = check_batch(pkg.frontend.vocab_size, pkg.frontend.pad_id)
    got, want = _both_logits(model, graph_tagger(path), batch)
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
    pkg = open_package(path)
    table = token_table(path) if pkg.conf["model"].get("type") == "drnn_lwma" else None  # a plm's is its own
    return PackageStart(path, pkg.frontend, table, functools.partial(copy_package, path))
