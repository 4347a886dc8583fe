"""The model-agnostic trainer (`punctkit train`).

`train()` loads an `Experiment` once (the resolved config, the data's streams, the
frontend, the optional pre-trained embeddings, the audio inputs and the model
environment), builds its model (`build_model`, by name through the registry), then
`Trainer(model, TrainOptions, ...).fit()` runs epochs over random-offset windows,
validates on the dev set by overall F1 (punctkit.score) through the `validate`
callable it is given (decoding's: punctkit/fit.py; train/ never imports decode/, nor package/,
whose `PackageStart` of a `train.init: model.pkt` fit.py hands it too),
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

The rest of a run, one concern a module: options.py (`TrainOptions`, the rules of its values),
inputs.py (stage 3: the frontend, the case lexicon, derived word vectors), experiment.py (the
experiment directory: lock, log, resume policy, config, the data loaded once) and ddp.py (the
processes: spawned or joined, the DDP wrapper, a failed process's exception).
"""
from __future__ import annotations

import json
import math
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from punctkit.batch import collate
from punctkit.config import load_config
from punctkit.data.boundaries import window_boundaries
from punctkit.data.labels import LabelSet, O, mark_of
from punctkit.data.streams import IGNORE, Extra, Stream, WindowDataset, join_extras
from punctkit.expdir import EPOCH_TMP_RE, epoch_checkpoints, load_checkpoint, pick_device
from punctkit.files import PunctkitError, atomic_write, require_file
from punctkit.models.base import PunctModel
from punctkit.models.registry import model_needs
from punctkit.progress import progress
from punctkit.text.frontend import check_frontend_section
from punctkit.train import checkpoint as ckpt
from punctkit.train.boundary_input import BoundaryInput, reads_boundaries
from punctkit.train.ddp import ddp_net, ddp_process, spawn, torchrun_member, world_size_of
from punctkit.train.distill import DistillOptions, distill_loss
from punctkit.train.epochs import epoch_batches, passes_done
from punctkit.train.experiment import (
    Callback,
    RunArgs,
    Validate,
    Validation,
    augmenter,
    build_model,
    check_data_dirs,
    exp_lock,
    load_experiment,
    read_run_config,
    record_config,
    resume_checkpoint,
    resume_policy,
    run_log,
    train_soft_labels,
)
from punctkit.train.losses import make_loss
from punctkit.train.options import TrainOptions, loss_weights, resolve_precision
from punctkit.train.rdrop import rdrop_loss
from punctkit.train.schedules import Schedule, make_schedule
from punctkit.train.warm_start import PackageStart, check_start, warm_start


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
    data_pass: int = 0            # with train.iters_per_epoch: the pass under way (train/epochs.py),
    pass_batches: int = 0         # its batches trained
    pass_size: int = 0            # and its batches in all
    history: list[dict[str, Any]] = field(default_factory=list)


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
        self.prune()

    def repair_history(self) -> None:
        """After a resume: history.json as the checkpoint resumed from records it (its `state.history`),
        when they differ (a run killed between the checkpoint's rename and history.json's left
        history.json an epoch behind; a finished run rewrites it nowhere else)."""
        if self.rank != 0 or not self.state.history:  # a checkpoint with no record leaves the file alone
            return
        path = self.exp / "history.json"
        text = json.dumps(self.state.history, indent=1)  # as `save` writes it
        try:
            current = path.read_text(encoding="utf-8") if path.is_file() else None
        except (OSError, UnicodeDecodeError):
            current = None  # unreadable: replaced by the record
        if current != text:
            with atomic_write(path) as f:
                f.write(text)
            self.log(f"history.json: repaired from the checkpoint of epoch {self.state.epoch} "
                     f"({len(self.state.history)} epochs)")

    def remove_stale_temporaries(self) -> None:
        """Remove the temporary files of epoch checkpoints that a killed run left in checkpoints/
        (`.epoch_N.pt.XXXXXXXX.tmp`, atomic_write's names; this run holds the experiment's lock, so
        no other run is writing them); nothing else is touched."""
        if self.rank != 0 or not self.ckpt_dir.is_dir():
            return
        stale = [p for p in self.ckpt_dir.iterdir()
                 if EPOCH_TMP_RE.match(p.name) and p.is_file() and not p.is_symlink()]
        for p in stale:
            p.unlink(missing_ok=True)
        if stale:
            self.log(f"removed {len(stale)} unfinished checkpoint file(s) of a killed run from {self.ckpt_dir}")

    def prune(self) -> None:
        """With `keep_checkpoints: N`, remove the epoch checkpoints that are neither among the best
        max(N, n_average) by dev F1 nor the last (only `epoch_K.pt` files, which this trainer wrote)."""
        n = self.opts.keep_checkpoints
        if n is None:
            return
        epochs = epoch_checkpoints(self.ckpt_dir)
        hist = [h for h in self.state.history if h["epoch"] in epochs]
        keep = set(ckpt.best_epochs(hist, max(n, self.opts.n_average))) | {self.state.epoch}
        for e, path in epochs.items():
            if e not in keep:
                path.unlink()

    def resume(self, loaded: tuple[Path, dict[str, Any]] | None = None) -> bool:
        """Restore everything from the last epoch checkpoint (`loaded`: that checkpoint's path and
        contents, when already read); False when there is none."""
        epochs = epoch_checkpoints(self.ckpt_dir)
        if not epochs:
            return False
        epoch, path = list(epochs.items())[-1]
        st = loaded[1] if loaded is not None and loaded[0] == path else load_checkpoint(path, self.device)
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
        order, size = epoch_batches(self.train_set, t, self.state, epoch, self.rank, self.world_size)
        self.model.train()
        total, n = 0.0, 0
        bar = progress(order, show=self.rank == 0, desc=f"epoch {epoch}", unit="batch", leave=False, total=size)
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
            passes = ""
            if t.iters_per_epoch is not None:
                st.history[-1]["passes"] = round(passes_done(st), 4)
                passes = f" ({st.history[-1]['passes']:.2f} passes over the data)"
            f1 = f"{score:.2f}" if score is not None else "-"
            self.log(f"epoch {epoch}: train loss {loss:.4f}, dev F1 {f1}, lr {self.schedule.lr:.3g}, "
                     f"{st.step} steps{passes}, {st.elapsed / 60:.1f} min{' (best)' if improved else ''}")
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


# ------------------------------------------------------------------ a run

def train_process(run: RunArgs, rank: int = 0, world_size: int = 1,
                  device: torch.device | None = None) -> TrainState:
    """The training run of one process (all of it when there is a single process).

    A resume writes nothing (train.log lines are held) until every check has passed:
    the data's inventory, the frontend and the last checkpoint against this config's model.
    """
    exp_dir = Path(run.exp_dir)
    resuming = resume_policy(exp_dir, run.resume)
    exp_dir.mkdir(parents=True, exist_ok=True)
    log = run_log(exp_dir, rank, run.quiet, resuming)
    conf, saved = read_run_config(run, exp_dir, resuming, log)
    opts = TrainOptions.from_section(conf["train"])
    check_start(conf, run.start)
    if reads_boundaries(conf["model"]) and augmenter(opts) is not None:
        raise PunctkitError("train.augment inserts and deletes words, which moves their turns and pauses: it "
                            "cannot be used with model.boundary_input; drop one of them")
    if opts.threads:
        torch.set_num_threads(int(opts.threads))
    device = device or pick_device(run.ngpu)
    log(f"punctkit train: {run.train_dir} (dev {run.valid_dir}) -> {exp_dir} on {device}"
        + (f" x {world_size} processes (DDP)" if world_size > 1 else ""))
    exp = load_experiment(run, conf, saved, resuming, log, rank, world_size)
    loaded = resume_checkpoint(exp) if resuming else None  # checked against this config before it is built
    model = build_model(exp, device)
    n_params = sum(p.numel() for p in model.parameters())
    n_train = sum(p.numel() for p in model.parameters() if p.requires_grad)
    log(f"model {conf['model']['type']}: {n_params} parameters ({n_train} trainable)")
    if opts.init and not resuming:
        warm_start(model, opts.init, log, run.start)  # before DDP wraps it and the optimizer sees it
    conf["resolved"] = exp.resolved()
    bounded = reads_boundaries(conf["model"])  # the model reads the boundary after each word
    validate = None
    if run.validation is not None and exp.valid_streams:
        valid_extra = exp.extra
        if bounded:  # every stream's turns and times, all known
            valid_extra = join_extras(exp.extra, window_boundaries(BoundaryInput(exp.valid_streams)))
        validate, conf["decode"] = run.validation(conf["decode"], exp.frontend, exp.valid_streams, device,
                                                  valid_extra, log, exp.inventory)
    counts = np.bincount([x for s in exp.train_streams for x in s.labels if x != IGNORE],
                         minlength=len(exp.inventory))
    train_set = WindowDataset(exp.train_streams, exp.frontend, extra=exp.extra, max_tokens=opts.max_tokens,
                              soft=train_soft_labels(opts, exp, run.train_dir, log), augment=augmenter(opts))
    if bounded:  # each pass's windows read their streams' turns and times, some dropped (train.boundary_dropout)
        ids = BoundaryInput(exp.train_streams, opts.boundary_drop, opts.seed, epoch=lambda: train_set.epoch)
        train_set.extra = join_extras(exp.extra, window_boundaries(ids))
    trainer = Trainer(model, opts, exp_dir, train_set, exp.inventory, exp.valid_streams, device, log,
                      counts.tolist(), run.on_step, run.on_epoch_end, rank=rank, world_size=world_size,
                      validate=validate)
    if resuming:
        trainer.resume(loaded)  # the last check: a refused resume has written nothing
        loaded = None
    if rank == 0:
        log.release()
        record_config(conf, exp_dir, exp.inventory)
        trainer.remove_stale_temporaries()
        if resuming:
            trainer.repair_history()
    return trainer.fit()


def _final_state(exp: Path) -> TrainState:
    """The TrainState of a finished run (from its last epoch checkpoint; spawned processes return nothing)."""
    epochs = epoch_checkpoints(exp / "checkpoints")
    return TrainState(**load_checkpoint(list(epochs.values())[-1])["state"]) if epochs else TrainState()


def run_config(config: str | Path | dict[str, Any], overrides: list[str] | tuple = ()) -> dict[str, Any]:
    """A run's config (`overrides` applied), its frontend, model and train sections checked: what `train()`
    refuses before the lock makes `exp_dir` (and punctkit/fit.py reads a `train.init` package with)."""
    conf = load_config(config, overrides)
    check_frontend_section(conf["frontend"], str(config) if isinstance(config, (str, Path)) else "config")
    model_needs(conf["model"])
    TrainOptions.from_section(conf["train"])
    return conf


def train(config: str | Path | dict[str, Any], train_dir: str | Path, valid_dir: str | Path | None,
          exp_dir: str | Path, ngpu: int = 0, resume: bool | None = None, overrides: list[str] | tuple = (),
          inputs_dir: str | Path | None = None, extra: Extra | None = None, quiet: bool = False,
          on_step: list[Callback] | None = None, on_epoch_end: list[Callback] | None = None,
          nproc: int = 1, force: bool = False, validation: Validation | None = None,
          start: PackageStart | None = None) -> TrainState:
    """`punctkit train`: config + data dirs -> a self-contained model dir `exp_dir`.

    resume: None resumes when checkpoints exist; False refuses to touch an
    experiment that has checkpoints. `inputs_dir` holds stage 3's frontend/ and w2v.txt.
    `ngpu > 1` (one process per GPU, nccl) or `nproc > 1` (CPU processes, gloo) trains
    with DDP; under torchrun (RANK and WORLD_SIZE set) this process joins that group.
    The run holds `exp_dir/.lock` throughout (the launching process, or rank 0 under
    torchrun): a second run into the same `exp_dir` fails naming the holder; a lock
    from a process that is gone is taken over; `force` takes any lock (another host's).
    `validation` (decoding's) and `start` (a `train.init` package, read) are what punctkit/fit.py passes.
    """
    run = RunArgs(config=config, train_dir=train_dir, valid_dir=valid_dir, exp_dir=exp_dir, ngpu=ngpu, resume=resume,
                  overrides=list(overrides), inputs_dir=inputs_dir, extra=extra, quiet=quiet, on_step=on_step,
                  on_epoch_end=on_epoch_end, validation=validation, start=start)
    if torchrun_member():
        check_data_dirs(train_dir, valid_dir)
        return ddp_process(int(os.environ.get("LOCAL_RANK", os.environ["RANK"])), int(os.environ["WORLD_SIZE"]),
                           train_process, run, int(os.environ["RANK"]), lock_force=force)
    world = world_size_of(ngpu, nproc)
    conf = run_config(config, overrides)  # a bad config fails here, before the lock makes exp_dir
    check_data_dirs(train_dir, valid_dir)  # so is a missing --train-dir: it leaves no --exp, no train.log
    check_start(conf, start)  # and a train.init package with nothing to read it (punctkit/fit.py reads it)
    distill = DistillOptions.from_section(conf["train"]["distill"])
    if distill is not None:  # and a teacher's labels not made yet (their rows are checked once read)
        require_file(distill.probs, "probs file (train.distill.probs)")
    with exp_lock(exp_dir, force, quiet):
        if world == 1:
            return train_process(run)
        spawn(train_process, world, run)  # a process's error is raised here (train/ddp.py)
        return _final_state(Path(exp_dir))
