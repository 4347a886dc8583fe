"""The Python API behind `punctkit punctuate`, over packed model files (punctkit/package.py:
`punctkit pack` writes them, `read_package` validates and reads them).

    >>> from punctkit import Punctuator
    >>> Punctuator.load("model.pkt").punctuate("so i 'm here do you know why")

Inputs of any length run in bounded memory: a stream is decoded in segments of
about `chunk_words` words that overlap by a window, and each word's label comes
from the same window as when the whole stream is decoded at once
(punctkit.decode.windows), so the result equals `punctkit decode`'s.
"""
from __future__ import annotations

import contextlib
import io
import math
import os
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator

import numpy as np

from punctkit.data.datadir import check_data_dir_output
from punctkit.data.formats import AsrUtterance, Utterance, detect_for, get_format, names, split_text, write
from punctkit.data.formats.base import OutputOptions, Punctuated
from punctkit.data.formats.registry import punctuate_outputs
from punctkit.data.labels import O, LabelSet, case_of, default_substitution, get_inventory, mark_of
from punctkit.data.tokenize import Casing, Renderer, carries_case, show_tokens
from punctkit.data.streams import IGNORE, Stream
from punctkit.decode.model_words import ModelWords
from punctkit.decode.windows import Predict, decode_windows_rows
from punctkit.files import PunctkitError, atomic_write, check_not_input
from punctkit.decode.options import SEARCH_KEYS, DecodeOptions, resolve
from punctkit.package import EnsemblePackage, Package, read_package
from punctkit.pretrained import default_model
from punctkit.package import pack as pack_files
from punctkit.text.frontend import Frontend

if TYPE_CHECKING:  # torch is imported only by the torch backend, packing and quantization
    from punctkit.models.base import PunctModel
    from punctkit.stream import PunctStream

TEXT_KEYS = {"tokens", "token_mask", "word_pos", "word_mask", "labels"}
INPUT_FORMATS = names("units")
OUTPUT_FORMATS = punctuate_outputs()  # corpus formats without a punctuate writer are collected, then written
BACKENDS = ("auto", "torch", "onnx")


# ------------------------------------------------------------------ load

def _bad(path: Path, why: str) -> PunctkitError:
    return PunctkitError(f"{path}: {why}")


# ------------------------------------------------------------------ the API

Fixed = list[str | None]  # per word: the mark it must keep, or None (predicted)


def quantize_int8(model: "PunctModel") -> "PunctModel":
    """Dynamic int8 quantization for CPU inference: the weights of every Linear, GRU and LSTM
    layer stored as int8, activations quantized per batch (torch.ao.quantization)."""
    import warnings

    import torch
    from torch import nn

    if any(isinstance(m, nn.TransformerEncoderLayer) for m in model.modules()):
        # torch's fused encoder fast path reads `linear.weight` tensors, which int8 layers do not
        # have (and it has no int8 kernels): this process runs such layers on the regular path
        torch.backends.mha.set_fastpath_enabled(False)
    with warnings.catch_warnings():  # torch announces a move of this API to torchao
        warnings.simplefilter("ignore")
        return torch.ao.quantization.quantize_dynamic(model, {nn.Linear, nn.GRU, nn.LSTM}, dtype=torch.qint8)


def import_torch() -> Any:
    """torch; when this process imports it first, its OpenMP threads sleep while they wait
    (OMP_WAIT_POLICY=PASSIVE, unless the environment sets a policy). OpenMP's default spins a
    waiting thread on its core between parallel regions: on cores that other processes hold,
    `punctuate` with the default threads ran up to 18 times slower than it does with the policy
    (RESULTS.md, "Load"). OpenMP reads the policy once, when torch loads."""
    if "torch" not in sys.modules:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import torch

    return torch


def torch_model(pkg: Package, ngpu: int = 0, threads: int = 0, quantize: bool = False) -> tuple["PunctModel", Any]:
    """The packed model rebuilt in torch (eval mode) and its device."""
    torch = import_torch()

    from punctkit.expdir import load_plain, model_env, pick_device
    from punctkit.models.registry import build_model

    if threads:
        torch.set_num_threads(int(threads))

    state = load_plain(io.BytesIO(pkg.weights), f"{pkg.path} (model.pt)")
    model = build_model(pkg.conf["model"], **model_env(pkg.conf))
    try:
        model.load_state_dict(state)
    except RuntimeError as e:
        raise _bad(pkg.path, f"weights do not match the packed config ({str(e).splitlines()[0][:100]})") from None
    device = pick_device(ngpu)
    if quantize:
        if device.type != "cpu":
            raise PunctkitError("--quantize is for CPU inference (int8 kernels); drop it or --ngpu")
        model = quantize_int8(model)
    return model.to(device).eval(), device


def decode_options(pkg: Package, batch_size: int | None = None, beam: int | None = None,
                   step: int | None = None) -> DecodeOptions:
    """The packed `decode:` settings with punctuate's options over them."""
    trained = {k: v for k, v in pkg.conf["decode"].items() if k in SEARCH_KEYS}
    # punctuate's own default batch: at least 64 windows (batching never changes a label)
    batch_size = batch_size or max(int(trained.get("batch_size", 32)), 64)
    return resolve({"step": step, "beam": beam, "batch_size": batch_size}, trained)


def pick_backend(pkg: Package, backend: str, ngpu: int, quantize: bool) -> str:
    """`auto`: onnx when the package has model.onnx, onnxruntime is installed and neither a GPU nor
    torch's int8 quantization is asked for; else torch."""
    if backend not in BACKENDS:
        raise PunctkitError(f"unknown backend '{backend}' (known: {', '.join(BACKENDS)})")
    if backend == "onnx":
        if pkg.onnx is None:
            raise _bad(pkg.path, "has no ONNX graph: pack it with `punctkit pack --onnx`")
        if ngpu or quantize:
            raise PunctkitError("--backend onnx runs on the CPU without --quantize (int8 is torch's)")
        return "onnx"
    if backend == "auto" and pkg.onnx is not None and not ngpu and not quantize:
        import importlib.util

        if importlib.util.find_spec("onnxruntime") is not None:
            return "onnx"
    if pkg.weights_member is None:
        raise _bad(pkg.path, "holds the ONNX graph only (packed with --onnx-only): it runs with onnxruntime "
                             "on the CPU (--backend onnx or auto, without --ngpu/--quantize; pip install onnxruntime)")
    return "torch"


class Labeller:
    """What a Punctuator and an Ensemble (punctkit/ensemble.py) share over their `stream_labels`
    and `inventory`: words, probabilities and readable text of one stream."""

    inventory: LabelSet

    def stream_labels(self, items: Iterable[tuple[str, str | None]], probs: bool = False) -> Iterator[Any]:
        raise NotImplementedError

    def label_words(self, words: list[str], fixed: Fixed | None = None, probs: bool = False) -> Any:
        """Labels of one stream of words (`fixed`: marks to keep, None where predicted); with `probs`,
        (labels, words x labels array of the model's distributions, also where a mark is fixed)."""
        items = zip(words, fixed if fixed is not None else [None] * len(words))
        if probs:
            return split_rows(self.stream_labels(items, True), len(self.inventory.labels))
        return list(self.stream_labels(items))

    def probs(self, words: list[str]) -> np.ndarray:
        """The model's distribution over the inventory's labels for each word of one stream (words x labels)."""
        return self.label_words(words, probs=True)[1]

    def casing(self, capitalize: "bool | Casing" = True, recase: bool = False) -> Casing:
        """How this model's output is cased (punctkit.data.tokenize.Casing): its inventory's case
        classes and its frontend's case lexicon; `capitalize=False`: every word as it came;
        `recase`: the model's case also where the input carries case."""
        if isinstance(capitalize, Casing):
            return capitalize
        lexicon = getattr(getattr(self, "frontend", None), "case_lexicon", None)
        return Casing(self.inventory, lexicon, capitalize, recase)

    def punctuate(self, text: str, keep_input_marks: bool = False, capitalize: bool = True,
                  recase: bool = False) -> str:
        """Punctuated, readable text (one stream; line breaks kept): the input's words in order, as
        written, one space apart, with marks predicted (or kept) and case changed only for alphabetic
        words (punctkit.data.tokenize.show_tokens): the model's case, except that where the input's
        letters carry case its words keep it inside sentences (`recase`: the model's case everywhere;
        `capitalize=False`: every word as it came)."""
        rules = default_substitution(self.inventory)
        passages = (split_text(t, self.inventory, rules) for t in text.splitlines())
        lines = (AsrUtterance(str(i), p.words, p.marks, p.written, lineno=i, has_id=False)
                 for i, p in enumerate(passages, 1))
        return "\n".join(" ".join(shown) for _, _, shown in label_units(self, lines, True, keep_input_marks,
                                                                         self.casing(capitalize, recase)))


@dataclass
class Punctuator(Labeller):
    """A loaded model (torch or onnxruntime) with its frontend and decoding settings."""

    predict: Predict              # n-best label ids of every window of a WindowDataset
    frontend: Frontend
    inventory: LabelSet
    conf: dict[str, Any]
    manifest: dict[str, Any] = field(default_factory=dict)
    backend: str = "torch"
    model: Any = None             # the torch model (None with the onnx backend)
    chunk_words: int = 10000      # words decoded at once (memory bound)
    options: DecodeOptions = field(default_factory=DecodeOptions)  # resolved from the packed `decode:`
    tagger: Any = None            # the OnnxTagger (onnx backend; punctkit/ensemble.py runs members side by side)

    @classmethod
    def load(cls, path: str | Path | None = None, ngpu: int = 0, threads: int = 0, batch_size: int | None = None,
             beam: int | None = None, chunk_words: int = 10000, step: int | None = None,
             quantize: bool = False, backend: str = "auto") -> "Punctuator":
        """Load a packed model (`punctkit pack`); `threads`: CPU threads (0: the library's default);
        `step` replaces the packed decoding step (words between windows: larger is faster, up to the window);
        `quantize` runs the model with int8 weights (`quantize_int8`, CPU, torch);
        `backend`: torch, onnx (a package packed with --onnx; no torch import) or auto (onnx when possible).
        An ensemble package (`punctkit pack --ensemble`) is loaded by punctkit.ensemble.load_model.
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
                     quantize: bool = False, backend: str = "auto") -> "Punctuator":
        """The model of a read package (`load`'s options)."""
        path = pkg.path
        conf = pkg.conf
        opts = decode_options(pkg, batch_size, beam, step)
        pad_id = pkg.frontend.pad_id
        inventory = get_inventory(conf["resolved"]["inventory"])
        kind = pick_backend(pkg, backend, ngpu, quantize)
        if kind == "onnx":
            from punctkit.onnx import OnnxTagger

            tagger = OnnxTagger(pkg.onnx, threads, f"{pkg.path} (model.onnx)")
            return cls(lambda ds: tagger.predict(ds, opts.batch_size, pad_id), pkg.frontend, inventory, conf,
                       pkg.manifest, "onnx", None, chunk_words, opts, tagger)
        model, device = torch_model(pkg, ngpu, threads, quantize)  # first: it imports torch (import_torch)
        from punctkit.decode.decoder import predict

        missing = set(model.needs) - TEXT_KEYS
        if missing:
            raise PunctkitError(f"{path}: model {conf['model'].get('type')} needs {', '.join(sorted(missing))}; "
                                f"punctkit punctuate feeds words only")
        return cls(lambda ds: predict(model, ds, opts.batch_size, device, opts.beam, 1, pad_id), pkg.frontend,
                   inventory, conf, pkg.manifest, "torch", model, chunk_words, opts)

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

    # --- labelling
    def _decode(self, streams: list[list[str]]) -> list[list[int]]:
        """Best label ids of each word of each stream (decode/windows.py)."""
        return [ids for ids, _ in self._decode_rows(streams)]

    def _decode_rows(self, streams: list[list[str]]) -> list[tuple[list[int], np.ndarray]]:
        """Best label ids of each word of each stream and their distributions (decode/windows.py).
        A model trained on IWSLT's tokens reads `don't` as `do n't` (`ModelWords`), one label back."""
        split = [ModelWords(words, self.frontend.split_contractions) for words in streams]
        ss = [Stream(f"s{k}", [f"s{k}"], [0], m.words, [IGNORE] * len(m.words)) for k, m in enumerate(split)]
        decoded = decode_windows_rows(ss, self.frontend, self.window, self.step, self.predict)
        return [m.collapse(h[0][0], rows, self.inventory) for m, (h, rows) in zip(split, decoded)]

    def _labels(self, ids: list[int], fixed: Fixed | None) -> list[str]:
        return fixed_labels(self.inventory, ids, fixed)

    def stream_labels(self, items: Iterable[tuple[str, str | None]], probs: bool = False) -> Iterator[Any]:
        """The label of every word of one stream of (word, fixed mark or None), in order, in bounded memory;
        with `probs`, (label, row): the row is the model's distribution over the inventory's labels
        (also for a word whose mark is fixed).

        Segments start on the window grid (multiples of `step`) and overlap by
        at least a window on each side of the words they keep, so every kept
        word has the same windows, and owner, as in a whole-stream decode.
        """
        L, S = self.window, self.step
        ctx = math.ceil(L / S) * S
        chunk = S * max(math.ceil(self.chunk_words / S), math.ceil(L / S))
        buf: list[tuple[str, str | None]] = []
        buf_start = keep = 0

        def run(seg: list[tuple[str, str | None]], a: int, b: int) -> Iterator[Any]:
            ids, rows = self._decode_rows([[w for w, _ in seg]])[0]
            labels = self._labels(ids[a:b], [f for _, f in seg[a:b]])
            return zip(labels, rows[a:b]) if probs else iter(labels)

        for it in items:
            buf.append(it)
            if buf_start + len(buf) >= keep + chunk + L:
                seg = buf[: keep + chunk + L - buf_start]
                yield from run(seg, keep - buf_start, keep + chunk - buf_start)
                keep += chunk
                del buf[: keep - ctx - buf_start]
                buf_start = keep - ctx
        if buf_start + len(buf) > keep:
            yield from run(buf, keep - buf_start, len(buf))

    def label_utterances(self, utts: Iterable[tuple[list[str], Fixed | None]],
                         probs: bool = False) -> Iterator[Any]:
        """Labels of independent utterances (each its own stream), batched across utterances;
        with `probs`, (labels, words x labels array) per utterance."""
        group: list[tuple[list[str], Fixed | None]] = []
        size = 0
        n_labels = len(self.inventory.labels)

        def flush() -> Iterator[Any]:
            nonlocal size
            done = self._decode_rows([w for w, _ in group if w]) if any(w for w, _ in group) else []
            k = 0
            for words, fixed in group:
                if words:
                    ids, rows = done[k]
                    labels = self._labels(ids, fixed)
                    k += 1
                else:
                    labels, rows = [], np.zeros((0, n_labels))
                yield (labels, rows) if probs else labels
            group.clear()
            size = 0

        for words, fixed in utts:
            if len(words) > self.chunk_words:
                yield from flush()
                items = zip(words, fixed if fixed is not None else [None] * len(words))
                yield split_rows(self.stream_labels(items, True), n_labels) if probs \
                    else list(self.stream_labels(items))
                continue
            group.append((words, fixed))
            size += len(words)
            if size >= self.chunk_words:
                yield from flush()
        yield from flush()

    def stream(self, lookahead: int | None = None, capitalize: bool = True) -> "PunctStream":
        """A streaming punctuator (punctkit/stream.py): `feed(words)` and `finish()` return the words
        they commit, each decided with at most `lookahead` words after it (None: unlimited, the
        labels of `punctuate`)."""
        from punctkit.stream import PunctStream

        return PunctStream(self, lookahead, capitalize)


def fixed_labels(inventory: LabelSet, ids: list[int], fixed: Fixed | None) -> list[str]:
    """The labels of label ids, with each fixed mark (None: predicted) kept and the predicted case."""
    labels = [inventory.labels[i] for i in ids]
    if fixed is not None:
        for i, mk in enumerate(fixed):
            if mk is not None:
                labels[i] = inventory.relabel(labels[i], mk)
    return labels


def split_rows(pairs: Iterable[tuple[str, np.ndarray]], n_labels: int) -> tuple[list[str], np.ndarray]:
    """(labels, words x labels array) from (label, row) pairs."""
    labels: list[str] = []
    rows: list[np.ndarray] = []
    for label, row in pairs:
        labels.append(label)
        rows.append(row)
    return labels, np.array(rows, dtype=np.float64).reshape(len(rows), n_labels)


# ------------------------------------------------------------------ files in, files out

def pack(exp_dir: str | Path, out: str | Path, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """`punctkit pack` (punctkit/package.py's `pack`, same arguments), the file checked by
    loading it back with `Punctuator.load` before it replaces `out`."""
    return pack_files(exp_dir, out, *args, verify=Punctuator.load, **kwargs)


def _fixed(marks: list[str], keep: bool) -> Fixed | None:
    return [None if m == O else m for m in marks] if keep else None


Labelled = tuple[AsrUtterance, list[str], list[str]]  # an utterance, its labels, its words as shown
# with probs: also the utterance's words x labels distributions
LabelledRows = tuple[AsrUtterance, list[str], list[str], np.ndarray]


def _kept(utt: AsrUtterance, keep: bool) -> list[str] | None:
    """The input marks that were given to the model as fixed (--keep-input-marks), else None."""
    return utt.marks if keep else None


def label_units(punct: Any, units: Iterable[AsrUtterance], one_stream: bool, keep_input_marks: bool,
                capitalize: "bool | Casing", probs: bool = False) -> Iterator[Any]:
    """Each utterance in order with its labels and its words as shown (marks and case set), as
    `Labelled`; with `probs`, `LabelledRows` (4th item: its words x labels distributions).
    `one_stream` (plain-text lines) labels all words as one stream, sentences crossing lines;
    otherwise each utterance is its own stream and starts a sentence. `punct`: a Punctuator or
    an Ensemble (punctkit/ensemble.py). `capitalize`: a `Casing`, or a bool for `punct.casing`."""
    capitalize = punct.casing(capitalize)
    if one_stream:
        yield from _stream_units(punct, iter(units), keep_input_marks, capitalize, probs)
        return
    seen: deque[AsrUtterance] = deque()  # utterances waiting for their labels (at most one chunk)

    def feed() -> Iterator[tuple[list[str], Fixed | None]]:
        for u in units:
            seen.append(u)
            yield u.words, _fixed(u.marks, keep_input_marks)

    for res in punct.label_utterances(feed(), probs=probs):
        labels, rows = res if probs else (res, None)
        u = seen.popleft()
        shown = show_tokens(u.written, labels, capitalize, kept=_kept(u, keep_input_marks))
        yield (u, labels, shown, rows) if probs else (u, labels, shown)


def _stream_units(punct: Any, units: Iterator[AsrUtterance], keep_input_marks: bool,
                  capitalize: Casing, probs: bool = False) -> Iterator[Any]:
    """Lines as one stream: words flow through `stream_labels`, lines come out whole, in order."""
    pending: deque[AsrUtterance] = deque()  # lines whose words are not all labelled yet
    n_labels = len(punct.inventory.labels)

    def items() -> Iterator[tuple[str, str | None]]:
        for ln in units:
            pending.append(ln)
            fixed = _fixed(ln.marks, keep_input_marks) or [None] * len(ln.words)
            yield from zip(ln.words, fixed)

    render = Renderer(capitalize, input_cased=False)  # one stream: sentences and the input's case run on
    labels: deque[Any] = deque()
    labelled = punct.stream_labels(items(), probs=probs)
    while True:
        while pending and len(labels) >= len(pending[0].words):  # the first pending line is complete
            ln = pending.popleft()
            got = [labels.popleft() for _ in ln.words]
            mine, rows = split_rows(got, n_labels) if probs else (got, None)
            render.input_cased = render.input_cased or carries_case(ln.written)  # judged from this line on
            shown = [render.show(w, lab, k) for w, lab, k in
                     zip(ln.written, mine, _kept(ln, keep_input_marks) or [None] * len(mine))]
            yield (ln, mine, shown, rows) if probs else (ln, mine, shown)
        nxt = next(labelled, None)
        if nxt is None:
            break
        labels.append(nxt)
    for ln in pending:  # only lines without words can be left
        if ln.words:
            raise PunctkitError(f"line {ln.lineno}: the model returned no labels for its words")
        yield (ln, [], [], np.zeros((0, n_labels))) if probs else (ln, [], [])


@dataclass
class PunctuateStats:
    """What `punctuate_file` did."""

    unit: str = "utterances"  # or "lines" (plain text)
    utterances: int = 0
    words: int = 0
    unknown: int = 0         # words with a piece unknown to the model's frontend
    empty: int = 0           # lines or utterances without any word (written empty)
    dropped_tokens: int = 0  # CTM/JSON tokens without a word (a bare mark goes to the word before)
    seconds: float = 0.0

    def count(self, words: list[str], frontend: Frontend) -> None:
        """Count one line or utterance."""
        self.utterances += 1
        self.words += len(words)
        self.empty += not words
        self.unknown += sum(frontend.unk_id in frontend.word_ids(w) for w in words)

    def summary(self) -> str:
        rate = self.words / self.seconds if self.seconds else 0.0
        out = f"{self.utterances} {self.unit}, {self.words} words in {self.seconds:.2f} s ({rate:,.0f} words/s)"
        if self.empty:
            out += f"; warning: {self.empty} {self.unit} without words (written empty)"
        if self.dropped_tokens:
            out += f"; warning: {self.dropped_tokens} tokens without a word dropped"
        if self.words and self.unknown > self.words / 2:
            out += f"; warning: {100 * self.unknown / self.words:.0f}% of the words are unknown to the model"
        return out


def _open_out(out: str | Path | None) -> Any:
    if out is None or str(out) == "-":
        return contextlib.nullcontext(sys.stdout)
    return atomic_write(out)


def punctuated_units(punct: Punctuator, units: Iterable[AsrUtterance], one_stream: bool, keep_input_marks: bool,
                     capitalize: bool, probs: bool = False) -> Iterator[Punctuated]:
    """`label_units`, each utterance also with its probability rows (words x labels, inventory order)
    when `probs`, else None: the one place punctuate's writers get probabilities from."""
    if probs:
        if not has_probs_api():
            raise PunctkitError("--probs: this version has no per-word probabilities yet "
                                "(label_units has no probs API)")
        yield from label_units(punct, units, one_stream, keep_input_marks, capitalize,
                               probs=True)  # type: ignore[call-arg]
        return
    for u, labels, shown in label_units(punct, units, one_stream, keep_input_marks, capitalize):
        yield u, labels, shown, None


def has_probs_api() -> bool:
    """Whether `label_units` gives probability rows (`probs=True`: (utterance, labels, shown, rows))."""
    import inspect

    return "probs" in inspect.signature(label_units).parameters


def output_options(punct: Punctuator, one_stream: bool, max_cue_seconds: float, max_line_chars: int,
                   max_cue_lines: int) -> OutputOptions:
    """The writers' options, the subtitle limits checked."""
    if not (max_cue_seconds > 0 and max_line_chars > 0 and max_cue_lines > 0):
        raise PunctkitError("--max-cue-seconds, --max-line-chars and --max-cue-lines must be positive")
    return OutputOptions(punct.inventory, one_stream, max_cue_seconds, max_line_chars, max_cue_lines)


def punctuate_file(punct: Punctuator, src: str | Path, out: str | Path | None = None,
                   input_format: str | None = None, fmt: str = "readable", keep_input_marks: bool = False,
                   capitalize: bool = True, overwrite: bool = False, encoding: str | None = None,
                   probs: bool = False, max_cue_seconds: float = 7.0, max_line_chars: int = 42,
                   max_cue_lines: int = 2) -> PunctuateStats:
    """Punctuate `src` (`-`: stdin) into `out` (None or `-`: stdout) in `fmt`.

    `out` is never `src`; a `datadir` output is written by `write_data_dir` (`overwrite` there).
    Input formats are those of the format registry with a streaming reader (`units`: text,
    kaldi_text, ctm, jsonl, whisper, nemo, vosk; detected from the content unless given). Output
    formats are those with a punctuate writer (`emit`, one utterance at a time: readable, the
    input words as written, marks and case set, `uttid text` for inputs with ids; twocol; ctm,
    for inputs with times; jsonl, the input objects with `text`, `labels` and per-word
    `punctuated`; nemo; or `stream`, over all of them: srt and vtt, for inputs with times, cues
    within `max_cue_*`/`max_line_chars`; timed-json), or a corpus format (text, kaldi_text,
    punctuator2, datadir; these keep IWSLT tokens for scoring, are collected in memory and need
    `-o`). `probs` adds probabilities to the outputs that show them (jsonl, timed-json, twocol).
    """
    t0 = time.time()
    reader = (get_format(input_format, "units", "input format") if input_format
              else detect_for(src, "units", encoding, "punctuate", "--input-format"))
    writer = get_format(fmt, "emit", "output format", OUTPUT_FORMATS)
    streamed = writer.emit is not None or writer.stream is not None
    to_stdout = out is None or str(out) == "-"
    if not streamed and to_stdout:
        raise PunctkitError(f"--format {fmt} writes through punctkit's format writers: give -o FILE")
    if probs and not writer.probs:
        shows = ", ".join(n for n in OUTPUT_FORMATS if get_format(n, "emit", known=OUTPUT_FORMATS).probs)
        raise PunctkitError(f"--probs: --format {fmt} cannot show probabilities (formats that do: {shows})")
    inputs = [] if str(src) == "-" else [src]
    if not to_stdout:
        check_not_input(out, inputs)  # type: ignore[arg-type]
        if writer.directory:  # fail before punctuating, not after
            check_data_dir_output(out, overwrite, inputs)  # type: ignore[arg-type]
    if writer.needs_times and not reader.times:
        timed = " or ".join(n for n in INPUT_FORMATS if get_format(n, "units").times)
        raise PunctkitError(f"--format {fmt} needs word times: input format {timed}, not {reader.name}")
    inv = punct.inventory
    opts = output_options(punct, reader.one_stream, max_cue_seconds, max_line_chars, max_cue_lines)
    stats = PunctuateStats(unit="lines" if reader.one_stream else "utterances")
    dropped = [0]
    collected: list[Utterance] = []
    units = reader.units(src, inv, default_substitution(inv), encoding, dropped)  # type: ignore[misc]

    def counted() -> Iterator[Punctuated]:
        for item in punctuated_units(punct, units, reader.one_stream, keep_input_marks, capitalize, probs):
            stats.count(item[0].words, punct.frontend)
            yield item

    with _open_out(out if streamed else None) as f:
        if writer.stream is not None:
            f.writelines(line + "\n" for line in writer.stream(counted(), src, opts))
        for u, labels, shown, rows in (counted() if writer.stream is None else ()):
            if writer.emit is not None:
                f.writelines(line + "\n" for line in writer.emit(u, labels, shown, src, rows, opts))
            elif u.words:
                collected.append(Utterance(u.uttid, u.words, labels))
    stats.dropped_tokens = dropped[0]
    if not streamed:
        write(collected, out, fmt, inv, overwrite, inputs)  # type: ignore[arg-type]
    stats.seconds = time.time() - t0
    return stats
