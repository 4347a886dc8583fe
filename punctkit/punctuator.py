"""Packed model files (`punctkit pack`) and the Python API behind `punctkit punctuate`.

A packed model (`model.pkt`) is a zip archive that needs nothing else to run:

- `punctkit.json`: format name and version, punctkit version, the card
  (model type, frontend, inventory, checkpoint, training data, test figures);
- `config.yaml`: the resolved training config; a pre-trained LM named by path
  (`plm: auto` or a directory) is replaced by its `config.json` contents
  (`plm: {config: {...}}`) so the model is rebuilt offline and the packed
  weights fill it;
- `frontend/`: the frontend directory (vocabulary, BPE codes, sentencepiece
  model or PLM tokenizer files);
- `model.pt`: the state dict of the chosen checkpoint;
- `model.onnx` (optional, `punctkit pack --onnx`): the same tagger as an ONNX
  graph, run by onnxruntime without importing torch (punctkit/onnx.py).

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
import json
import math
import re
import sys
import tempfile
import time
import zipfile
import zlib
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

import yaml

import punctkit
from punctkit.data.asr import (AsrUtterance, Line, detect_input_format, read_ctm, read_jsonl, read_kaldi_text,
                               read_text_lines, source_name, split_text)
from punctkit.data.formats import FORMATS, Utterance, write
from punctkit.data.labels import O, LabelSet, case_of, default_substitution, get_inventory
from punctkit.data.tokenize import detokenize, display_words, ends_sentence
from punctkit.data.streams import IGNORE, Stream
from punctkit.decode.windows import Predict, decode_windows
from punctkit.files import PunctkitError, atomic_write, require_file, where
from punctkit.score import read_score
from punctkit.text.frontend import Frontend, load_frontend

if TYPE_CHECKING:  # torch is imported only by the torch backend, packing and quantization
    from punctkit.models.base import PunctModel

FORMAT_NAME = "punctkit-model"
FORMAT_VERSION = 1
MANIFEST = "punctkit.json"
TEXT_KEYS = {"tokens", "token_mask", "word_pos", "word_mask", "labels"}
OUTPUT_FORMATS = ("readable", "ctm", "jsonl") + FORMATS
BACKENDS = ("auto", "torch", "onnx")


# ------------------------------------------------------------------ pack

def _offline_model_conf(model_conf: dict[str, Any], frontend_dir: Path) -> dict[str, Any]:
    """The model section with a PLM path replaced by its config.json (`plm: {config: ...}`)."""
    conf = dict(model_conf)
    spec = conf.get("plm")
    if spec is None or (isinstance(spec, dict) and "config" in spec):
        return conf
    from punctkit.text.plm import TOKENIZER_DIR, read_plm_config, resolve_plm_dir

    local = frontend_dir / TOKENIZER_DIR
    if (local / "config.json").is_file():
        plm_conf = read_plm_config(local)
    else:
        path = spec.get("path", "auto") if isinstance(spec, dict) else spec
        plm_conf = read_plm_config(resolve_plm_dir(path))
    conf["plm"] = {"config": plm_conf}
    return conf


def _train_data(exp: Path) -> str | None:
    """`TRAIN (dev DEV)` from the first line of train.log that names them."""
    log = exp / "train.log"
    if not log.is_file():
        return None
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        m = re.search(r"punctkit train: (.+?) -> ", line)
        if m:
            return m.group(1)
    return None


def _results(path: Path) -> dict[str, Any]:
    """Overall P/R/F1 (and SER) from a `score.json` written by `punctkit score -o`."""
    res = read_score(path)
    overall = res["overall"]
    out = {k: overall[k] for k in ("precision", "recall", "f1") if k in overall}
    if "SER" in res:
        out["SER"] = res["SER"]
    out["source"] = str(path)
    return out


def make_card(exp: Path, conf: dict[str, Any], checkpoint: Path, card_results: list[Path],
              train_data: str | None) -> dict[str, Any]:
    """The short description stored with a packed model."""
    card: dict[str, Any] = {
        "name": exp.resolve().name,
        "model": conf["model"].get("type"),
        "frontend": conf["frontend"].get("kind", "word"),
        "inventory": conf["resolved"]["inventory"],
        "checkpoint": checkpoint.name,
        "training_data": train_data or _train_data(exp),
        "decode": {k: conf["decode"][k] for k in ("window", "step", "beam") if k in conf["decode"]},
    }
    hist = exp / "history.json"
    if hist.is_file():
        try:
            h = json.loads(hist.read_text(encoding="utf-8"))
            card["epochs"] = len(h)
            scores = [e["valid_f1"] for e in h if e.get("valid_f1") is not None]
            card["best_dev_f1"] = max(scores) if scores else None
        except (json.JSONDecodeError, TypeError, KeyError):
            pass
    card["results"] = {p.parent.name: _results(p) for p in card_results}
    return card


def pack(exp_dir: str | Path, out: str | Path, checkpoint: str | None = None,
         card_results: Iterable[str | Path] = (), train_data: str | None = None,
         onnx: bool = False, int8: bool = False) -> dict[str, Any]:
    """Write the model of a trained model dir into one file; returns its manifest.

    `onnx` adds the tagger as an ONNX graph (punctkit/onnx.py), checked against torch;
    `int8` stores that graph with int8 weights (faster on CPU; labels may differ slightly).
    The file is checked by loading it back before it replaces `out`.
    """
    if int8 and not onnx:
        raise PunctkitError("--int8 is the ONNX graph's weight type: add --onnx")
    import torch

    from punctkit.decode.decoder import find_checkpoint, load_model

    exp = Path(exp_dir)
    model, frontend, _, conf = load_model(exp, checkpoint)
    ckpt = find_checkpoint(exp, checkpoint)  # its name goes on the card
    fe_dir = exp / "frontend"
    require_file(fe_dir / "frontend.yaml", "frontend description")
    conf = dict(conf, model=_offline_model_conf(conf["model"], fe_dir))
    manifest = {
        "format": FORMAT_NAME, "format_version": FORMAT_VERSION, "punctkit_version": punctkit.__version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "card": make_card(exp, conf, ckpt, [Path(p) for p in card_results], train_data),
    }
    graph = None
    if onnx:
        from punctkit.onnx import export_onnx, quantize_graph

        graph = export_onnx(model, frontend.vocab_size, frontend.pad_id)
        if int8:
            graph = quantize_graph(graph)
        manifest["card"]["onnx"] = "int8" if int8 else "float32"
    weights = io.BytesIO()
    torch.save(model.state_dict(), weights)
    with atomic_write(out, "wb") as f:
        with zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr(MANIFEST, json.dumps(manifest, indent=1))
            z.writestr("config.yaml", yaml.safe_dump(conf, sort_keys=False))
            for p in sorted(fe_dir.rglob("*")):
                if p.is_file() and not p.name.startswith("."):
                    z.write(p, "frontend/" + p.relative_to(fe_dir).as_posix())
            z.writestr(zipfile.ZipInfo("model.pt"), weights.getvalue(), zipfile.ZIP_STORED)
            if graph is not None:
                z.writestr(zipfile.ZipInfo("model.onnx"), graph, zipfile.ZIP_STORED)
        f.flush()
        for backend in ("torch", "onnx") if onnx else ("torch",):
            Punctuator.load(f.name, backend=backend)  # the packed file rebuilds the model on its own
    return manifest


# ------------------------------------------------------------------ load

def _bad(path: Path, why: str) -> PunctkitError:
    return PunctkitError(f"{path}: {why}")


@dataclass
class Package:
    """The parts of a packed model file (weights still serialized: each backend reads its own)."""

    path: Path
    manifest: dict[str, Any]
    conf: dict[str, Any]
    frontend: Frontend
    weights: bytes               # model.pt (torch state dict)
    onnx: bytes | None = None    # model.onnx, when packed with --onnx


def read_package(path: str | Path) -> Package:
    """A packed model's manifest, config, frontend and weights; one-line errors for foreign,
    truncated, corrupt or other-version files."""
    p = require_file(path, "packed model")
    if not zipfile.is_zipfile(p):
        raise _bad(p, "not a packed punctkit model (truncated, or not written by `punctkit pack`)")
    try:
        with zipfile.ZipFile(p) as z:
            names = set(z.namelist())
            if MANIFEST not in names:
                raise _bad(p, "not a packed punctkit model (no punctkit.json)")
            manifest = json.loads(z.read(MANIFEST))
            if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
                raise _bad(p, "not a packed punctkit model (unknown format)")
            version = manifest.get("format_version")
            if version != FORMAT_VERSION:
                raise _bad(p, f"packed model format version {version}, this punctkit "
                              f"({punctkit.__version__}) reads version {FORMAT_VERSION}: pack it again")
            missing = [n for n in ("config.yaml", "model.pt", "frontend/frontend.yaml") if n not in names]
            if missing:
                raise _bad(p, f"incomplete packed model (missing {', '.join(missing)})")
            conf = yaml.safe_load(z.read("config.yaml"))
            weights = z.read("model.pt")
            graph = z.read("model.onnx") if "model.onnx" in names else None
            with tempfile.TemporaryDirectory(prefix="punctkit-frontend-") as tmp:
                for n in names:
                    if n.startswith("frontend/") and not n.endswith("/"):
                        target = Path(tmp) / n
                        target.parent.mkdir(parents=True, exist_ok=True)
                        target.write_bytes(z.read(n))
                try:
                    frontend = load_frontend(Path(tmp) / "frontend")
                except PunctkitError as e:  # its message names the temporary copy: name the member
                    raise _bad(p, f"corrupt packed model (frontend: {str(e).replace(tmp + '/', '')})") from None
    except PunctkitError:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, RuntimeError, KeyError,
            TypeError, yaml.YAMLError, UnicodeDecodeError) as e:
        raise _bad(p, f"corrupt packed model ({type(e).__name__})") from None
    if not isinstance(conf, dict) or "resolved" not in conf or "model" not in conf:
        raise _bad(p, "corrupt packed model (config.yaml has no model/resolved sections)")
    return Package(p, manifest, conf, frontend, weights, graph)


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


def torch_model(pkg: Package, ngpu: int = 0, threads: int = 0, quantize: bool = False) -> tuple["PunctModel", Any]:
    """The packed model rebuilt in torch (eval mode) and its device."""
    import torch

    from punctkit.decode.decoder import model_env, pick_device
    from punctkit.models.registry import build_model

    if threads:
        torch.set_num_threads(int(threads))
    try:
        state = torch.load(io.BytesIO(pkg.weights), map_location="cpu", weights_only=True)
    except (EOFError, RuntimeError, ValueError, OSError, zipfile.BadZipFile) as e:
        raise _bad(pkg.path, f"corrupt packed model (model.pt: {type(e).__name__})") from None
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
    return "torch"


@dataclass
class Punctuator:
    """A loaded model (torch or onnxruntime) with its frontend and decoding settings."""

    predict: Predict              # n-best label ids of every window of a WindowDataset
    frontend: Frontend
    inventory: LabelSet
    conf: dict[str, Any]
    manifest: dict[str, Any] = field(default_factory=dict)
    backend: str = "torch"
    model: Any = None             # the torch model (None with the onnx backend)
    chunk_words: int = 10000      # words decoded at once (memory bound)

    @classmethod
    def load(cls, path: str | Path, ngpu: int = 0, threads: int = 0, batch_size: int | None = None,
             beam: int | None = None, chunk_words: int = 10000, step: int | None = None,
             quantize: bool = False, backend: str = "auto") -> "Punctuator":
        """Load a packed model (`punctkit pack`); `threads`: CPU threads (0: the library's default);
        `step` replaces the packed decoding step (words between windows: larger is faster, up to the window);
        `quantize` runs the model with int8 weights (`quantize_int8`, CPU, torch);
        `backend`: torch, onnx (a package packed with --onnx; no torch import) or auto (onnx when possible)."""
        pkg = read_package(path)
        conf = pkg.conf
        if step is not None:
            window = int(conf["decode"]["window"])
            if not 1 <= step <= window:
                raise PunctkitError(f"--step {step}: must be between 1 and the model's window ({window} words)")
            conf["decode"]["step"] = int(step)
        dconf = conf["decode"]
        batch_size = batch_size or max(int(dconf.get("batch_size", 32)), 64)
        pad_id = pkg.frontend.pad_id
        inventory = get_inventory(conf["resolved"]["inventory"])
        kind = pick_backend(pkg, backend, ngpu, quantize)
        if kind == "onnx":
            from punctkit.onnx import OnnxTagger

            tagger = OnnxTagger(pkg.onnx, threads, f"{pkg.path} (model.onnx)")
            return cls(lambda ds: tagger.predict(ds, batch_size, pad_id), pkg.frontend, inventory, conf,
                       pkg.manifest, "onnx", None, chunk_words)
        from punctkit.decode.decoder import predict

        model, device = torch_model(pkg, ngpu, threads, quantize)
        missing = set(model.needs) - TEXT_KEYS
        if missing:
            raise PunctkitError(f"{path}: model {conf['model'].get('type')} needs {', '.join(sorted(missing))}; "
                                f"punctkit punctuate feeds words only")
        beam = beam if beam is not None else int(dconf.get("beam", 1))
        return cls(lambda ds: predict(model, ds, batch_size, device, beam, 1, pad_id), pkg.frontend, inventory,
                   conf, pkg.manifest, "torch", model, chunk_words)

    @property
    def card(self) -> dict[str, Any]:
        """The packed model's card (training data, test figures, ...)."""
        return self.manifest.get("card", {})

    @property
    def window(self) -> int:
        return int(self.conf["decode"]["window"])

    @property
    def step(self) -> int:
        return int(self.conf["decode"]["step"])

    # --- labelling
    def _decode(self, streams: list[list[str]]) -> list[list[int]]:
        """Best label ids of each word of each stream (decode/windows.py)."""
        ss = [Stream(f"s{k}", [f"s{k}"], [0], words, [IGNORE] * len(words)) for k, words in enumerate(streams)]
        return [h[0][0] for h in decode_windows(ss, self.frontend, self.window, self.step, self.predict)]

    def _labels(self, ids: list[int], fixed: Fixed | None) -> list[str]:
        labels = [self.inventory.labels[i] for i in ids]
        if fixed is not None:
            for i, mk in enumerate(fixed):
                if mk is not None:
                    labels[i] = self.inventory.make(mk, case_of(labels[i]) == "U")
        return labels

    def stream_labels(self, items: Iterable[tuple[str, str | None]]) -> Iterator[str]:
        """The label of every word of one stream of (word, fixed mark or None), in order, in bounded memory.

        Segments start on the window grid (multiples of `step`) and overlap by
        at least a window on each side of the words they keep, so every kept
        word has the same windows, and owner, as in a whole-stream decode.
        """
        L, S = self.window, self.step
        ctx = math.ceil(L / S) * S
        chunk = S * max(math.ceil(self.chunk_words / S), math.ceil(L / S))
        buf: list[tuple[str, str | None]] = []
        buf_start = keep = 0

        def run(seg: list[tuple[str, str | None]], a: int, b: int) -> list[str]:
            ids = self._decode([[w for w, _ in seg]])[0]
            return self._labels(ids[a:b], [f for _, f in seg[a:b]])

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

    def label_utterances(self, utts: Iterable[tuple[list[str], Fixed | None]]) -> Iterator[list[str]]:
        """Labels of independent utterances (each its own stream), batched across utterances."""
        group: list[tuple[list[str], Fixed | None]] = []
        size = 0

        def flush() -> Iterator[list[str]]:
            nonlocal size
            ids = self._decode([w for w, _ in group if w]) if any(w for w, _ in group) else []
            k = 0
            for words, fixed in group:
                if words:
                    yield self._labels(ids[k], fixed)
                    k += 1
                else:
                    yield []
            group.clear()
            size = 0

        for words, fixed in utts:
            if len(words) > self.chunk_words:
                yield from flush()
                items = zip(words, fixed if fixed is not None else [None] * len(words))
                yield list(self.stream_labels(items))
                continue
            group.append((words, fixed))
            size += len(words)
            if size >= self.chunk_words:
                yield from flush()
        yield from flush()

    def label_words(self, words: list[str], fixed: Fixed | None = None) -> list[str]:
        """Labels of one stream of words (`fixed`: marks to keep, None where predicted)."""
        return list(self.stream_labels(zip(words, fixed if fixed is not None else [None] * len(words))))

    def punctuate(self, text: str, keep_input_marks: bool = False, capitalize: bool = True) -> str:
        """Punctuated, readable text (one stream; line breaks kept)."""
        rules = default_substitution(self.inventory)
        lines = [Line(i, *split_text(t, self.inventory, rules)) for i, t in enumerate(text.splitlines(), 1)]
        out = _TextLines(self, keep_input_marks, capitalize)
        return "\n".join(s for _, s in out.run(iter(lines), lambda ln, labels: None))


# ------------------------------------------------------------------ files in, files out

def _fixed(marks: list[str], keep: bool) -> Fixed | None:
    return [None if m == O else m for m in marks] if keep else None


@dataclass
class _TextLines:
    """Plain text as one stream: words flow through `stream_labels`, lines come out whole, in order."""

    punct: Punctuator
    keep_input_marks: bool
    capitalize: bool

    def run(self, lines: Iterator[Line], on_line: Callable[[Line, list[str]], None]) -> Iterator[tuple[Line, str]]:
        pending: deque[Line] = deque()  # lines whose words are not all labelled yet

        def items() -> Iterator[tuple[str, str | None]]:
            for ln in lines:
                pending.append(ln)
                fixed = _fixed(ln.marks, self.keep_input_marks) or [None] * len(ln.words)
                yield from zip(ln.words, fixed)

        start = True
        labels: deque[str] = deque()
        labelled = self.punct.stream_labels(items())
        while True:
            while pending and len(labels) >= len(pending[0].words):  # the first pending line is complete
                ln = pending.popleft()
                mine = [labels.popleft() for _ in ln.words]
                on_line(ln, mine)
                yield ln, detokenize(ln.words, mine, self.capitalize, start)
                start = ends_sentence(mine, start)
            nxt = next(labelled, None)
            if nxt is None:
                break
            labels.append(nxt)
        for ln in pending:  # only lines without words can be left
            if ln.words:
                raise PunctkitError(f"line {ln.lineno}: the model returned no labels for its words")
            on_line(ln, [])
            yield ln, ""


def _ctm_lines(utt: AsrUtterance, labels: list[str], capitalize: bool, src: str | Path) -> Iterator[str]:
    """CTM lines with each word cased and its mark appended (`Hello,`); JSON words get channel 1."""
    shown, _ = display_words(utt.words, labels, capitalize)
    for k, (w, rec) in enumerate(zip(shown, utt.records), 1):
        if rec is None or rec.get("start_s") is None:
            raise PunctkitError(f"{where(src, utt.lineno, utt.uttid)}: word {k} has no start time "
                                f"(--format ctm needs word times)")
        if "channel" in rec:
            yield " ".join([utt.uttid, rec["channel"], rec["start"], rec["duration"], w, *rec["rest"]])
        else:
            end = rec["end_s"] if rec.get("end_s") is not None else rec["start_s"]
            yield f"{utt.uttid} 1 {rec['start_s']:.3f} {end - rec['start_s']:.3f} {w}"


def _json_line(utt: AsrUtterance, labels: list[str], capitalize: bool) -> str:
    """The input object (or {"id"}) with `text` (punctuated) and, per word object, `punctuated` and `label`."""
    obj = dict(utt.source) if isinstance(utt.source, dict) else {"id": utt.uttid}
    obj["text"] = detokenize(utt.words, labels, capitalize)
    obj["labels"] = labels
    shown, _ = display_words(utt.words, labels, capitalize)
    items = obj.get("words")
    if isinstance(items, list):
        items = list(items)
        for w, lab, rec in zip(shown, labels, utt.records):
            k = rec["index"] if rec else None
            if k is not None and isinstance(items[k], dict):
                items[k] = dict(items[k], punctuated=w, label=lab)
        obj["words"] = items
    return json.dumps(obj, ensure_ascii=False)


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


def punctuate_file(punct: Punctuator, src: str | Path, out: str | Path | None = None,
                   input_format: str | None = None, fmt: str = "readable", keep_input_marks: bool = False,
                   capitalize: bool = True, encoding: str | None = None) -> PunctuateStats:
    """Punctuate `src` (`-`: stdin) into `out` (None or `-`: stdout) in `fmt`.

    Formats: `readable` (detokenized text; `uttid text` for inputs with ids),
    `ctm` (CTM/JSON inputs with times: each word cased, its mark appended),
    `jsonl` (the input objects with `text`, `labels` and per-word `punctuated`),
    or a foundation format (text, kaldi_text, twocol, punctuator2, datadir; these
    keep IWSLT tokens for scoring, are collected in memory and need `-o`).
    """
    t0 = time.time()
    input_format = input_format or detect_input_format(src, encoding)
    if fmt not in OUTPUT_FORMATS:
        raise PunctkitError(f"unknown output format '{fmt}' (known: {', '.join(OUTPUT_FORMATS)})")
    if fmt in FORMATS and (out is None or str(out) == "-"):
        raise PunctkitError(f"--format {fmt} writes through punctkit's format writers: give -o FILE")
    if fmt == "ctm" and input_format not in ("ctm", "jsonl"):
        raise PunctkitError(f"--format ctm needs word times: input format ctm or jsonl, not {input_format}")
    inv = punct.inventory
    rules = default_substitution(inv)
    stats = PunctuateStats()
    collected: list[Utterance] = []
    name = source_name(src)

    if input_format == "text":
        stats.unit = "lines"

        def on_line(ln: Line, labels: list[str]) -> None:
            if fmt in FORMATS and ln.words:
                collected.append(Utterance(f"{name}-{ln.lineno:06d}", ln.words, labels))

        with _open_out(None if fmt in FORMATS else out) as f:
            for ln, text in _TextLines(punct, keep_input_marks, capitalize).run(
                    read_text_lines(src, inv, rules, encoding), on_line):
                stats.count(ln.words, punct.frontend)
                if fmt == "readable":
                    f.write(text + "\n")
                elif fmt == "jsonl":
                    f.write(json.dumps({"id": f"{name}-{ln.lineno:06d}", "text": text}, ensure_ascii=False) + "\n")
    elif input_format in ("kaldi_text", "ctm", "jsonl"):
        dropped = [0]
        if input_format == "kaldi_text":
            utts: Iterator[AsrUtterance] = read_kaldi_text(src, inv, rules, encoding)
        elif input_format == "ctm":
            utts = read_ctm(src, inv, rules, dropped, encoding)
        else:
            utts = read_jsonl(src, inv, rules, dropped, encoding)
        seen: deque[AsrUtterance] = deque()  # utterances waiting for their labels (at most one chunk)

        def feed() -> Iterator[tuple[list[str], Fixed | None]]:
            for u in utts:
                seen.append(u)
                yield u.words, _fixed(u.marks, keep_input_marks)

        with _open_out(None if fmt in FORMATS else out) as f:
            for labels in punct.label_utterances(feed()):
                u = seen.popleft()
                stats.count(u.words, punct.frontend)
                if fmt == "readable":
                    f.write(f"{u.uttid} {detokenize(u.words, labels, capitalize)}".rstrip() + "\n")
                elif fmt == "ctm":
                    f.writelines(line + "\n" for line in _ctm_lines(u, labels, capitalize, src))
                elif fmt == "jsonl":
                    f.write(_json_line(u, labels, capitalize) + "\n")
                elif u.words:
                    collected.append(Utterance(u.uttid, u.words, labels))
        stats.dropped_tokens = dropped[0]
    else:
        raise PunctkitError(f"unknown input format '{input_format}' (known: text, kaldi_text, ctm, jsonl)")
    if fmt in FORMATS:
        write(collected, out, fmt, inv)  # type: ignore[arg-type]
    stats.seconds = time.time() - t0
    return stats
