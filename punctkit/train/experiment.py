"""A training run's experiment directory, set up: what the run was asked (`RunArgs`), its lock,
its log, whether it resumes, its config (read, compared with a resumed run's, recorded), and
the data, frontend, embeddings and audio inputs loaded once (`Experiment`).

A resume writes nothing until every check has passed: `resume_policy` and `check_resumable`
refuse before any file is touched, and the log holds its lines (`Logger(hold=True)`) until
`release()`.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from punctkit.batch import audio_extra, wants_audio
from punctkit.config import load_config, save_config
from punctkit.data.datadir import DataDir, read_data_dir
from punctkit.data.labels import LabelSet
from punctkit.data.streams import Extra, Stream, make_streams
from punctkit.data.timing import read_timing
from punctkit.expdir import epoch_checkpoints, load_checkpoint, offline_model_conf
from punctkit.files import DirLock, PunctkitError, atomic_write
from punctkit.models import registry
from punctkit.models.base import PunctModel
from punctkit.models.registry import model_needs
from punctkit.text.frontend import Frontend, load_frontend
from punctkit.train.augment import Augmenter, AugmentOptions
from punctkit.train.boundary_input import reads_boundaries
from punctkit.train.distill import DistillOptions, soft_labels
from punctkit.train.inputs import build_frontend, embedding_matrix
from punctkit.train.options import TrainOptions
from punctkit.train.warm_start import PackageStart

Callback = Callable[[Any], None]  # called with the Trainer (train/trainer.py) after a step or an epoch
Validate = Callable[[PunctModel], list[list[int]]]  # a model -> the best label ids of each dev stream
# (the training config's `decode:` section, frontend, dev streams, device, audio extra, log) ->
# (Validate, that section resolved): decoding's side of validation (punctkit/fit.py passes it)
Validation = Callable[..., tuple[Validate, dict[str, Any]]]


@dataclass(kw_only=True)
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
    start: PackageStart | None = None  # train.init of a packed model, read (punctkit/fit.py passes it)


# ------------------------------------------------------------------ log and lock

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


def run_log(exp_dir: Path, rank: int, quiet: bool, resuming: bool) -> Logger:
    """The run's log: rank 0's goes to `exp_dir/train.log` (held until `release()` when resuming)
    and stderr; the other ranks' nowhere."""
    return Logger(exp_dir / "train.log", quiet, hold=resuming) if rank == 0 else Logger(None, quiet=True)


def exp_lock(exp_dir: str | Path, force: bool = False, quiet: bool = False) -> DirLock:
    """The lock a training run holds on its experiment directory (taking it over is logged)."""
    return DirLock(exp_dir, force, Logger(Path(exp_dir) / "train.log", quiet), what="punctkit train")


# ------------------------------------------------------------------ resume and config

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


def check_data_dirs(train_dir: str | Path, valid_dir: str | Path | None) -> None:
    """The data directories a run reads exist and hold `text` and `labels`: one-line errors naming the
    option, before `--exp` (or its train.log) is made."""
    for option, d in (("--train-dir", train_dir), ("--valid-dir", valid_dir)):
        if d is None:
            continue
        p = Path(d)
        if not p.is_dir():
            raise PunctkitError(f"{option} {p}: data directory not found (give one that `punctkit prepare` wrote)")
        for name in ("text", "labels"):
            if not (p / name).is_file():
                raise PunctkitError(f"{option} {p}: no '{name}' file (not a data directory of `punctkit prepare`?)")


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


def record_config(conf: dict[str, Any], exp_dir: Path, inventory: LabelSet) -> None:
    """Write the resolved `config.yaml` and the label `inventory` of the experiment (rank 0, once
    every check has passed)."""
    save_config(conf, exp_dir / "config.yaml")
    with atomic_write(exp_dir / "inventory") as f:
        f.write(inventory.name + "\n")


# ------------------------------------------------------------------ the experiment, loaded once

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


def resume_checkpoint(exp: Experiment) -> tuple[Path, dict[str, Any]]:
    """The last epoch checkpoint of a resumed run, loaded (on the CPU), with this run's model section
    checked against its weights before the model is built (`registry.misfit`, on the meta device): a
    config that builds more than the checkpoint holds (`d_model: 50000`) is one line, not gigabytes."""
    path = list(epoch_checkpoints(exp.dir / "checkpoints").values())[-1]
    state = load_checkpoint(path)
    shapes = {k: tuple(v.shape) for k, v in state["model"].items() if isinstance(v, torch.Tensor)}
    model_conf = exp.conf["model"]
    try:
        model_conf = offline_model_conf(model_conf, exp.dir / "frontend")
    except PunctkitError:
        pass  # no encoder config to check with: the build names what is missing
    why = registry.misfit(model_conf, exp.env, shapes)
    if why is not None:
        raise PunctkitError(f"{path}: does not match this config's model ({why}); resume with the config "
                            f"it was trained with, or choose another --exp")
    return path, state


def build_model(exp: Experiment, device: torch.device) -> PunctModel:
    """The experiment's model (by name, through the registry), on `device`."""
    return registry.build_model(exp.conf["model"], **exp.env).to(device)


def seed_everything(seed: int) -> None:
    """Seed python, numpy and torch."""
    import random

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


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


def package_frontend(start: PackageStart, exp: Path) -> Frontend:
    """The frontend of a run whose `train.init` is a packed model: the package's, saved into `exp`/frontend
    unless it is there (a resumed run's, checked to be the package's before the run: package/to_torch.py)."""
    if not (exp / "frontend" / "frontend.yaml").is_file():
        start.frontend.save(exp / "frontend")
    return start.frontend


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
    frontend = package_frontend(run.start, exp) if run.start else load_frontend_for(run, exp, conf, dd)
    train_streams = data_streams(dd, inventory, conf["model"])
    valid_streams = data_streams(vd, inventory, conf["model"]) if vd else None
    words = [w for s in train_streams for w in s.words]
    log(f"train: {len(train_streams)} streams, {len(words)} words; frontend {frontend.kind} "
        f"({frontend.vocab_size} tokens, {100 * frontend.unk_rate(words):.1f}% words with <unk>); "
        f"labels {inventory.name}")
    seed_everything(t["seed"])
    if run.start is not None:
        emb = run.start.table  # its folded token table: the run's pre-trained vectors (package/to_torch.py)
    elif resuming:
        shape = ((saved or {}).get("resolved", {}).get("env", {}).get("embeddings_shape")
                 if conf["embeddings"] else None)
        emb = np.zeros(shape, dtype=np.float32) if shape else None  # the checkpoint holds the weights
    else:
        inputs = Path(run.inputs_dir) if run.inputs_dir else exp
        emb = embedding_matrix(conf, frontend, inputs, exp, dd, log)
    if rank == 0 and world_size > 1:
        torch.distributed.barrier()
    extra = run.extra if run.extra is not None else _audio_extra(conf, run.train_dir, run.valid_dir, log)
    env = {"vocab_size": frontend.vocab_size, "n_labels": len(inventory), "pad_id": frontend.pad_id,
           "embeddings": emb, "feat_dim": getattr(extra, "feat_dim", None)}
    return Experiment(exp, conf, inventory, frontend, train_streams, valid_streams, extra, env)


def data_streams(dd: DataDir, inventory: LabelSet, model_conf: dict[str, Any]) -> list[Stream]:
    """A data directory's streams (by utt2spk); for a model that reads the boundary after each word
    (train/boundary_input.py), with the speaker turns and word times the directory carries, grouped as decoding
    groups them (data/timing.py read_timing: segments make a recording's utterances one stream)."""
    if not reads_boundaries(model_conf):
        return make_streams(dd, inventory)
    timing = read_timing(dd)
    return make_streams(dd, inventory, timing if timing.known else None)


def _audio_extra(conf: dict[str, Any], train_dir: str | Path, valid_dir: str | Path | None,
                 log: Callable[[str], None]) -> Extra | None:
    """Audio inputs from the data dirs' feats.scp when the config or the model asks (`audio.use`, resolved)."""
    if not conf["audio"]["use"]:
        return None
    extra = audio_extra(train_dir, valid_dir)
    log(f"audio: {extra.feat_dim}-dim features from {', '.join(str(s.path) for s in extra.sources)}")
    return extra


# ------------------------------------------------------------------ the training set's extras

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
