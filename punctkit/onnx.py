"""ONNX graphs of tagger models (`punctkit pack --onnx`) and their inference with onnxruntime.

A packed model may carry `model.onnx` beside its torch weights: the tagger's
forward pass from the batch keys `tokens, token_mask, word_pos, word_mask`
(punctkit/models/base.py) to per-word logits, batch and lengths dynamic.
`OnnxTagger` runs it without importing torch, which is most of the start-up
time of `punctkit punctuate` on a short input. A model that reads what follows each
word (`boundary_input`: batch key `boundaries`, decode/boundary.py) has a fifth input,
`boundaries` (batch, words) int64. Export tries torch's export-based
exporter first; models it cannot trace (DRNN-LWMA's packed sequences) go through
the TorchScript exporter, which turns each pack/unpack pair into a GRU node with
`sequence_lens`, so padded batches stay exact. Every graph is checked against
torch on a batch of another shape before it is kept.

Needs `pip install 'punctkit[onnx]'` (onnxruntime; onnx and onnxscript for the export).
"""
from __future__ import annotations

import contextlib
import io
import logging
import os
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from punctkit.data.streams import WindowDataset, bucket_batches, pad_batch
from punctkit.decode.windows import WindowPrediction, softmax, tagger_predicted
from punctkit.files import PunctkitError
from punctkit.progress import progress

if TYPE_CHECKING:
    from punctkit.models.base import PunctModel

INPUTS = ("tokens", "token_mask", "word_pos", "word_mask")
BOUNDARIES = "boundaries"  # the input of a model that reads the boundary after each word (zeros: nothing known)
OPSET = 17
TOLERANCE = 1e-3  # largest |logit difference| accepted between torch and the exported graph
GRU_CLIP = 10.0  # GRU gate inputs clipped to +-this in exported graphs (`clipped_grus`)
CLIP_TOLERANCE = 1e-3  # largest |label probability difference| accepted from that clipping
SPIN_KEYS = ("session.intra_op.allow_spinning", "session.inter_op.allow_spinning")
# onnxruntime (1.2x and later) writes a telemetry database and a device id under
# ~/.cache/Microsoft/DeveloperTools/.onnxruntime when it is imported, which would make `punctuate` and
# `serve` write outside their outputs; ORT_DISABLE_TELEMETRY (read by its library at load) stops that.
# Set before any import of it in this process (this module's, or torch's exporter's); a value the
# environment gives (ORT_DISABLE_TELEMETRY=0: telemetry on) wins.
if not os.environ.get("ORT_DISABLE_TELEMETRY"):
    os.environ["ORT_DISABLE_TELEMETRY"] = "1"


def onnxruntime_module() -> Any:
    """The onnxruntime module, or a one-line error naming the extra to install."""
    try:
        import onnxruntime
    except ImportError:
        raise PunctkitError("ONNX inference needs onnxruntime: pip install 'punctkit[onnx]'") from None
    return onnxruntime


def can_export(model: "PunctModel") -> str | None:
    """None when `model` can be exported, else why not."""
    if model.seq2seq:
        return f"{type(model).__name__} is an encoder-decoder (beam search runs in torch)"
    extra = set(model.needs) - set(INPUTS) - {"labels", BOUNDARIES}
    if extra:
        return f"{type(model).__name__} needs {', '.join(sorted(extra))} (ONNX graphs take words only)"
    return None


def graph_inputs(model: "PunctModel") -> list[str]:
    """The inputs of `model`'s graph: INPUTS, and `boundaries` where it reads them."""
    return [*INPUTS, BOUNDARIES] if BOUNDARIES in model.needs else list(INPUTS)


def _sample_batch(vocab_size: int, pad_id: int, lengths: tuple[int, ...], seed: int) -> dict[str, np.ndarray]:
    """Windows of random tokens with these lengths (shorter ones padded), and random boundary ids of their
    words (`boundaries`, drawn after the tokens: the tokens are those of a batch without them)."""
    from punctkit.data.boundaries import N_BOUNDARIES

    rng = np.random.default_rng(seed)
    examples = []
    for i, n in enumerate(lengths):
        ids = rng.integers(0, vocab_size, size=n)
        ids[ids == pad_id] = (pad_id + 1) % vocab_size
        examples.append({"tokens": ids.tolist(), "word_pos": list(range(n)), "labels": [0] * n, "index": i})
    for e in examples:
        e[BOUNDARIES] = rng.integers(0, N_BOUNDARIES, size=len(e["word_pos"]))
    return pad_batch(examples, pad_id)


def _export(net: Any, args: tuple, dynamo: bool, inputs: list[str]) -> bytes:
    """The graph of `net` (whose arguments are `inputs`) from torch's export-based exporter (`dynamo`) or its
    TorchScript one."""
    import torch

    names = {"input_names": list(inputs), "output_names": ["logits"]}
    if dynamo:
        dims = {"batch": torch.export.Dim("batch"), "tokens": torch.export.Dim("tokens"),
                "words": torch.export.Dim("words")}
        shapes = {k: {0: dims["batch"], 1: dims["tokens" if k.startswith("token") else "words"]} for k in inputs}
        with contextlib.redirect_stdout(io.StringIO()):  # the exporter's progress lines
            prog = torch.onnx.export(net, args, dynamic_shapes=shapes, dynamo=True, verbose=False, **names)
        return prog.model_proto.SerializeToString()
    axes = {"tokens": {0: "batch", 1: "tokens"}, "token_mask": {0: "batch", 1: "tokens"},
            "word_pos": {0: "batch", 1: "words"}, "word_mask": {0: "batch", 1: "words"},
            "logits": {0: "batch", 1: "words"}}
    if BOUNDARIES in inputs:
        axes[BOUNDARIES] = {0: "batch", 1: "words"}
    buf = io.BytesIO()
    torch.onnx.export(net, args, buf, dynamic_axes=axes, opset_version=OPSET, dynamo=False, **names)
    return buf.getvalue()


def clipped_grus(graph: bytes) -> bytes:
    """The graph with each GRU node's gate inputs clipped to [-GRU_CLIP, GRU_CLIP] (ONNX's `clip`
    attribute), when it has GRU nodes.

    onnxruntime's CPU GRU clips a tanh input to +-10 and a sigmoid input to +-20 one value at a
    time with branches (rnn_helpers.cc, `clip_for_tanh_in_place`). A trained model whose gates
    saturate (DRNN-LWMA after 20 passes: candidate-gate inputs past +-10 in no regular pattern)
    pays for the branches' mispredictions: its GRU nodes ran 8 % slower than an earlier
    model's of the same shape. `clip` is applied first, without branches, so those branches
    are never taken. The tanh gate is unchanged (onnxruntime clipped it at 10 already); a
    sigmoid gate's input beyond +-10 moves its value by at most 4.6e-5 (1 - sigmoid(10)):
    `export_onnx` keeps the clipped graph when its label probabilities stay within
    CLIP_TOLERANCE of the exact graph's (the shipped DRNN-LWMA: the same labels on all 319,866
    words of its five valid and test sets)."""
    if b"GRU" not in graph:
        return graph
    import onnx
    from onnx import helper

    proto = onnx.load_from_string(graph)
    grus = [n for n in proto.graph.node if n.op_type == "GRU"]
    if not grus:
        return graph
    for node in grus:
        kept = [a for a in node.attribute if a.name != "clip"]
        del node.attribute[:]
        node.attribute.extend(kept + [helper.make_attribute("clip", GRU_CLIP)])
    return proto.SerializeToString()


def folded_projections(model: "PunctModel") -> "PunctModel":
    """A copy of `model` in which every pre-trained embedding table with a projection is replaced
    by the projected table (vocab, d_model): proj(E[x]) = (proj(E))[x] for every token, so the
    graph looks up d_model-wide rows instead of multiplying each token's wider vector (the
    384-d pooled MiniLM vectors: a third of the graph's size and no matmul per token)."""
    import copy

    import torch

    from punctkit.nn.embedding import InputEmbedding

    model = copy.deepcopy(model).eval()
    for m in model.modules():
        if isinstance(m, InputEmbedding) and m.proj is not None:
            with torch.no_grad():
                table = m.proj(m.embed.weight)  # (vocab, d_model)
            m.embed = torch.nn.Embedding.from_pretrained(table, freeze=True)
            m.proj = None
    return model


def export_onnx(model: "PunctModel", vocab_size: int, pad_id: int) -> bytes:
    """The ONNX graph of a tagger (eval mode, CPU), checked against torch on a padded batch of
    another shape than the export's example.

    torch's export-based exporter is tried first; models it cannot trace (DRNN-LWMA's
    packed sequences) go through the TorchScript exporter, which maps them to GRU nodes.
    """
    import torch

    why = can_export(model)
    if why:
        raise PunctkitError(f"cannot export to ONNX: {why}")

    inputs = graph_inputs(model)

    class Forward(torch.nn.Module):
        def __init__(self, m: torch.nn.Module) -> None:
            super().__init__()
            self.m = m

        def forward(self, tokens: torch.Tensor, token_mask: torch.Tensor, word_pos: torch.Tensor,
                    word_mask: torch.Tensor) -> torch.Tensor:
            return self.m({"tokens": tokens, "token_mask": token_mask, "word_pos": word_pos,
                           "word_mask": word_mask}).float()

    class ForwardBoundaries(torch.nn.Module):  # the fifth input: a model's `boundaries`
        def __init__(self, m: torch.nn.Module) -> None:
            super().__init__()
            self.m = m

        def forward(self, tokens: torch.Tensor, token_mask: torch.Tensor, word_pos: torch.Tensor,
                    word_mask: torch.Tensor, boundaries: torch.Tensor) -> torch.Tensor:
            return self.m({"tokens": tokens, "token_mask": token_mask, "word_pos": word_pos,
                           "word_mask": word_mask, BOUNDARIES: boundaries}).float()

    wrap = ForwardBoundaries if BOUNDARIES in inputs else Forward
    model = model.cpu()
    net = wrap(folded_projections(model)).eval()  # a new module is in training mode: dropout would be on
    sample = _sample_batch(vocab_size, pad_id, (24, 17), seed=0)
    check = check_batch(vocab_size, pad_id)
    args = tuple(torch.from_numpy(sample[k]) for k in inputs)
    with torch.no_grad():  # the model as trained, unfolded: the check covers the folding too
        want = wrap(model).eval()(*(torch.from_numpy(check[k]) for k in inputs)).numpy()
    errors = []
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)  # e.g. "torchvision is not installed"
    for dynamo in (True, False):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the exporters' deprecation and GRU batch-size notices
            try:
                graph = _export(net, args, dynamo, inputs)
            except Exception as e:  # the exporters raise many types; the first line says what failed
                errors.append(str(e).strip().splitlines()[0][:160])
                continue
        got = OnnxTagger(graph, threads=1).logits(check)
        diff = float(np.abs(got - want)[check["word_mask"]].max())
        if diff <= TOLERANCE:
            return same_logits_rewrite(faster_equivalent(graph, check, got), check)
        errors.append(f"the graph differs from torch (max |logit difference| {diff:.2g} > {TOLERANCE})")
    raise PunctkitError(f"ONNX export of {type(model).__name__} failed: {'; '.join(errors)}")


def faster_equivalent(graph: bytes, check: dict[str, np.ndarray], logits: np.ndarray) -> bytes:
    """`clipped_grus(graph)` when its label probabilities on `check` stay within CLIP_TOLERANCE of
    `logits`' (the exact graph's), else `graph`."""
    fast = clipped_grus(graph)
    if fast is graph:
        return graph
    got = OnnxTagger(fast, threads=1).logits(check)
    diff = float(np.abs(softmax(got) - softmax(logits))[check["word_mask"]].max())
    return fast if diff <= CLIP_TOLERANCE else graph


def same_logits_rewrite(graph: bytes, check: dict[str, np.ndarray]) -> bytes:
    """`without_nan_guards(graph)` when it gives `graph`'s logits on the padded batch `check`
    (to 1e-6), else `graph`: the rewrites `pack` applies to a graph that passed its checks, and
    `pack PACKAGE` to a packed one."""
    fast = without_nan_guards(graph)
    if fast is graph:
        return graph
    want, got = OnnxTagger(graph, threads=1).logits(check), OnnxTagger(fast, threads=1).logits(check)
    return fast if float(np.abs(got - want)[check["word_mask"]].max()) <= 1e-6 else graph


def check_batch(vocab_size: int, pad_id: int) -> dict[str, np.ndarray]:
    """The padded batch (three windows, one shorter) a graph is checked on."""
    return _sample_batch(vocab_size, pad_id, (9, 31, 31), seed=1)


def without_nan_guards(graph: bytes) -> bytes:
    """The graph without the NaN guards torch's exporter writes after an attention softmax
    (`Where(IsNaN(p), 0, p)`, p = Softmax(scores + mask)), where the mask is a Where between two
    finite constants (the transformers' `0` and float32's lowest): a row whose every key is masked
    is then uniform, not NaN, so for finite scores the guard never changes a value and the logits
    stay the same bit for bit. onnxruntime's Where over (batch, heads, tokens, tokens) took 12-13 %
    of the nine-layer tagger's time on an AVX2 EPYC (recipes/ted/RESULTS.md, "The attention's NaN
    guards"). A guard of another shape (an infinite mask, a softmax of anything else) is kept, and so is
    every guard where the `onnx` package is not installed (`pack PACKAGE` with onnxruntime alone)."""
    if b"IsNaN" not in graph:
        return graph
    try:
        import onnx
        from onnx import numpy_helper
    except ImportError:
        return graph

    proto = onnx.load_from_string(graph)
    nodes = proto.graph.node
    made = {out: n for n in nodes for out in n.output}
    # the scalar constants (initializers and Constant nodes), as tensors: only these are read
    consts = {i.name: i for i in proto.graph.initializer if int(np.prod(i.dims)) == 1}
    for n in nodes:
        if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value":
            consts[n.output[0]] = n.attribute[0].t

    def finite(name: str) -> bool:
        t = consts.get(name)
        return t is not None and int(np.prod(t.dims)) == 1 and bool(np.isfinite(numpy_helper.to_array(t)).all())

    def finite_mask(name: str) -> bool:  # Where(keep, a, b) with a and b finite scalars
        n = made.get(name)
        return n is not None and n.op_type == "Where" and finite(n.input[1]) and finite(n.input[2])

    def guarded_softmax(isnan: Any) -> bool:
        s = made.get(isnan.input[0])
        add = made.get(s.input[0]) if s is not None and s.op_type == "Softmax" else None
        return add is not None and add.op_type == "Add" and any(finite_mask(i) for i in add.input)

    unguarded: dict[str, str] = {}  # a guard's output -> the softmax it guards
    for n in nodes:
        if n.op_type != "Where" or n.input[0] not in made or not finite(n.input[1]):
            continue
        isnan = made[n.input[0]]
        if isnan.op_type == "IsNaN" and isnan.input[0] == n.input[2] and guarded_softmax(isnan):
            unguarded[n.output[0]] = n.input[2]
    outputs = {o.name for o in proto.graph.output}
    if not unguarded or outputs & set(unguarded):  # none, or a guard's value is the graph's output
        return graph
    for n in nodes:
        for j, name in enumerate(n.input):
            if name in unguarded:
                n.input[j] = unguarded[name]
    kept = [n for n in nodes if n.output[0] not in unguarded]  # the guards' Where nodes go
    used = {i for n in kept for i in n.input} | outputs
    kept = [n for n in kept if not (n.op_type == "IsNaN" and n.output[0] not in used)]
    del proto.graph.node[:]
    proto.graph.node.extend(kept)
    return proto.SerializeToString()


def quantize_graph(graph: bytes) -> bytes:
    """The graph with int8 weights (onnxruntime's dynamic quantization: MatMul and similar nodes
    store int8 weights, a scale per output channel; activations are quantized per batch at run
    time). One scale per matrix cost the MPNet fine-tune 2.9 points on test2011, one per channel
    1.2 (RESULTS.md). The weights use 7 bits (`reduce_range`): on CPUs without VNNI (AVX2 only)
    onnxruntime multiplies u8 activations by s8 weights into saturating int16 pair sums, which
    full-range weights overflow (an MPNet package: test2011 F1 0.1 on an AVX2 EPYC, 70.4 with
    7-bit weights against 70.8 in float)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory(prefix="punctkit-onnx-") as tmp:
        src, dst = Path(tmp) / "model.onnx", Path(tmp) / "model.int8.onnx"
        src.write_bytes(graph)
        root = logging.getLogger()
        level = root.level
        root.setLevel(logging.ERROR)  # the quantizer's advice to pre-process the graph first
        try:
            quantize_dynamic(src, dst, weight_type=QuantType.QInt8, per_channel=True, reduce_range=True)
        finally:
            root.setLevel(level)
        return dst.read_bytes()


def quantized_per_batch(graph: bytes) -> bool:
    """Whether a graph quantizes its activations at run time over each batch (`quantize_graph`'s
    int8 graphs: DynamicQuantizeLinear nodes), so that a window's labels depend on the windows
    batched with it; the engine then runs one window at a time (infer/engine.py)."""
    return b"DynamicQuantizeLinear" in graph


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask: taskset, cpusets), else every CPU."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # no affinity masks (macOS, Windows)
        return os.cpu_count() or 1


@dataclass(frozen=True)
class CpuSample:
    """The clock ticks of the usable CPUs since boot (/proc/stat: busy and in all) and this process's own CPU
    time in ticks (every thread), at one moment (`time.monotonic()`)."""

    when: float
    busy: int
    total: int
    own: float


def cpu_sample(stat: str | None = None) -> CpuSample | None:
    """A `CpuSample` now, from `stat` (the text of /proc/stat; default: read it), over the CPUs of the
    affinity mask; None where there is no /proc/stat (macOS, Windows) or it cannot be read."""
    try:
        text = Path("/proc/stat").read_text() if stat is None else stat
        cpus = os.sched_getaffinity(0)
        tick = os.sysconf("SC_CLK_TCK")
    except (OSError, AttributeError, ValueError):
        return None
    busy = total = 0
    for line in text.splitlines():
        name, _, rest = line.partition(" ")
        if not (name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cpus):
            continue
        # user nice system idle iowait irq softirq steal (guest time is counted in user already)
        ticks = [int(x) for x in rest.split()[:8]]
        total += sum(ticks)
        busy += sum(ticks) - ticks[3] - ticks[4]
    times = os.times()
    return CpuSample(when=time.monotonic(), busy=busy, total=total, own=(times.user + times.system) * tick)


def free_cpus(before: CpuSample, after: CpuSample, usable: int) -> float:
    """How many of `usable` CPUs other processes left free between two samples: `usable` less their busy time
    (all busy ticks less this process's own) over the time that passed."""
    total = after.total - before.total
    if total <= 0:
        return float(usable)
    others = max(0.0, (after.busy - before.busy) - (after.own - before.own))
    return max(0.0, usable * (1.0 - others / total))


CPU_SAMPLE_SECONDS = 0.1  # the shortest look at the CPUs' load before `default_threads` chooses
CPU_SAMPLE_STALE = 5.0  # a first sample older than this is not the load now
_IMPORTED = cpu_sample()  # the first sample: a model's load runs between it and the thread choice


def recurrent_graph(graph: bytes) -> bool:
    """Whether a graph runs recurrent layers (GRU, LSTM or RNN nodes: DRNN-LWMA's), whose steps each end in a
    wait for every intra-op thread. Read from the serialized graph without the onnx package: a node's op_type is
    its field 4, a length-prefixed string (tag 0x22)."""
    return any(bytes([0x22, len(op)]) + op in graph for op in (b"GRU", b"LSTM", b"RNN"))


def default_threads(recurrent: bool = True) -> int:
    """The intra-op threads of `--threads 0`. A graph without recurrent layers (`recurrent_graph`): every usable
    CPU, busy or not (its large matrix products split well, and two threads beat one on cores that two busy
    loops hold: RESULTS.md, "Load"). A recurrent graph: one a CPU of this process's affinity mask that other
    processes leave free, at least one. The load is read from /proc/stat between this module's import and now (a model's
    load; at least `CPU_SAMPLE_SECONDS`, waited for when shorter; afresh when the import is older than
    `CPU_SAMPLE_STALE`), this process's own time left out. On idle
    cores every usable CPU (the fastest setting there); where other jobs hold the cores, fewer threads, down
    to one: a thread that shares its core with a busy neighbour stalls the others at every step (RESULTS.md,
    "Load"). Without /proc/stat, every usable CPU."""
    usable = usable_cpus()
    before = _IMPORTED
    if before is None or usable == 1 or not recurrent:
        return usable
    if time.monotonic() - before.when > CPU_SAMPLE_STALE:  # imported long ago (a service loading later): look anew
        before = cpu_sample() or before
    wait = CPU_SAMPLE_SECONDS - (time.monotonic() - before.when)
    if wait > 0:
        time.sleep(wait)
    after = cpu_sample()
    if after is None:
        return usable
    return max(1, min(usable, int(free_cpus(before, after, usable) + 0.5)))


def session_options(threads: int = 0, recurrent: bool = True) -> Any:
    """onnxruntime options for `threads` intra-op threads (0: `default_threads(recurrent)`: for a recurrent
    graph, the usable CPUs other processes leave free) whose pools never spin-wait.

    onnxruntime's own default (0) pins a thread to each physical core and lets threads that wait
    for work spin on their core: on cores that other processes hold, a spinning thread burns the
    time slice its partner needs, and a pinned one cannot move to a free core (RESULTS.md, "Load").
    A count given here pins nothing; waiting threads sleep (`SPIN_KEYS` off)."""
    opts = onnxruntime_module().SessionOptions()
    opts.intra_op_num_threads = int(threads) or default_threads(recurrent)
    opts.inter_op_num_threads = 1  # one operator at a time (sequential execution): no inter-op pool
    for key in SPIN_KEYS:
        opts.add_session_config_entry(key, "0")
    opts.log_severity_level = 4  # a graph that fails is our one-line error, not also onnxruntime's log line
    return opts


class OnnxTagger:
    """An exported tagger in an onnxruntime session (CPU; `session_options`)."""

    def __init__(self, graph: bytes, threads: int = 0, source: str = "model.onnx") -> None:
        ort = onnxruntime_module()
        opts = session_options(threads, recurrent=recurrent_graph(graph))
        try:
            self.session = ort.InferenceSession(graph, opts, providers=["CPUExecutionProvider"])
        except Exception as e:  # onnxruntime's own error types (InvalidGraph, Fail, ...)
            raise PunctkitError(f"{source}: does not load in onnxruntime ({str(e).strip().splitlines()[0][:160]})") \
                from None
        # inputs a model does not use (DRNN-LWMA's word_mask) are dropped from the graph
        self.inputs = [i.name for i in self.session.get_inputs()]

    @property
    def reads_boundaries(self) -> bool:
        """Whether the graph reads the boundary id after each word (input `boundaries`)."""
        return BOUNDARIES in self.inputs

    def logits(self, batch: dict[str, np.ndarray]) -> np.ndarray:
        """(B, W, n_labels) logits of a padded batch (data/streams.py: pad_batch); a batch without `boundaries`
        gives a graph that reads them zeros (nothing known)."""
        feed = {k: batch[k] for k in self.inputs if k != BOUNDARIES}
        if self.reads_boundaries:
            feed[BOUNDARIES] = batch[BOUNDARIES] if BOUNDARIES in batch else np.zeros_like(batch["word_pos"])
        return self.session.run(None, feed)[0]

    def predict(self, dataset: WindowDataset, batch_size: int = 64, pad_id: int = 0,
                show: bool = False) -> list[WindowPrediction]:
        """Arg-max label ids and their summed log-probability for every window (1-best), and each
        word's softmax (decode/windows.py: tagger_predicted, as torch); `show`: a progress bar."""
        return predict_windows(self.logits, dataset, batch_size, pad_id, show)


class OnnxTaggers:
    """Taggers that read the same tokens (one frontend), run side by side on every batch: the
    weighted average of their softmaxes, in `workers` threads (onnxruntime releases the GIL)."""

    def __init__(self, taggers: list[OnnxTagger], weights: list[float], workers: int = 1) -> None:
        self.taggers, self.weights = taggers, weights
        from concurrent.futures import ThreadPoolExecutor  # here: 3 ms of every start-up otherwise

        self.pool = ThreadPoolExecutor(workers, thread_name_prefix="punctkit-onnx") if workers > 1 else None

    def logits(self, batch: dict[str, np.ndarray]) -> np.ndarray:
        """(B, W, n_labels) log of the weighted average of the members' softmaxes: its softmax is that average."""
        run = self.pool.map if self.pool else map
        avg = sum(w * softmax(z) for w, z in zip(self.weights, run(lambda t: t.logits(batch), self.taggers)))
        with np.errstate(divide="ignore"):  # a label no member gives any mass: log 0 = -inf, softmax 0
            return np.log(avg)

    def predict(self, dataset: WindowDataset, batch_size: int = 64, pad_id: int = 0) -> list[WindowPrediction]:
        """As OnnxTagger.predict, for the averaged distributions."""
        return predict_windows(self.logits, dataset, batch_size, pad_id)


def predict_windows(logits: Callable[[dict[str, np.ndarray]], np.ndarray], dataset: WindowDataset,
                    batch_size: int, pad_id: int, show: bool = False) -> list[WindowPrediction]:
    """The 1-best of every window of `dataset` from a tagger's logits of each padded batch
    (`show`: a progress bar over the batches, as `punctkit decode` shows)."""
    lengths = [dataset.n_words(i) for i in range(len(dataset))]
    out = [WindowPrediction.empty() for _ in range(len(dataset))]
    for idx in progress(bucket_batches(lengths, batch_size, shuffle=False), show=show, desc="decode",
                        unit="batch", leave=False):
        batch = pad_batch([dataset[i] for i in idx], pad_id)
        preds = tagger_predicted(logits(batch), batch["word_mask"].sum(1).tolist())
        for b, i in enumerate(idx):
            out[i] = preds[b]
    return out
