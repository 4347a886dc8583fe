"""Warm start: a new training run begins from another run's weights (ESPnet's `--init_param`).

`train.init: PATH` names a trained experiment directory (its model.avg.pt, else model.best.pt,
else its last epoch), a checkpoint file, or a packed model (`model.pkt`, or a shipped model's name such
as `fast`: its ONNX graph's weights, and the package's frontend and inventory as the run's inputs, the
config without `embeddings:` and with `freeze_embeddings: true`). The
recipe's stage-4 call fine-tunes the shipped `fast` network so (conf/train_drnn_lwma_turns.yaml:
`train.init: exp/fast_words.pkt`; exp/X/inputs may be missing, or stage 3's of that config):

    punctkit train --config conf/train_drnn_lwma_turns.yaml --train-dir data/train_conv \
      --valid-dir data/valid_conv --exp exp/drnn_lwma_turns --inputs exp/drnn_lwma_turns/inputs --ngpu 0

Reading a package is the package layer's (punctkit/package/to_torch.py): `punctkit train` (punctkit/fit.py)
hands the run a `PackageStart` (its frontend, its token table and the copy of its network), as it hands it
decoding's validation; this layer only tells a package from a checkpoint (`package_file`).

Every tensor of the new model whose name the
checkpoint has is copied from it; the others (e.g. an acoustic encoder added to a lexical
model) keep their fresh initialisation. `train.init: {path: PATH, keys: [embed, lex]}` copies
only the tensors under those module names (e.g. a lexical model's text encoder into a fused
model, whose decoder has other input sizes); each of them must be in the checkpoint.
A copied tensor of another shape is a one-line error: vocabulary-sized tables differ when the
runs' inputs differ, so train with the source's inputs (`--inputs SRC_EXP/inputs`). A resumed
run continues from its own checkpoint and ignores `train.init`. Layers grown on the encoder with
`extra_copy: init` (punctkit/models/plm_grow.py) then copy their source layers as `train.init` left them.
"""
from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import torch

from punctkit.archive import MANIFEST
from punctkit.expdir import find_checkpoint, load_checkpoint
from punctkit.files import PunctkitError
from punctkit.models.plm_grow import copy_after_init
from punctkit.pretrained import SHIPPED, shipped_path

if TYPE_CHECKING:
    from punctkit.text.frontend import Frontend


@dataclass(frozen=True)
class PackageStart:
    """What a run whose `train.init` is a packed model starts from (punctkit/package/to_torch.py
    `package_start`): the package's frontend and folded token table (the run's inputs and pre-trained
    vectors), and `copy(model, keys, log) -> int`, which copies its network into the model (a picklable
    callable, so that DDP's spawned processes get it with the run's arguments)."""

    path: Path
    frontend: "Frontend"
    table: np.ndarray | None  # (vocab, d_model); None for a plm_tagger (its encoder holds its own table)
    copy: Callable[[torch.nn.Module, list[str] | None, Callable[[str], None]], int]


def package_file(path: str | os.PathLike) -> Path | None:
    """The packed model `path` names (a zip file holding punctkit.json, or a shipped model's name such as
    `fast`), else None (an experiment directory or a checkpoint)."""
    p = Path(path)
    if not p.exists() and os.fspath(path) in SHIPPED:
        p = shipped_path(os.fspath(path))
    if not p.is_file() or not zipfile.is_zipfile(p):
        return None  # torch's checkpoints are zip files too: a package is one with a manifest
    try:
        with zipfile.ZipFile(p) as z:
            return p if MANIFEST in z.namelist() else None
    except (zipfile.BadZipFile, OSError):
        return None


def init_package(conf: dict[str, Any]) -> Path | None:
    """The packed model a config's `train.init` names, else None."""
    init = (conf.get("train") or {}).get("init")
    return package_file(init_spec(init)[0]) if init else None


def no_package(path: str | os.PathLike) -> None:
    """A one-line error when `train.init` path `path` is a packed model: a run reads one only when it is given
    a `PackageStart`, as `punctkit train` (punctkit.fit.train) gives it, not the trainer called on its own."""
    package = package_file(path)
    if package is not None:
        raise PunctkitError(f"train.init: {package}: a packed model, which only `punctkit train` "
                            f"(punctkit.fit.train) reads: run that, or start from an experiment directory or a "
                            f"checkpoint")


def check_start(conf: dict[str, Any], start: PackageStart | None) -> None:
    """`no_package` for the config's `train.init` of a run given no `start`."""
    init = (conf.get("train") or {}).get("init")
    if init and start is None:
        no_package(init_spec(init)[0])


def init_checkpoint(path: str | Path) -> Path:
    """The checkpoint `train.init` names: the file itself, or the best one of an experiment directory."""
    p = Path(path)
    if p.is_dir():
        return find_checkpoint(p, None)
    if not p.is_file():
        raise PunctkitError(f"train.init: {p}: no such experiment directory or checkpoint file")
    return p


def init_spec(spec: Any) -> tuple[str, list[str] | None]:
    """(path, module-name prefixes or None for all) of a `train.init` value."""
    if isinstance(spec, (str, Path)):
        return str(spec), None
    if isinstance(spec, dict) and set(spec) <= {"path", "keys"} and isinstance(spec.get("path"), (str, Path)):
        keys = spec.get("keys")
        if keys is None or (isinstance(keys, list) and keys and all(isinstance(k, str) and k for k in keys)):
            return str(spec["path"]), keys
    raise PunctkitError(f"train.init must be a path or {{path: PATH, keys: [module, ...]}}, not {spec!r}")


def under(name: str, keys: list[str]) -> bool:
    """Whether tensor `name` belongs to one of the modules `keys` (`lex` holds `lex.weight_ih_l0`)."""
    return any(name == k or name.startswith(k.rstrip(".") + ".") for k in keys)


def fresh_modules(names: list[str], copied: set[str]) -> list[str]:
    """The modules of tensors `names` left out of `copied`, each named at its shallowest level that
    holds no copied tensor (`ac`, an added encoder; `plm.encoder.layer.6`, a layer grown on a copied one)."""
    out = set()
    for name in names:
        if name in copied:
            continue
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            prefix = ".".join(parts[:i])
            if not any(c == prefix or c.startswith(prefix + ".") for c in copied):
                out.add(prefix)
                break
    return sorted(out)


def warm_start(model: torch.nn.Module, spec: Any, log: Callable[[str], None] = print,
               start: PackageStart | None = None) -> int:
    """Copy the tensors of the checkpoint/experiment `spec` names (a path, or {path, keys}) into
    `model` by name; the number copied. A packed model's network is copied by `start` (its `copy`),
    which the run was given for it.

    Names only in the model keep their initialisation, names only in the checkpoint are ignored
    (both counted in the log); a shape mismatch, a key the checkpoint lacks, or nothing in common
    is a one-line error.
    """
    path, keys = init_spec(spec)
    if start is not None:  # a packed model: its network from its ONNX graph (package/to_torch.py)
        return start.copy(model, keys, log)
    no_package(path)
    src = init_checkpoint(path)
    weights = load_checkpoint(src)["model"]
    own = model.state_dict()
    if keys is None:
        common = [k for k in own if k in weights]
    else:
        common = [k for k in own if under(k, keys)]
        missing = [k for k in common if k not in weights] or [k for k in keys if not any(under(n, [k]) for n in own)]
        if missing:
            raise PunctkitError(f"train.init: {src}: {missing[0]} (of keys {', '.join(keys)}) is not in "
                                f"{'the checkpoint' if missing[0] in own else 'this model'}")
    for k in common:
        if tuple(weights[k].shape) != tuple(own[k].shape):
            raise PunctkitError(f"train.init: {src}: {k} has shape {tuple(weights[k].shape)} there, "
                                f"{tuple(own[k].shape)} here (train with that run's inputs: --inputs EXP/inputs)")
    if not common:
        raise PunctkitError(f"train.init: {src}: no tensor in common with this model "
                            f"({sorted(weights)[:3]}... against {sorted(own)[:3]}...)")
    with torch.no_grad():
        for k in common:
            own[k].copy_(weights[k].to(own[k].device, own[k].dtype))
    fresh = fresh_modules(list(own), set(common))
    recopied = copy_after_init(model)
    log(f"init: {len(common)} of {len(own)} tensors from {src}"
        + (f"; freshly initialised: {', '.join(fresh)}" if fresh else "")
        + (f"; {len(weights) - len(common)} of its tensors unused" if len(weights) > len(common) else "")
        + (f"; grown layers copied from layers {', '.join(str(i) for i in recopied)}" if recopied else ""))
    return len(common)
