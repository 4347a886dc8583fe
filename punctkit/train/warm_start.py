"""Warm start: a new training run begins from another run's weights (ESPnet's `--init_param`).

`train.init: PATH` names a trained experiment directory (its model.avg.pt, else model.best.pt,
else its last epoch) or a checkpoint file. Every tensor of the new model whose name the
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

from pathlib import Path
from typing import Any, Callable

import torch

from punctkit.expdir import find_checkpoint, load_checkpoint
from punctkit.files import PunctkitError
from punctkit.models.plm_grow import copy_after_init


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


def warm_start(model: torch.nn.Module, spec: Any, log: Callable[[str], None] = print) -> int:
    """Copy the tensors of the checkpoint/experiment `spec` names (a path, or {path, keys}) into
    `model` by name; the number copied.

    Names only in the model keep their initialisation, names only in the checkpoint are ignored
    (both counted in the log); a shape mismatch, a key the checkpoint lacks, or nothing in common
    is a one-line error.
    """
    path, keys = init_spec(spec)
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
