"""The model-agnostic trainer (`punctkit train`).

`train()` loads an `Experiment` once (the resolved config, the data's streams, the
frontend, the optional pre-trained embeddings, the audio inputs and the model
environment), builds its model (`build_model`, by name through the registry), then
`Trainer(model, TrainOptions, ...).fit()` runs epochs over random-offset windows,
validates on the dev set by overall F1 (punctkit.score) through the `validate`
callable it is given (decoding's: punctkit/fit.py; train/ never imports decode/),
checkpoints every epoch and finally writes `model.best.pt` and `model.avg.pt` (the
average of the best N epochs).

Experiment dir: `config.yaml` (resolved), `frontend/`, `inventory`,
`checkpoints/epoch_N.pt`, `history.json`, `model.best.pt`, `model.avg.pt`,
`train.log`. A run finding checkpoints there resumes from the last one, with
model, optimizer, schedule, RNG states, epoch and best score restored, so the
result equals that of an uninterrupted run with the same seed.

Multi-process training (DDP, `--ngpu N` or `--nproc N` CPU processes with
gloo): `train()` spawns the processes (or joins a torchrun group when RANK and
WORLD_SIZE are set); the model is wrapped only in `wrap_ddp`, the data split
only in `data.streams.shard`; rank 0 alone writes files and validates, and
broadcasts the dev score so every rank takes the same schedule/stop decisions.
"""
from __future__ import annotations

import contextlib
import inspect
import json
import math
import os
import socket
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from punctkit.data.datadir import read_data_dir
from punctkit.data.labels import CaseLexicon, LabelSet, O, mark_of
from punctkit.data.tokenize import iwslt_tokens
from punctkit.data.streams import (IGNORE, Extra, Stream, TimeDelay, WindowDataset, bucket_batches, make_streams,
                                   shard, train_windows)
from punctkit.batch import audio_extra, collate, wants_audio
from punctkit.config import DEFAULTS, load_config, save_config
from punctkit.expdir import epoch_checkpoints, load_checkpoint, pick_device
from punctkit.files import DirLock, PunctkitError, atomic_write, check_output_dir
from punctkit.models.base import PunctModel
from punctkit.models import registry
from punctkit.models.registry import model_needs
from punctkit.progress import progress
from punctkit.text.frontend import Frontend, load_frontend, train_frontend
from punctkit.train import checkpoint as ckpt
from punctkit.train.augment import AugmentOptions, Augmenter
from punctkit.train.distill import DistillOptions, distill_loss, soft_labels
from punctkit.train.losses import class_weights, make_loss
from punctkit.train.rdrop import rdrop_loss
from punctkit.train.schedules import Schedule, make_schedule
from punctkit.train.warm_start import warm_start

Callback = Callable[["Trainer"], None]
Validate = Callable[[PunctModel], list[list[int]]]  # a model -> the best label ids of each dev stream
# (the training config's `decode:` section, frontend, dev streams, device, audio extra, log) ->
# (Validate, that section resolved): decoding's side of validation (punctkit/fit.py passes it)
Validation = Callable[..., tuple[Validate, dict[str, Any]]]


@dataclass
class TrainOptions:
    """The `train:` section of a config, typed (its defaults and comments: punctkit/config.py)."""

    optimizer: str
    lr: float
    weight_decay: float
    betas: list[float]
    schedule: str
    warmup: int
    newbob_factor: float
    newbob_threshold: float
    min_lr: float
    batch_size: int
    window: int
    epochs: int
    max_minutes: float | None
    patience: int | None
    seed: int
    clip: float
    label_smoothing: float
    loss: str
    focal_gamma: float
    class_weights: str | list[float] | None
    n_average: int
    max_tokens: int | None
    threads: int
    rdrop: float
    precision: str
    distill: dict[str, Any]
    augment: dict[str, Any]
    init: Any
    lookahead: dict[str, Any] | None

    def __post_init__(self) -> None:
        check_numbers(self)
        self.time_delay = TimeDelay.from_option(self.lookahead)  # checked before any training

    @classmethod
    def from_section(cls, section: dict[str, Any]) -> "TrainOptions":
        """The options of a (possibly partial) `train:` section, the rest from the defaults."""
        return cls(**{**DEFAULTS["train"], **section})


# train option -> (whole number?, lowest value, lowest allowed?, highest value or None, may be null?)
NUMBER_RULES: dict[str, tuple[bool, float, bool, float | None, bool]] = {
    "lr": (False, 0, True, None, False), "weight_decay": (False, 0, True, None, False),
    "warmup": (True, 0, True, None, False), "newbob_factor": (False, 0, False, 1, False),
    "newbob_threshold": (False, float("-inf"), False, None, False), "min_lr": (False, 0, True, None, False),
    "batch_size": (True, 1, True, None, False), "window": (True, 1, True, None, False),
    "epochs": (True, 1, True, None, False), "max_minutes": (False, 0, False, None, True),
    "patience": (True, 1, True, None, True), "seed": (True, 0, True, None, False),
    "clip": (False, 0, True, None, False), "label_smoothing": (False, 0, True, 1, False),
    "focal_gamma": (False, 0, True, None, False), "n_average": (True, 1, True, None, False),
    "max_tokens": (True, 1, True, None, True), "threads": (True, 0, True, None, False),
    "rdrop": (False, 0, True, None, False),
}


def check_numbers(opts: TrainOptions) -> None:
    """A one-line error for a numeric `train:` option of the wrong type or out of range."""
    for name, (whole, low, low_ok, high, nullable) in NUMBER_RULES.items():
        v = getattr(opts, name)
        if v is None and nullable:
            continue
        kind = "a whole number" if whole else "a finite number"
        ok_type = isinstance(v, int) if whole else isinstance(v, (int, float)) and math.isfinite(v)
        if isinstance(v, bool) or not ok_type:
            hint = ""
            if isinstance(v, str):
                with contextlib.suppress(ValueError):
                    if math.isfinite(float(v)):
                        hint = f" (YAML reads {v} as text: write it with a point, e.g. {float(v):.1e})"
            raise PunctkitError(f"train.{name} must be {kind}{' or null' if nullable else ''}, got {v!r}{hint}")
        if v < low or (v == low and not low_ok) or (high is not None and v > high):
            span = f"{'>=' if low_ok else '>'} {low:g}" + (f" and <= {high:g}" if high is not None else "")
            raise PunctkitError(f"train.{name} must be {span}, got {v!r}")
    betas = opts.betas
    if not (isinstance(betas, (list, tuple)) and len(betas) == 2
            and all(isinstance(b, (int, float)) and not isinstance(b, bool) and 0 <= b < 1 for b in betas)):
        raise PunctkitError(f"train.betas must be two numbers in [0, 1), got {betas!r}")
    cw = opts.class_weights
    if not (cw is None or cw == "auto" or (isinstance(cw, list) and all(
            isinstance(w, (int, float)) and not isinstance(w, bool) and math.isfinite(w) and w >= 0 for w in cw))):
        raise PunctkitError(f"train.class_weights must be null, auto or a list of numbers >= 0, got {cw!r}")


@dataclass
class TrainState:
    """What a checkpoint records besides model/optimizer/schedule/RNG."""

    epoch: int = 0
    step: int = 0
    best_score: float | None = None
    best_epoch: int = 0
    bad_epochs: int = 0
    elapsed: float = 0.0          # seconds of training over all runs (max_minutes)
    stopped: str = ""             # why training ended early ("patience", "max_minutes")
    history: list[dict[str, Any]] = field(default_factory=list)


class Logger:
    """Lines to `train.log` (appended) and to stderr; with `hold`, the file gets them
    only from `release()` on (a resume that is refused leaves train.log as it was)."""

    def __init__(self, path: Path | None, quiet: bool = False, hold: bool = False):
        self.path, self.quiet = path, quiet
        self.held: list[str] | None = [] if hold else None

    def __call__(self, msg: str) -> None:
        line = f"{time.strftime('%Y-%m-%d %H:%M:%S')} {msg}"
        if self.held is not None:
            self.held.append(line)
        else:
            self._append([line])
        if not self.quiet:
            print(line, file=sys.stderr, flush=True)

    def _append(self, lines: list[str]) -> None:
        if self.path is not None and lines:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as f:
                f.writelines(ln + "\n" for ln in lines)

    def release(self) -> None:
        """Write the lines held so far, and every later one, to the file."""
        held, self.held = self.held or [], None
        self._append(held)


def seed_everything(seed: int) -> None:
    """Seed python, numpy and torch."""
    import random

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def ddp_net(model: torch.nn.Module, device: torch.device, world_size: int) -> torch.nn.Module:
    """What a training step calls: the model itself, or with more than one process its DDP wrapper."""
    return wrap_ddp(model, device) if world_size > 1 else model


def loss_weights(opts: TrainOptions, inventory: LabelSet, label_counts: list[int] | None) -> torch.Tensor | None:
    """Class weights of the loss: none, `auto` (from the training labels' counts) or the configured list."""
    if opts.class_weights == "auto":
        return class_weights(label_counts or [1] * len(inventory))
    if opts.class_weights is None:
        return None
    if len(opts.class_weights) != len(inventory):
        raise PunctkitError(f"train.class_weights has {len(opts.class_weights)} values for "
                            f"{len(inventory)} labels ({', '.join(inventory.labels)})")
    return torch.tensor(opts.class_weights, dtype=torch.float)


def wrap_ddp(model: torch.nn.Module, device: torch.device) -> torch.nn.Module:
    """The one place a model is wrapped for DDP (the trainer keeps the bare model for
    state dicts, validation and the optimizer's parameter groups)."""
    from torch.nn.parallel import DistributedDataParallel

    ids = [device.index] if device.type == "cuda" else None
    # models may leave parameters unused in a step (e.g. optional heads): let DDP find them
    return DistributedDataParallel(model, device_ids=ids, find_unused_parameters=True)


def make_optimizer(model: torch.nn.Module, opts: TrainOptions) -> torch.optim.Optimizer:
    """Adam / AdamW / AdaDelta over the trainable parameters."""
    # a model may split its parameters into groups with an `lr_scale` (e.g. pre-trained vs new layers)
    groups = model.param_groups() if hasattr(model, "param_groups") else [{"params": model.parameters()}]
    params = [dict(g, params=[p for p in g["params"] if p.requires_grad]) for g in groups]
    name = opts.optimizer.lower()
    if name == "adam":
        return torch.optim.Adam(params, lr=opts.lr, betas=tuple(opts.betas), weight_decay=opts.weight_decay)
    if name == "adamw":
        return torch.optim.AdamW(params, lr=opts.lr, betas=tuple(opts.betas), weight_decay=opts.weight_decay)
    if name == "adadelta":
        return torch.optim.Adadelta(params, lr=opts.lr, weight_decay=opts.weight_decay)
    raise PunctkitError(f"unknown optimizer '{opts.optimizer}' (known: adam, adamw, adadelta)")


def overall_f1(streams: list[Stream], hyps: list[list[int]], inventory: LabelSet) -> dict[str, Any]:
    """punctkit.score metrics (marks only, O excluded) of predicted label ids against the streams' labels."""
    from punctkit.score import confusion, metrics

    classes = [O] + list(inventory.marks)
    ref, hyp = [], []
    for s, h in zip(streams, hyps):
        for r, p in zip(s.labels, h):
            if r != IGNORE:
                ref.append(mark_of(inventory.labels[r]))
                hyp.append(mark_of(inventory.labels[p]))
    return metrics(confusion(ref, hyp, classes), classes)


def native_bf16(device: torch.device) -> bool:
    """Whether `device` computes bfloat16 natively (a CUDA GPU that supports it; a CPU with
    AVX-512 BF16 or AMX). Elsewhere torch emulates it, many times slower than fp32."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    if device.type == "cpu":
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    return False


def resolve_precision(precision: str, device: torch.device, log: Callable[[str], None] = print) -> str:
    """`train.precision` for this device: `auto` becomes bf16 or fp32 by `native_bf16`;
    an explicit bf16 without native support stays, with a warning."""
    native = native_bf16(device)
    if precision == "auto":
        chosen = "bf16" if native else "fp32"
        log(f"precision auto: {chosen} on {device} ({'native' if native else 'no native'} bfloat16)")
        return chosen
    if precision == "bf16" and not native:
        log(f"warning: train.precision bf16 on {device}, which has no native bfloat16: torch emulates it, "
            f"several times slower than fp32 (set train.precision to auto or fp32)")
    return precision


class Trainer:
    """Epoch loop over a built model; knows nothing of any model type."""

    def __init__(self, model: PunctModel, opts: TrainOptions, exp_dir: str | Path, train_set: WindowDataset,
                 inventory: LabelSet, valid_streams: list[Stream] | None = None, device: torch.device | str = "cpu",
                 log: Callable[[str], None] = print, label_counts: list[int] | None = None,
                 on_step: list[Callback] | None = None, on_epoch_end: list[Callback] | None = None,
                 rank: int = 0, world_size: int = 1, validate: Validate | None = None):
        self.model = model
        self.opts = opts
        self.exp = Path(exp_dir)
        self.ckpt_dir = self.exp / "checkpoints"
        self.train_set = train_set
        self.valid_streams = valid_streams
        self.validate_fn = validate
        self.inventory = inventory
        self.device = torch.device(device)
        self.log = log
        self.precision = resolve_precision(opts.precision, self.device, log if rank == 0 else lambda _: None)
        self.rank, self.world_size = rank, world_size
        self.net = ddp_net(model, self.device, world_size)  # what the training step calls
        self.on_step = on_step or []
        self.on_epoch_end = on_epoch_end or []
        self.optimizer = make_optimizer(model, opts)
        self.schedule: Schedule = make_schedule(opts.schedule, self.optimizer, opts.lr, warmup=opts.warmup,
                                                factor=opts.newbob_factor, threshold=opts.newbob_threshold,
                                                min_lr=opts.min_lr)
        self.loss_fn = make_loss(opts.loss, opts.label_smoothing, loss_weights(opts, inventory, label_counts),
                                 opts.focal_gamma)
        self.distill = DistillOptions.from_section(opts.distill)
        self.state = TrainState()
        self.last_loss = math.nan

    def autocast(self) -> torch.autocast:
        """bfloat16 autocast for `train.precision: bf16` (a no-op context for fp32)."""
        return torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.precision == "bf16")

    # --- checkpoints
    def save(self) -> None:
        """Write checkpoints/epoch_N.pt (rank 0 only) and history.json."""
        if self.rank != 0:
            return
        ckpt.save_checkpoint(self.ckpt_dir / f"epoch_{self.state.epoch}.pt", {
            "model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
            "schedule": self.schedule.state_dict(), "rng": ckpt.rng_state(), "state": asdict(self.state)})
        with atomic_write(self.exp / "history.json") as f:
            json.dump(self.state.history, f, indent=1)

    def resume(self) -> bool:
        """Restore everything from the last epoch checkpoint; False when there is none."""
        epochs = epoch_checkpoints(self.ckpt_dir)
        if not epochs:
            return False
        epoch, path = list(epochs.items())[-1]
        st = load_checkpoint(path, self.device)
        try:
            self.model.load_state_dict(st["model"])
            self.optimizer.load_state_dict(st["optimizer"])
        except (RuntimeError, ValueError, KeyError) as e:
            raise PunctkitError(f"{path}: does not match this config's model/optimizer "
                                f"({str(e).splitlines()[0][:100]})") from None
        self.schedule.load_state_dict(st["schedule"])
        ckpt.set_rng_state(st["rng"])
        self.state = TrainState(**st["state"])
        self.log(f"resumed from {path} (epoch {epoch}, best dev F1 {self.state.best_score})")
        self.extend()
        return True

    def extend(self) -> None:
        """Let a run that stopped early go on when the config now allows more (a larger
        `max_minutes` or `patience`, or none): the way to give a finished run more time."""
        st, t = self.state, self.opts
        more_time = t.max_minutes is None or st.elapsed < 60 * t.max_minutes
        more_patience = t.patience is None or st.bad_epochs < t.patience
        if (st.stopped == "max_minutes" and more_time) or (st.stopped == "patience" and more_patience):
            self.log(f"continuing a run stopped by {st.stopped}: the limit is now "
                     f"{t.max_minutes if st.stopped == 'max_minutes' else t.patience}")
            st.stopped = ""

    # --- loop
    def out_of_time(self, t0: float) -> bool:
        limit = self.opts.max_minutes
        if limit is None:
            return False
        late = self.state.elapsed + time.time() - t0 >= 60 * limit
        if self.world_size > 1:  # every rank must stop at the same step
            flag = torch.tensor([int(late)])
            torch.distributed.all_reduce(flag, op=torch.distributed.ReduceOp.MAX)
            late = bool(flag.item())
        return late

    def train_epoch(self, epoch: int, t0: float) -> float:
        """One pass over this epoch's windows; returns the mean loss."""
        t = self.opts
        self.train_set.set_windows(train_windows(self.train_set.streams, t.window, t.seed, epoch,
                                                 t.time_delay), epoch)
        lengths = [self.train_set.n_words(i) for i in range(len(self.train_set))]
        order = shard(bucket_batches(lengths, t.batch_size, True, t.seed * 1000 + epoch), self.rank,
                      self.world_size)
        self.model.train()
        total, n = 0.0, 0
        bar = progress(order, show=self.rank == 0, desc=f"epoch {epoch}", unit="batch", leave=False)
        for idx in bar:
            batch = {k: v.to(self.device) for k, v in
                     collate([self.train_set[i] for i in idx], self.train_set.frontend.pad_id).items()}
            with self.autocast():
                if t.rdrop:
                    loss, logits = rdrop_loss(self.net, batch, self.loss_fn, t.rdrop)
                else:
                    logits = self.net(batch)
                    loss = self.loss_fn(logits, batch["labels"])
                if self.distill is not None:
                    loss = distill_loss(loss, logits, batch["soft"], self.distill)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if t.clip:
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), t.clip)
            self.optimizer.step()
            self.schedule.on_step()
            self.state.step += 1
            total += loss.item()
            n += 1
            self.last_loss = total / n
            bar.set_postfix(loss=f"{total / n:.4f}", lr=f"{self.schedule.lr:.2e}", refresh=False)
            for cb in self.on_step:
                cb(self)
            if self.out_of_time(t0):
                self.state.stopped = "max_minutes"
                break
        bar.close()
        if self.world_size > 1:  # the mean over all ranks' batches
            acc = torch.tensor([total, float(n)], dtype=torch.float64)
            torch.distributed.all_reduce(acc)
            total, n = acc[0].item(), int(acc[1].item())
        return total / max(n, 1)

    def validate(self) -> dict[str, Any] | None:
        """Decode the dev streams (windows as in decoding) and score them; with DDP rank 0
        decodes and the others receive its metrics."""
        if self.world_size > 1:
            box = [self._validate() if self.rank == 0 else None]
            torch.distributed.broadcast_object_list(box, src=0)
            return box[0]
        return self._validate()

    def _validate(self) -> dict[str, Any] | None:
        if not self.valid_streams or self.validate_fn is None:
            return None
        with self.autocast():
            hyps = self.validate_fn(self.model)
        return overall_f1(self.valid_streams, hyps, self.inventory)

    def fit(self) -> TrainState:
        """Train until the epoch limit, patience or max_minutes; then write best and averaged models."""
        t = self.opts
        t0 = time.time()
        st = self.state
        while st.epoch < t.epochs and not st.stopped:
            epoch = st.epoch + 1
            loss = self.train_epoch(epoch, t0)
            m = self.validate()
            score = m["overall"]["f1"] if m else None
            self.schedule.on_epoch(score)
            st.epoch = epoch
            st.elapsed += time.time() - t0
            t0 = time.time()
            improved = score is not None and (st.best_score is None or score > st.best_score)
            if improved or score is None:
                st.best_score, st.best_epoch, st.bad_epochs = score, epoch, 0
            else:
                st.bad_epochs += 1
            st.history.append({"epoch": epoch, "loss": loss, "valid_f1": score, "lr": self.schedule.lr,
                               "valid_ser": m["SER"] if m else None, "steps": st.step,
                               "minutes": round(st.elapsed / 60, 2)})
            f1 = f"{score:.2f}" if score is not None else "-"
            self.log(f"epoch {epoch}: train loss {loss:.4f}, dev F1 {f1}, lr {self.schedule.lr:.3g}, "
                     f"{st.step} steps, {st.elapsed / 60:.1f} min{' (best)' if improved else ''}")
            if t.patience is not None and st.bad_epochs >= t.patience:
                st.stopped = "patience"
            if self.out_of_time(t0):
                st.stopped = st.stopped or "max_minutes"
            self.save()
            for cb in self.on_epoch_end:
                cb(self)
        if st.stopped:
            self.log(f"stopped: {st.stopped} after epoch {st.epoch}")
        self.finish()
        return st

    def finish(self) -> None:
        """model.best.pt (best dev F1) and model.avg.pt (mean of the best `n_average` epochs)."""
        if self.rank != 0:
            return
        epochs = epoch_checkpoints(self.ckpt_dir)
        hist = [h for h in self.state.history if h["epoch"] in epochs]
        if not hist:
            return
        best = ckpt.best_epochs(hist, 1)[0]
        ckpt.save_checkpoint(self.exp / "model.best.pt", {"model": load_checkpoint(epochs[best])["model"],
                                                          "epoch": best})
        chosen = ckpt.best_epochs(hist, max(1, self.opts.n_average))
        ckpt.average_checkpoints([epochs[e] for e in chosen], self.exp / "model.avg.pt")
        self.log(f"model.best.pt = epoch {best}; model.avg.pt = average of epochs {chosen}")


# ------------------------------------------------------------------ setup from a config

INPUTS_FILES = ("frontend/", "w2v.txt", "plm_vectors.txt")  # what prepare_inputs writes


def prepare_inputs(conf: dict[str, Any], train_dir: str | Path, out_dir: str | Path,
                   log: Callable[[str], None] = print, overwrite: bool = False) -> Frontend:
    """Stage 3: build the frontend into `out_dir/frontend` and the word vectors the config
    derives (`embeddings: {w2v_train: ...}` or `{plm_vectors: ...}`, see `derived_vectors`).
    `out_dir` may hold only these unless `overwrite` (other files are kept either way)."""
    out = Path(out_dir)
    check_output_dir(out, INPUTS_FILES, overwrite=overwrite, inputs=[train_dir])
    dd = read_data_dir(train_dir)
    fe = build_frontend(conf, dd, out / "frontend", overwrite, log)
    derived_vectors(conf["embeddings"], dd, out, log)
    return fe


def build_frontend(conf: dict[str, Any], dd: Any, out: Path, overwrite: bool = False,
                   log: Callable[[str], None] = print) -> Frontend:
    """The config's frontend learned from data dir `dd` into `out`. True-case data (exact forms in its
    text) give a frontend that reads words lower-cased and holds the case lexicon of their Mixed forms."""
    fconf = dict(conf["frontend"] or {})
    if dd.inventory.true_case:
        fconf["lowercase"] = True
    sentences = _sentences(dd)
    if "split_contractions" not in fconf and iwslt_tokens(w for s in sentences for w in s):
        fconf["split_contractions"] = True
        log("the training text has IWSLT's split contractions (do n't, i 'm): readers split users' words so")
    fe = train_frontend(fconf, sentences, out, overwrite=overwrite)
    if dd.inventory.true_case:
        fe.case_lexicon = CaseLexicon.build(w for u in dd.utterances for w in u.words)
        fe.save(out, overwrite=True)
        log(f"case lexicon: {len(fe.case_lexicon)} Mixed-case words -> {out / CaseLexicon.FILE}")
    log(f"frontend {fe.kind}: {fe.vocab_size} tokens -> {out}")
    return fe


DERIVED_VECTORS = {"w2v_train": "w2v.txt", "plm_vectors": "plm_vectors.txt"}


def derived_vectors(econf: dict[str, Any], dd: Any, out: Path, log: Callable[[str], None] = print,
                    look_in: tuple[Path, ...] = ()) -> Path | None:
    """The word vectors an `embeddings:` section derives from the training data: word2vec trained
    on its text (`w2v_train`), or static vectors of its words from a pre-trained LM (`plm_vectors`),
    written to `out`/w2v.txt or plm_vectors.txt; a file already in one of `look_in` is used as it
    is (training reuses stage 3's; stage 3 always rebuilds). None when the section derives none."""
    key = next((k for k in DERIVED_VECTORS if econf.get(k) is not None), None)
    if key is None:
        return None
    for d in look_in:
        if (d / DERIVED_VECTORS[key]).is_file():
            return d / DERIVED_VECTORS[key]
    path = out / DERIVED_VECTORS[key]
    opts = dict(econf[key] or {})
    from punctkit.text.embeddings import plm_word_vectors, train_word2vec

    make = train_word2vec if key == "w2v_train" else plm_word_vectors
    known = [k for k in inspect.signature(make).parameters if k not in ("sentences", "out", "show")]
    bad = [k for k in opts if k not in known]
    if bad:
        raise PunctkitError(f"embeddings.{key}: unknown option(s) {', '.join(bad)} (known: {', '.join(known)})")
    if key == "plm_vectors":
        opts["show"] = True
    n = make(_sentences(dd), path, **opts)
    log(f"{key}: {n} words -> {path}")
    return path


def _sentences(dd: Any) -> list[list[str]]:
    """Training text for frontends and word vectors: each utterance's words (sentencepiece skips very long
    lines), lower-cased for true-case data (the model reads words lower-cased: `Frontend.lowercase`)."""
    if dd.inventory.true_case:
        return [[w.lower() for w in u.words] for u in dd.utterances if u.words]
    return [u.words for u in dd.utterances if u.words]


def _embeddings(conf: dict[str, Any], frontend: Frontend, inputs: Path, exp: Path, dd: Any,
                log: Callable[[str], None]) -> np.ndarray | None:
    econf = dict(conf["embeddings"])
    if not econf.get("word"):
        path = derived_vectors(econf, dd, exp, log, look_in=(inputs, exp))
        if path is not None:
            econf["word"] = str(path)
    if not (econf.get("word") or econf.get("speech")):
        return None
    tokens = getattr(getattr(frontend, "vocab", None), "tokens", None)
    if frontend.kind != "word" or tokens is None:
        raise PunctkitError(f"pre-trained word/speech vectors need the 'word' frontend, not '{frontend.kind}'")
    from punctkit.text.embeddings import build_matrix

    return build_matrix(econf, tokens, frontend.pad_id, conf["train"]["seed"], log)


def _audio_extra(conf: dict[str, Any], train_dir: str | Path, valid_dir: str | Path | None,
                 log: Callable[[str], None]) -> Extra | None:
    """Audio inputs from the data dirs' feats.scp when the config or the model asks (`audio.use`, resolved)."""
    if not conf["audio"]["use"]:
        return None
    extra = audio_extra(train_dir, valid_dir)
    log(f"audio: {extra.feat_dim}-dim features from {', '.join(str(s.path) for s in extra.sources)}")
    return extra


def train(config: str | Path | dict[str, Any], train_dir: str | Path, valid_dir: str | Path | None,
          exp_dir: str | Path, ngpu: int = 0, resume: bool | None = None, overrides: list[str] | tuple = (),
          inputs_dir: str | Path | None = None, extra: Extra | None = None, quiet: bool = False,
          on_step: list[Callback] | None = None, on_epoch_end: list[Callback] | None = None,
          nproc: int = 1, force: bool = False, validation: Validation | None = None) -> TrainState:
    """`punctkit train`: config + data dirs -> a self-contained model dir `exp_dir`.

    resume: None resumes when checkpoints exist; False refuses to touch an
    experiment that has checkpoints. `inputs_dir` holds stage 3's frontend/ and w2v.txt.
    `ngpu > 1` (one process per GPU, nccl) or `nproc > 1` (CPU processes, gloo) trains
    with DDP; under torchrun (RANK and WORLD_SIZE set) this process joins that group.
    The run holds `exp_dir/.lock` throughout (the launching process, or rank 0 under
    torchrun): a second run into the same `exp_dir` fails naming the holder; a lock
    from a process that is gone is taken over; `force` takes any lock (another host's).
    """
    run = RunArgs(config, train_dir, valid_dir, exp_dir, ngpu, resume, list(overrides), inputs_dir, extra, quiet,
                  on_step, on_epoch_end, validation)
    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and "RANK" in os.environ:  # started by torchrun
        return _ddp_process(int(os.environ.get("LOCAL_RANK", os.environ["RANK"])), int(os.environ["WORLD_SIZE"]),
                            run, int(os.environ["RANK"]), lock_force=force)
    world = world_size_of(ngpu, nproc)
    conf = load_config(config, overrides)  # a bad config fails here, before the lock makes exp_dir
    model_needs(conf["model"])
    TrainOptions.from_section(conf["train"])
    with exp_lock(exp_dir, force, quiet):
        if world == 1:
            return _train_process(run)
        master = (os.environ.get("MASTER_ADDR", "127.0.0.1"), os.environ.get("MASTER_PORT") or str(_free_port()))
        try:
            torch.multiprocessing.spawn(_ddp_process, args=(world, run, None, master), nprocs=world, join=True)
        except torch.multiprocessing.ProcessRaisedException as e:
            msg = [ln for ln in str(e).splitlines() if ln.startswith("punctkit.files.PunctkitError: ")]
            if msg:
                raise PunctkitError(msg[-1].split(": ", 1)[1]) from None
            raise
        return _final_state(Path(exp_dir))


def exp_lock(exp_dir: str | Path, force: bool = False, quiet: bool = False) -> DirLock:
    """The lock a training run holds on its experiment directory (taking it over is logged)."""
    return DirLock(exp_dir, force, Logger(Path(exp_dir) / "train.log", quiet), what="punctkit train")


def world_size_of(ngpu: int, nproc: int) -> int:
    """Number of DDP processes for `--ngpu` / `--nproc` (checked against the visible GPUs)."""
    if nproc < 1:
        raise PunctkitError(f"--nproc must be at least 1, got {nproc}")
    if ngpu > 0 and nproc > 1 and nproc != ngpu:
        raise PunctkitError(f"--nproc {nproc} with --ngpu {ngpu}: with GPUs there is one process per GPU")
    if ngpu > 1 and torch.cuda.device_count() < ngpu:
        raise PunctkitError(f"--ngpu {ngpu} but {torch.cuda.device_count()} CUDA device(s) are visible")
    return max(ngpu, nproc)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ddp_process(local_rank: int, world: int, run: RunArgs, rank: int | None = None,
                 master: tuple[str, str] | None = None, lock_force: bool | None = None) -> TrainState:
    """One DDP process: join the group (env:// rendezvous at `master` = (address, port)), train its shard, leave.

    `lock_force` not None (torchrun, where no launcher of ours holds the exp lock): rank 0
    takes the lock and tells every rank whether it got it."""
    rank = local_rank if rank is None else rank
    if master:
        os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = master
    cuda = run.ngpu > 0
    device = torch.device("cuda", local_rank) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    torch.distributed.init_process_group("nccl" if cuda else "gloo", rank=rank, world_size=world)
    lock = None
    try:
        if lock_force is not None:
            box: list[str | None] = [None]
            if rank == 0:
                lock = exp_lock(run.exp_dir, lock_force, run.quiet)
                try:
                    lock.acquire()
                except PunctkitError as e:
                    box[0] = str(e)
            torch.distributed.broadcast_object_list(box, src=0)
            if box[0] is not None:
                raise PunctkitError(box[0])
        state = _train_process(run, rank=rank, world_size=world, device=device)
        # leave together: rank 0 still writes model.avg.pt, and a gloo rank that tears its
        # group down while a peer is busy with it can abort (seen on CI as SIGABRT in rank 1)
        torch.distributed.barrier()
        return state
    finally:
        if lock is not None:
            lock.release()
        torch.distributed.destroy_process_group()


def _final_state(exp: Path) -> TrainState:
    """The TrainState of a finished run (from its last epoch checkpoint; spawned processes return nothing)."""
    epochs = epoch_checkpoints(exp / "checkpoints")
    return TrainState(**load_checkpoint(list(epochs.values())[-1])["state"]) if epochs else TrainState()


@dataclass
class RunArgs:
    """What `train()` was asked to do, passed whole to each process."""

    config: str | Path | dict[str, Any]
    train_dir: str | Path
    valid_dir: str | Path | None
    exp_dir: str | Path
    ngpu: int = 0
    resume: bool | None = None
    overrides: list[str] = field(default_factory=list)
    inputs_dir: str | Path | None = None
    extra: Extra | None = None
    quiet: bool = False
    on_step: list[Callback] | None = None
    on_epoch_end: list[Callback] | None = None
    validation: Validation | None = None


@dataclass
class Experiment:
    """A training run's setup, loaded once: the resolved config, the label inventory, the
    frontend, the streams, the audio inputs and the model environment (what the data decides
    of the model: build_model's `vocab_size`, `n_labels`, `pad_id`, `embeddings`, `feat_dim`)."""

    dir: Path
    conf: dict[str, Any]
    inventory: LabelSet
    frontend: Frontend
    train_streams: list[Stream]
    valid_streams: list[Stream] | None
    extra: Extra | None
    env: dict[str, Any]

    def resolved(self) -> dict[str, Any]:
        """The `resolved:` section of config.yaml: what decoding needs to rebuild the model."""
        emb = self.env["embeddings"]
        env = {k: v for k, v in self.env.items() if k != "embeddings"}
        return {"inventory": self.inventory.name,
                "env": {**env, "embeddings_shape": list(emb.shape) if emb is not None else None}}


def build_model(exp: Experiment, device: torch.device) -> PunctModel:
    """The experiment's model (by name, through the registry), on `device`."""
    return registry.build_model(exp.conf["model"], **exp.env).to(device)


def resume_policy(exp: Path, resume: bool | None) -> bool:
    """Whether this run resumes: it does when `exp` has epoch checkpoints, unless `resume` is
    False, which refuses such an experiment."""
    has_ckpt = bool(epoch_checkpoints(exp / "checkpoints"))
    if has_ckpt and resume is False:
        raise PunctkitError(f"{exp}: has checkpoints; resume it, or remove it / choose another --exp")
    return has_ckpt


def check_resumable(exp: Path, train_dir: str | Path, inventory: LabelSet) -> None:
    """A resumed experiment must have the data's inventory and its frontend (checked before anything is written)."""
    if (exp / "inventory").is_file() and (exp / "inventory").read_text().strip() != inventory.name:
        raise PunctkitError(f"{train_dir}: label inventory {inventory.name} differs from {exp / 'inventory'} "
                            f"of the checkpoints in {exp / 'checkpoints'}; choose another --exp")
    if not (exp / "frontend" / "frontend.yaml").is_file():
        raise PunctkitError(f"{exp}: has checkpoints but no frontend/frontend.yaml to resume with; "
                            f"choose another --exp")


def read_run_config(run: RunArgs, exp: Path, resuming: bool,
                    log: Callable[[str], None]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The run's config (overrides applied, `audio.use` resolved), and the saved config.yaml
    of a resumed experiment (read once; a difference is logged)."""
    conf = load_config(run.config, run.overrides)
    conf["audio"]["use"] = wants_audio(conf, model_needs(conf["model"]))  # resolved, as saved in config.yaml
    saved = load_config(exp / "config.yaml") if resuming and (exp / "config.yaml").is_file() else None
    if saved is not None:
        bare = {k: v for k, v in saved.items() if k != "resolved"}
        if {k: v for k, v in conf.items() if k != "resolved"} != bare:
            log(f"warning: {run.config} differs from {exp / 'config.yaml'}; resuming with the new one")
    if "freeze" in conf["embeddings"]:  # `embeddings.freeze` is the model's `freeze_embeddings`
        conf["model"].setdefault("freeze_embeddings", bool(conf["embeddings"]["freeze"]))
    return conf, saved


def load_frontend_for(run: RunArgs, exp: Path, conf: dict[str, Any], dd: Any) -> Frontend:
    """The experiment's frontend, else stage 3's (copied in), else one trained on the data now."""
    inputs = Path(run.inputs_dir) if run.inputs_dir else exp
    if (exp / "frontend" / "frontend.yaml").is_file():
        return load_frontend(exp / "frontend")
    if run.inputs_dir and (inputs / "frontend" / "frontend.yaml").is_file():
        frontend = load_frontend(inputs / "frontend")
        frontend.save(exp / "frontend")
        return frontend
    return build_frontend(conf, dd, exp / "frontend", log=lambda _: None)


def load_experiment(run: RunArgs, conf: dict[str, Any], saved: dict[str, Any] | None, resuming: bool,
                    log: Callable[[str], None], rank: int = 0, world_size: int = 1) -> Experiment:
    """Read the data and the frontend, and make the embeddings and audio inputs, once (`conf`
    and the `saved` config.yaml of a resumed run: `read_run_config`).

    With DDP, rank 0 writes the frontend (and word vectors) first; the others then read them.
    """
    exp = Path(run.exp_dir)
    t = conf["train"]
    dd = read_data_dir(run.train_dir)
    inventory = dd.inventory
    vd = read_data_dir(run.valid_dir) if run.valid_dir else None
    if vd is not None and vd.inventory.name != inventory.name:
        raise PunctkitError(f"{run.valid_dir}: label inventory {vd.inventory.name} differs from the training "
                            f"data's {inventory.name} ({run.train_dir})")
    if resuming:
        check_resumable(exp, run.train_dir, inventory)
    if rank > 0:
        torch.distributed.barrier()
    frontend = load_frontend_for(run, exp, conf, dd)
    train_streams = make_streams(dd, inventory)
    valid_streams = make_streams(vd, inventory) if vd else None
    words = [w for s in train_streams for w in s.words]
    log(f"train: {len(train_streams)} streams, {len(words)} words; frontend {frontend.kind} "
        f"({frontend.vocab_size} tokens, {100 * frontend.unk_rate(words):.1f}% words with <unk>); "
        f"labels {inventory.name}")
    seed_everything(t["seed"])
    if resuming:
        shape = ((saved or {}).get("resolved", {}).get("env", {}).get("embeddings_shape")
                 if conf["embeddings"] else None)
        emb = np.zeros(shape, dtype=np.float32) if shape else None  # the checkpoint holds the weights
    else:
        inputs = Path(run.inputs_dir) if run.inputs_dir else exp
        emb = _embeddings(conf, frontend, inputs, exp, dd, log)
    if rank == 0 and world_size > 1:
        torch.distributed.barrier()
    extra = run.extra if run.extra is not None else _audio_extra(conf, run.train_dir, run.valid_dir, log)
    env = {"vocab_size": frontend.vocab_size, "n_labels": len(inventory), "pad_id": frontend.pad_id,
           "embeddings": emb, "feat_dim": getattr(extra, "feat_dim", None)}
    return Experiment(exp, conf, inventory, frontend, train_streams, valid_streams, extra, env)


def train_soft_labels(opts: TrainOptions, exp: Experiment, train_dir: str | Path,
                      log: Callable[[str], None]) -> list[np.ndarray] | None:
    """The teacher's rows of every training stream (`train.distill.probs`), or None without distillation."""
    d = DistillOptions.from_section(opts.distill)
    if d is None:
        return None
    soft = soft_labels(d.probs, exp.train_streams, len(exp.inventory), train_dir, exp.inventory.name)
    log(f"distill: soft labels of {sum(len(x) for x in soft)} words from {d.probs} "
        f"(weight {d.weight}, temperature {d.temperature})")
    return soft


def augmenter(opts: TrainOptions) -> Augmenter | None:
    """The training windows' noise (`train.augment`), or None when its rates are 0."""
    a = AugmentOptions.from_section(opts.augment)
    return Augmenter(a, opts.seed) if a is not None else None


def _train_process(run: RunArgs, rank: int = 0, world_size: int = 1,
                   device: torch.device | None = None) -> TrainState:
    """The training run of one process (all of it when there is a single process).

    A resume writes nothing (train.log lines are held) until every check has passed:
    the data's inventory, the frontend and the last checkpoint against this config's model.
    """
    exp_dir = Path(run.exp_dir)
    resuming = resume_policy(exp_dir, run.resume)
    exp_dir.mkdir(parents=True, exist_ok=True)
    log = Logger(exp_dir / "train.log", run.quiet, hold=resuming) if rank == 0 else Logger(None, quiet=True)
    conf, saved = read_run_config(run, exp_dir, resuming, log)
    opts = TrainOptions.from_section(conf["train"])
    if opts.threads:
        torch.set_num_threads(int(opts.threads))
    device = device or pick_device(run.ngpu)
    log(f"punctkit train: {run.train_dir} (dev {run.valid_dir}) -> {exp_dir} on {device}"
        + (f" x {world_size} processes (DDP)" if world_size > 1 else ""))
    exp = load_experiment(run, conf, saved, resuming, log, rank, world_size)
    model = build_model(exp, device)
    n_params = sum(p.numel() for p in model.parameters())
    n_train = sum(p.numel() for p in model.parameters() if p.requires_grad)
    log(f"model {conf['model']['type']}: {n_params} parameters ({n_train} trainable)")
    if opts.init and not resuming:
        warm_start(model, opts.init, log)  # before DDP wraps it and the optimizer sees it
    conf["resolved"] = exp.resolved()
    validate = None
    if run.validation is not None and exp.valid_streams:
        validate, conf["decode"] = run.validation(conf["decode"], exp.frontend, exp.valid_streams, device,
                                                  exp.extra, log)
    counts = np.bincount([x for s in exp.train_streams for x in s.labels if x != IGNORE],
                         minlength=len(exp.inventory))
    train_set = WindowDataset(exp.train_streams, exp.frontend, extra=exp.extra, max_tokens=opts.max_tokens,
                              soft=train_soft_labels(opts, exp, run.train_dir, log), augment=augmenter(opts))
    trainer = Trainer(model, opts, exp_dir, train_set, exp.inventory, exp.valid_streams, device, log,
                      counts.tolist(), run.on_step, run.on_epoch_end, rank=rank, world_size=world_size,
                      validate=validate)
    if resuming:
        trainer.resume()  # the last check: a refused resume has written nothing
    if rank == 0:
        log.release()
        save_config(conf, exp_dir / "config.yaml")
        with atomic_write(exp_dir / "inventory") as f:
            f.write(exp.inventory.name + "\n")
    return trainer.fit()
