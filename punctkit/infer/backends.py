"""How a model runs: a `Runner` per backend (torch: `TorchRunner`, its weights rebuilt, optionally int8;
onnxruntime: `OnnxRunner`, its graph; `SharedOnnxRunner`: an ensemble's ONNX members side by side over one
frontend's windows), the backend picked from the package and the options (`pick_backend`); and the decoding
options a package starts from (`decode_options`)."""
from __future__ import annotations

import abc
import io
import os
import sys
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from punctkit.data.streams import WindowDataset
from punctkit.decode.options import SEARCH_KEYS, DecodeOptions, resolve
from punctkit.decode.windows import WindowPrediction
from punctkit.files import PunctkitError
from punctkit.package import Package

if TYPE_CHECKING:  # torch is imported only by the torch backend, packing and quantization
    from punctkit.models.base import PunctModel
    from punctkit.onnx import OnnxTagger, OnnxTaggers

BACKENDS = ("auto", "torch", "onnx")
TEXT_KEYS = {"tokens", "token_mask", "word_pos", "word_mask", "labels"}  # what a words-only input feeds
# what else the engine feeds a package's model: the boundary id after each word (decode/boundary.py)
FED_KEYS = TEXT_KEYS | {"boundaries"}


def passive_waits() -> None:
    """Before torch loads: its OpenMP threads will sleep while they wait (OMP_WAIT_POLICY=PASSIVE,
    unless the environment sets a policy). OpenMP's default spins a waiting thread on its core
    between parallel regions: on cores that other processes hold, `punctuate` with the default
    threads ran up to 18 times slower than it does with the policy (RESULTS.md, "Load"). OpenMP
    reads the policy once, when torch loads; a command that may load torch calls this first."""
    if "torch" not in sys.modules:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def import_torch() -> Any:
    """torch, its OpenMP threads sleeping while they wait when this process loads it first (passive_waits)."""
    passive_waits()
    import torch

    return torch


def quantize_int8(model: "PunctModel") -> "PunctModel":
    """Dynamic int8 quantization for CPU inference: the weights of every Linear, GRU and LSTM
    layer stored as int8, activations quantized per batch (torch.ao.quantization). Linear
    weights get a scale per output channel: one scale per matrix cost MPNet's fine-tune 22.7
    points of F1 on 1,500 words of test2011 (49.7 against 72.4), one per channel 8.4 (RESULTS.md)."""
    import warnings

    torch = import_torch()
    from torch import nn
    from torch.ao.quantization import default_dynamic_qconfig, per_channel_dynamic_qconfig

    if any(isinstance(m, nn.TransformerEncoderLayer) for m in model.modules()):
        # torch's fused encoder fast path reads `linear.weight` tensors, which int8 layers do not
        # have (and it has no int8 kernels): this process runs such layers on the regular path
        torch.backends.mha.set_fastpath_enabled(False)
    with warnings.catch_warnings():  # torch announces a move of this API to torchao
        warnings.simplefilter("ignore")
        return torch.ao.quantization.quantize_dynamic(
            model, {nn.Linear: per_channel_dynamic_qconfig, nn.GRU: default_dynamic_qconfig,
                    nn.LSTM: default_dynamic_qconfig}, dtype=torch.qint8)


def torch_model(pkg: Package, ngpu: int = 0, threads: int = 0, quantize: bool = False) -> tuple["PunctModel", Any]:
    """The packed model rebuilt in torch (eval mode) and its device."""
    torch = import_torch()

    from punctkit.expdir import build_for, load_plain, pick_device

    if threads:
        torch.set_num_threads(int(threads))

    state = load_plain(io.BytesIO(pkg.weights), f"{pkg.path} (model.pt)")
    if not isinstance(state, dict):
        raise PunctkitError(f"{pkg.path}: corrupt packed model (model.pt is not a state dict)")
    model = build_for(pkg.conf, state, f"{pkg.path}: config.yaml", "model.pt",
                      "the package was edited or is corrupt: pack it again")  # checked before it is built
    try:
        model.load_state_dict(state)
    except RuntimeError as e:
        raise PunctkitError(f"{pkg.path}: weights do not match the packed config "
                            f"({str(e).splitlines()[0][:100]})") from None
    device = pick_device(ngpu)
    if quantize:
        if device.type != "cpu":
            raise PunctkitError("--quantize is for CPU inference (int8 kernels); drop it or --ngpu")
        model = quantize_int8(model)
    return model.to(device).eval(), device


def decode_options(conf: dict[str, Any], batch_size: int | None = None, beam: int | None = None,
                   step: int | None = None) -> DecodeOptions:
    """A model's `decode:` settings (a package's packed config, an experiment's config) with punctuate's
    options over them."""
    trained = {k: v for k, v in conf["decode"].items() if k in SEARCH_KEYS}
    # punctuate's own default batch: 16 windows at most (of 1-128, the fastest for both shipped models on
    # 2 cores: recipes/ted/RESULTS.md); an int8 graph runs one window at a time (package_runner)
    batch_size = batch_size or min(int(trained.get("batch_size", 32)), 16)
    return resolve({"step": step, "beam": beam, "batch_size": batch_size}, trained)


def pick_backend(pkg: Package, backend: str, ngpu: int, quantize: bool) -> str:
    """`auto`: onnx when the package has model.onnx, onnxruntime is installed and neither a GPU nor
    torch's int8 quantization is asked for; else torch."""
    if backend not in BACKENDS:
        raise PunctkitError(f"unknown backend '{backend}' (known: {', '.join(BACKENDS)})")
    if backend == "onnx":
        if pkg.onnx is None:
            raise PunctkitError(f"{pkg.path}: has no ONNX graph: pack it with `punctkit pack --onnx`")
        if ngpu or quantize:
            raise PunctkitError("--backend onnx runs on the CPU without --quantize (int8 is torch's)")
        return "onnx"
    if backend == "auto" and pkg.onnx is not None and not ngpu and not quantize:
        import importlib.util

        if importlib.util.find_spec("onnxruntime") is not None:
            return "onnx"
    if pkg.weights_member is None:
        raise PunctkitError(f"{pkg.path}: holds the ONNX graph only (packed with --onnx-only): it runs with "
                            f"onnxruntime on the CPU (--backend onnx or auto, without --ngpu/--quantize; "
                            f"pip install onnxruntime)")
    return "torch"


class Runner(abc.ABC):
    """How a model's windows are labelled: `predict` gives every window of a dataset its n-best label ids and
    the 1-best's distributions (decode/windows.py: WindowPrediction). Each runner has its `name` (the backend:
    torch, onnx) and its torch `model` (None with onnx: what it is, `seq2seq`, decides how it streams).
    `reads_boundaries`: the model reads the boundary id after each word (a dataset's windows then carry
    `boundaries`: infer/scorers.py)."""

    name: str
    model: Any

    @property
    def reads_boundaries(self) -> bool:
        return False

    @abc.abstractmethod
    def predict(self, dataset: WindowDataset) -> list[WindowPrediction]:
        """Every window of `dataset` labelled."""


@dataclass
class TorchRunner(Runner):
    """A torch model (eval mode) on `device`: taggers' arg-max, encoder-decoders' search (decode/decoder.py);
    `show`: a progress bar over the batches."""

    model: PunctModel
    device: Any
    batch_size: int
    beam: int = 1
    nbest: int = 1
    pad_id: int = 0
    show: bool = False
    name: str = "torch"

    @property
    def reads_boundaries(self) -> bool:
        return "boundaries" in self.model.needs

    def predict(self, dataset: WindowDataset) -> list[WindowPrediction]:
        from punctkit.decode.decoder import predict

        return predict(self.model, dataset, self.batch_size, self.device, self.beam, self.nbest, self.pad_id,
                       self.show)


@dataclass
class OnnxRunner(Runner):
    """A tagger's graph in onnxruntime (punctkit/onnx.py: OnnxTagger); `show`: a progress bar."""

    tagger: OnnxTagger
    batch_size: int
    pad_id: int = 0
    show: bool = False
    name: str = "onnx"
    model: Any = None

    @property
    def reads_boundaries(self) -> bool:
        return self.tagger.reads_boundaries

    def predict(self, dataset: WindowDataset) -> list[WindowPrediction]:
        return self.tagger.predict(dataset, self.batch_size, self.pad_id, self.show)


@dataclass
class SharedOnnxRunner(Runner):
    """An ensemble's ONNX members over one frontend and one window plan, run side by side on every batch: the
    weighted average of their distributions (punctkit/onnx.py: OnnxTaggers)."""

    taggers: OnnxTaggers
    batch_size: int
    pad_id: int = 0
    name: str = "onnx"
    model: Any = None

    @property
    def reads_boundaries(self) -> bool:
        return any(t.reads_boundaries for t in self.taggers.taggers)

    def predict(self, dataset: WindowDataset) -> list[WindowPrediction]:
        return self.taggers.predict(dataset, self.batch_size, self.pad_id)


def package_runner(pkg: Package, opts: DecodeOptions, *, ngpu: int = 0, threads: int = 0, quantize: bool = False,
                   backend: str = "auto", show: bool = False) -> tuple[Runner, DecodeOptions]:
    """The runner of a read package under `backend` (`pick_backend`), and its decoding options `opts` as it runs
    them (an int8 model labels one window at a time: a window's labels its own, whatever runs beside it)."""
    pad_id = pkg.frontend.pad_id
    if pick_backend(pkg, backend, ngpu, quantize) == "onnx":
        from punctkit.onnx import OnnxTagger, quantized_per_batch

        if quantized_per_batch(pkg.onnx):
            opts = replace(opts, batch_size=1)
        return OnnxRunner(OnnxTagger(pkg.onnx, threads, f"{pkg.path} (model.onnx)"), opts.batch_size, pad_id,
                          show), opts
    model, device = torch_model(pkg, ngpu, threads, quantize)  # first: it imports torch (import_torch)
    if quantize:  # torch's dynamic int8 quantizes activations per batch too
        opts = replace(opts, batch_size=1)
    missing = set(model.needs) - FED_KEYS
    if missing:
        raise PunctkitError(f"{pkg.path}: model {pkg.conf['model'].get('type')} needs "
                            f"{', '.join(sorted(missing))}; a package is fed words only: decode its "
                            f"experiment dir (punctkit decode EXP DATA OUT) for its audio")
    return TorchRunner(model, device, opts.batch_size, opts.beam, 1, pad_id, show), opts
