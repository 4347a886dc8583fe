"""The inference engine: one model ready to label streams of words (ESPnet's `Speech2Text`).

    >>> from punctkit import Punctuator
    >>> Punctuator.load("model.pkt").punctuate("so i 'm here do you know why")

A `Punctuator` is built from a package (`load`, `from_package`: torch or onnxruntime) or
from an experiment (`from_experiment`: a checkpoint and decoding options, as `punctkit decode`
runs it). Whatever its source, `decode` is the one way it labels: the words a model reads for
the input words (decode/model_words.py), overlapping windows and each word's most central one
(decode/windows.py), the search (decode/search.py), and back to one label per input word. The
pipeline (infer/pipeline.py) and the applications (punctuate, decode, serve, stream) all label
through `Engine.decode`; `Ensemble` (infer/ensemble.py) is the same protocol over several models.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from punctkit.data.labels import LabelSet, get_inventory
from punctkit.data.streams import IGNORE, Extra, Stream
from punctkit.decode.model_words import ModelWords
from punctkit.decode.options import DecodeOptions
from punctkit.decode.windows import Predict, Predicted, decode_windows_rows
from punctkit.files import PunctkitError
from punctkit.infer.backends import TEXT_KEYS, decode_options, import_torch, pick_backend, torch_model
from punctkit.infer.pipeline import Labeller
from punctkit.package import EnsemblePackage, Package, read_package
from punctkit.pretrained import default_model
from punctkit.text.frontend import Frontend

if TYPE_CHECKING:
    from punctkit.infer.stream import PunctStream


@runtime_checkable
class Engine(Protocol):
    """What labels words: one model (`Punctuator`) or several (`Ensemble`)."""

    inventory: LabelSet       # the labels of `decode`'s distributions, in this order
    chunk_words: int          # words a long stream is decoded in at once (memory bound)

    @property
    def frontend(self) -> Frontend:
        """How words become tokens (an ensemble: its first member's; each member reads with its own)."""
        ...

    @property
    def grid(self) -> int:
        """Windows start on multiples of this (the step; an ensemble: a multiple of every member's)."""
        ...

    @property
    def reach(self) -> int:
        """The longest window: the context a segment of a long stream needs on each side."""
        ...

    @property
    def closes_streams(self) -> bool:
        """Whether a stream's last word ends a sentence (decode option `stream_end`; an ensemble:
        when every member's does)."""
        ...

    def decode(self, streams: list[Stream], extra: Extra | None = None) -> list[Predicted]:
        """Per stream: its n-best label ids (one per input word) and the 1-best's distributions
        (words x labels, inventory order). `extra`: the audio of a data directory's streams."""
        ...

    def streamable(self) -> "Punctuator":
        """The one model a `PunctStream` runs (an ensemble: its members as one tagger, else an error)."""
        ...


@dataclass
class Punctuator(Labeller):
    """A loaded model (torch or onnxruntime) with its frontend and decoding options."""

    predict: Predict              # n-best label ids and distributions of every window of a WindowDataset
    frontend: Frontend
    inventory: LabelSet
    conf: dict[str, Any]
    manifest: dict[str, Any] = field(default_factory=dict)
    backend: str = "torch"
    model: Any = None             # the torch model (None with the onnx backend)
    chunk_words: int = 10000      # words decoded at once (memory bound)
    options: DecodeOptions = field(default_factory=DecodeOptions)  # resolved decoding options
    tagger: Any = None            # the OnnxTagger (onnx backend; infer/ensemble.py runs members side by side)
    needs_audio: bool = False     # the model reads a data directory's features (`decode`'s `extra`)

    @classmethod
    def load(cls, path: str | Path | None = None, ngpu: int = 0, threads: int = 0, batch_size: int | None = None,
             beam: int | None = None, chunk_words: int = 10000, step: int | None = None,
             quantize: bool = False, backend: str = "auto") -> "Punctuator":
        """Load a packed model (`punctkit pack`); `threads`: CPU threads (0: the library's default);
        `step` replaces the packed decoding step (words between windows: larger is faster, up to the window);
        `quantize` runs the model with int8 weights (`quantize_int8`, CPU, torch);
        `backend`: torch, onnx (a package packed with --onnx; no torch import) or auto (onnx when possible).
        An ensemble package (`punctkit pack --ensemble`) is loaded by punctkit.infer.load_model.
        `path` None: the model installed with punctkit (punctkit.pretrained)."""
        pkg = read_package(default_model() if path is None else path)
        if isinstance(pkg, EnsemblePackage):
            raise PunctkitError(f"{pkg.path}: an ensemble package of {len(pkg.members)} models: load it with "
                                f"punctkit.ensemble.load_model (punctuate -m and serve do)")
        return cls.from_package(pkg, ngpu=ngpu, threads=threads, batch_size=batch_size, beam=beam,
                                chunk_words=chunk_words, step=step, quantize=quantize, backend=backend)

    @classmethod
    def from_package(cls, pkg: Package, ngpu: int = 0, threads: int = 0, batch_size: int | None = None,
                     beam: int | None = None, chunk_words: int = 10000, step: int | None = None,
                     quantize: bool = False, backend: str = "auto",
                     options: DecodeOptions | None = None, show: bool = False) -> "Punctuator":
        """The model of a read package (`load`'s options); `options`: decoding options resolved
        by the caller (`punctkit decode`), in place of the packed ones with `batch_size`, `beam`, `step`;
        `show`: a progress bar over the batches (`punctkit decode`)."""
        conf = pkg.conf
        opts = options or decode_options(pkg, batch_size, beam, step)
        pad_id = pkg.frontend.pad_id
        inventory = get_inventory(conf["resolved"]["inventory"])
        kind = pick_backend(pkg, backend, ngpu, quantize)
        if kind == "onnx":
            from punctkit.onnx import OnnxTagger

            tagger = OnnxTagger(pkg.onnx, threads, f"{pkg.path} (model.onnx)")
            return cls(lambda ds: tagger.predict(ds, opts.batch_size, pad_id, show), pkg.frontend, inventory, conf,
                       pkg.manifest, "onnx", None, chunk_words, opts, tagger)
        model, device = torch_model(pkg, ngpu, threads, quantize)  # first: it imports torch (import_torch)
        from punctkit.decode.decoder import predict

        missing = set(model.needs) - TEXT_KEYS
        if missing:
            raise PunctkitError(f"{pkg.path}: model {conf['model'].get('type')} needs {', '.join(sorted(missing))}; "
                                f"a package is fed words only: decode its experiment dir (punctkit decode EXP DATA OUT) for its audio")
        return cls(lambda ds: predict(model, ds, opts.batch_size, device, opts.beam, 1, pad_id, show), pkg.frontend,
                   inventory, conf, pkg.manifest, "torch", model, chunk_words, opts)

    @classmethod
    def from_experiment(cls, exp_dir: str | Path, options: DecodeOptions, conf: dict[str, Any] | None = None,
                        ngpu: int = 0, threads: int = 0, chunk_words: int = 10000,
                        show: bool = False) -> "Punctuator":
        """A trained model directory's model (`options.checkpoint`: None for model.avg.pt, model.best.pt,
        the last epoch) decoding with resolved `options` (decode/options.py), n-best lists included;
        `conf`: its config.yaml when already read; `threads`: torch's CPU threads (0: as they are);
        `show`: a progress bar over the batches."""
        from punctkit.batch import wants_audio
        from punctkit.decode.decoder import predict
        from punctkit.expdir import load_model, pick_device, read_model_config

        torch = import_torch()
        conf = conf or read_model_config(exp_dir)
        device = pick_device(ngpu)
        if threads:
            torch.set_num_threads(int(threads))
        model, frontend, inventory, conf = load_model(exp_dir, options.checkpoint, device, conf)
        pad_id, o = frontend.pad_id, options
        return cls(lambda ds: predict(model, ds, o.batch_size, device, o.beam, o.nbest, pad_id, show), frontend,
                   inventory, conf, {}, "torch", model, chunk_words, options,
                   needs_audio=wants_audio(conf, model.needs))

    @property
    def card(self) -> dict[str, Any]:
        """The packed model's card (training data, test figures, ...)."""
        return self.manifest.get("card", {})

    @property
    def window(self) -> int:
        return self.options.window

    @property
    def step(self) -> int:
        return self.options.step

    @property
    def grid(self) -> int:
        return self.options.step

    @property
    def reach(self) -> int:
        return self.options.window

    @property
    def closes_streams(self) -> bool:
        return self.options.closes_streams

    @property
    def decides_jointly(self) -> bool:
        return self.options.joint

    def decode(self, streams: list[Stream], extra: Extra | None = None) -> list[Predicted]:
        """Per stream: n-best label ids and the 1-best's distributions, one per input word. A model
        trained on IWSLT's tokens reads `don't` as `do n't` (`ModelWords`), one label back."""
        extra = extra if self.needs_audio else None  # a text model reads words only
        split = [ModelWords(s.words, self.frontend.split_contractions) for s in streams]
        if extra is not None and any(m.starts is not None for m in split):
            raise PunctkitError("this model reads contractions split (do n't) and the data directory has them "
                                "whole (don't): its audio is aligned to its words; prepare it with "
                                "--split-contractions")
        model_streams = [s if m.starts is None else Stream(s.key, s.uttids, [m.starts[i] for i in s.starts],
                                                           m.words, [IGNORE] * len(m.words), s.meta)
                         for s, m in zip(streams, split)]
        decoded = decode_windows_rows(model_streams, self.frontend, self.window, self.step, self.predict, extra)
        return [m.collapse_hyps(h, rows, self.inventory) for m, (h, rows) in zip(split, decoded)]

    def streamable(self) -> "Punctuator":
        return self

    def stream(self, lookahead: int | None = None, capitalize: bool = True) -> "PunctStream":
        """A streaming punctuator (infer/stream.py): `feed(words)` and `finish()` return the words
        they commit, each decided with at most `lookahead` words after it (None: unlimited, the
        labels of `punctuate`)."""
        from punctkit.infer.stream import PunctStream

        return PunctStream(self, lookahead, capitalize)
