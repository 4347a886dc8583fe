"""Training configs: YAML with `frontend:`, `model:`, `train:`, `embeddings:`, `decode:` sections.

`load_config` fills the defaults below and applies `section.key=value`
overrides (values parsed as YAML), so the saved `exp/x/config.yaml` is the
complete, resolved configuration of a run.
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Iterable

import yaml

from punctkit.files import PunctkitError, atomic_write, parse_yaml, read_yaml_mapping

DEFAULTS: dict[str, Any] = {
    "frontend": {"kind": "word", "min_count": 1},
    "model": {},
    # word: PATH, word_format (word2vec|word2vec_binary|glove), speech: PATH (Speech2Vec), combine: sum|concat,
    # freeze: bool, w2v_train: {dim, window, epochs, min_count, seed, workers} (stage 3 trains word2vec),
    # plm_vectors: {path: auto|DIR, source: input|context, layer, batch_size, window} (stage 3 derives
    # static word vectors from a local pre-trained LM: input embeddings, or hidden states averaged over the text)
    "embeddings": {},
    "train": {
        "optimizer": "adam",           # adam | adamw | adadelta
        "lr": 1e-3,
        "weight_decay": 0.0,
        "betas": [0.9, 0.999],
        "schedule": "constant",        # constant | noam | newbob
        "warmup": 4000,                # noam
        "newbob_factor": 0.5,          # newbob
        "newbob_threshold": 0.0,
        "min_lr": 1e-6,
        "batch_size": 32,              # windows per batch
        "window": 100,                 # training window length in words
        "epochs": 10,
        "iters_per_epoch": None,       # null: an epoch is one pass over the data; N: an epoch is the next N
                                       # batches of passes that go on across epochs (ESPnet's num_iters_per_epoch;
                                       # a validation and a checkpoint every N batches: train/epochs.py)
        "max_minutes": None,           # wall-clock limit of the whole run (over resumes)
        "patience": None,              # early stopping: epochs without dev F1 improvement
        "seed": 1,
        "clip": 5.0,                   # gradient norm clipping (0: off)
        "label_smoothing": 0.0,
        "loss": "ce",                  # ce | focal
        "focal_gamma": 2.0,
        "class_weights": None,         # None | auto | [w_O, w_COMMA, ...]
        "n_average": 5,                # model.avg.pt = mean of the best N epochs
        "keep_checkpoints": None,      # null: every epoch's checkpoint stays; N: the best N epochs by dev F1
                                       # (at least n_average) and the last (to resume) stay, the others are
                                       # removed as training goes (ESPnet's keep_nbest_models)
        "max_tokens": None,            # refuse windows longer than this in tokens
        "threads": 0,                  # torch CPU threads for training and decoding (0: torch's default;
                                       # 1 is much faster when other jobs share the cores)
        "rdrop": 0.0,                  # R-Drop weight alpha (0: off; >0: two dropout passes + symmetric KL)
        "precision": "fp32",           # fp32 | bf16 | auto: forward passes of training and validation under
                                       # bfloat16 autocast (weights, optimizer and saved models stay fp32);
                                       # auto: bf16 where the device computes it natively, else fp32
        "distill": {},                 # {probs: PATH, weight, temperature}: a teacher's soft labels (train/distill.py)
        "augment": {},                 # {substitute, insert, delete, token}: ASR-like noise (train/augment.py)
        "init": None,                  # an experiment dir or checkpoint whose weights start the run, copied by
                                       # name (train/warm_start.py), or a packed model (package/to_torch.py);
                                       # null: fresh initialisation
        "lookahead": None,             # time-delay training for streaming: {max: M, p: P} cuts a window with
                                       # probability P after a random word of its second half plus 0..M words
                                       # (punctkit/data/streams.py: TimeDelay); null: off
        "boundary_dropout": {"turns": 0.3, "times": 0.3},  # a model with boundary_input: the chance that a
                                       # training stream's speakers, and its word times, are dropped for a pass
                                       # (train/boundary_input.py), so that "nothing known" is a value it learns
    },
    "decode": {"window": 100, "step": 50, "batch_size": 32, "beam": 6},
    # use: true reads DATA/feats.scp (+ ctm word timing) into every batch; null: when the model needs feats
    "audio": {"use": None},
}


PRECISIONS = ("fp32", "bf16", "auto")
EMBEDDING_KEYS = ("word", "word_format", "speech", "speech_format", "combine", "freeze", "w2v_train", "plm_vectors")


def _merge(base: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for k, v in (new or {}).items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def override(conf: dict[str, Any], item: str) -> None:
    """Apply one `section.key=value` override in place: the value is any YAML value (`parse_yaml`),
    the section one `conf` has; a value that is not YAML is a one-line error naming the key."""
    key, eq, value = item.partition("=")
    parts = key.split(".")
    if not eq or not all(parts):
        raise PunctkitError(f"--set expects section.key=value, got '{item}'")
    if parts[0] not in conf:
        raise PunctkitError(f"--set {key}: unknown config section '{parts[0]}' (known: {', '.join(map(str, conf))})")
    d = conf
    for p in parts[:-1]:
        d = d.setdefault(p, {})
        if not isinstance(d, dict):
            raise PunctkitError(f"--set {key}: '{p}' is not a section")
    d[parts[-1]] = parse_yaml(value, f"--set {key}")


def load_config(path: str | Path | dict[str, Any], overrides: Iterable[str] = ()) -> dict[str, Any]:
    """Read a config file (or take a dict), fill defaults, apply overrides; one-line errors for
    a file that is not YAML (`read_yaml_mapping`), unknown sections or train/embeddings options,
    a section that is not a mapping, a model without a type, an unknown precision."""
    if isinstance(path, dict):
        raw, path = path, "config"
    else:
        raw = read_yaml_mapping(path, "config", "a mapping with frontend/model/train sections")
    unknown = [k for k in raw if k not in DEFAULTS and k != "resolved"]
    if unknown:
        raise PunctkitError(f"{path}: unknown config section(s) {', '.join(map(str, unknown))} "
                            f"(known: {', '.join(DEFAULTS)})")
    conf = _merge(DEFAULTS, raw)
    for item in overrides:
        override(conf, item)
    conf = _merge(DEFAULTS, conf)  # a section a `--set` replaced (`train={lr: 0.1}`) gets the defaults it lacks
    for k, v in conf.items():
        if k != "resolved" and not isinstance(v, dict):
            raise PunctkitError(f"{path}: the {k} section must be a mapping (key: value lines), got {v!r}")
    bad = [k for k in conf["train"] if k not in DEFAULTS["train"]]
    if bad:
        raise PunctkitError(f"{path}: unknown train option(s) {', '.join(map(str, bad))}")
    bad = [k for k in conf["embeddings"] if k not in EMBEDDING_KEYS]
    if bad:
        raise PunctkitError(f"{path}: unknown embeddings option(s) {', '.join(map(str, bad))} "
                            f"(known: {', '.join(EMBEDDING_KEYS)})")
    check_model_section(conf["model"], str(path))
    if conf["train"]["precision"] not in PRECISIONS:
        raise PunctkitError(f"{path}: train.precision '{conf['train']['precision']}' is not one of "
                            f"{', '.join(PRECISIONS)}")
    return conf


def check_model_section(model: dict[Any, Any], where: str) -> None:
    """A one-line error starting with `where` unless the model section has a `type` (a model's name)
    and its options are named by text (what the model registry checks them against)."""
    if not model.get("type") or not isinstance(model["type"], str):
        raise PunctkitError(f"{where}: the model section needs a 'type' (a model's name), got {model.get('type')!r}")
    bad = [k for k in model if not isinstance(k, str)]
    if bad:
        raise PunctkitError(f"{where}: model option names must be text, got {', '.join(map(repr, bad))}")


def save_config(conf: dict[str, Any], path: str | Path) -> None:
    """Write the resolved config as YAML."""
    with atomic_write(path) as f:
        yaml.safe_dump(conf, f, sort_keys=False, default_flow_style=None)

