"""Training's checkpoints: atomic save, RNG states, and averaging (ESPnet's `model.avg`).

Loading (tensors and plain data only, `torch.load(weights_only=True)`) is punctkit/expdir.py's.
"""
from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import torch

from punctkit.expdir import epoch_checkpoints, load_checkpoint, require_model_dir, training_history
from punctkit.files import PunctkitError, atomic_write


def save_checkpoint(path: str | Path, state: dict[str, Any]) -> None:
    """torch.save `state` to `path`; the file appears only when complete."""
    with atomic_write(path, "wb") as f:
        torch.save(state, f)


def rng_state() -> dict[str, Any]:
    """Every random generator the training loop touches, as tensors, lists and numbers."""
    version, internal, gauss = random.getstate()
    name, key, pos, has_gauss, cached = np.random.get_state(legacy=True)
    state = {"python": [version, list(internal), gauss],
             "numpy": {"name": name, "key": torch.from_numpy(key.astype(np.int64)), "pos": int(pos),
                       "has_gauss": int(has_gauss), "cached_gaussian": float(cached)},
             "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what `rng_state` saved (or what it saved before: numpy's tuple, Python's tuple)."""
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    npst = state["numpy"]
    if isinstance(npst, dict):
        npst = (npst["name"], npst["key"].cpu().numpy().astype(np.uint32), npst["pos"], npst["has_gauss"],
                npst["cached_gaussian"])
    np.random.set_state(npst)
    torch.set_rng_state(state["torch"].cpu() if hasattr(state["torch"], "cpu") else state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        # a checkpoint loaded with map_location=cuda holds these on the GPU; the setter takes CPU bytes
        torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda"]])


def average_states(states: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """Element-wise mean of floating-point tensors; other tensors (counters) from the last state."""
    if not states:
        raise PunctkitError("no checkpoints to average")
    keys = list(states[-1])
    for s in states[:-1]:
        if list(s) != keys:
            raise PunctkitError("checkpoints to average have different parameters")
    out = {}
    for k in keys:
        if states[-1][k].is_floating_point():
            acc = torch.zeros_like(states[-1][k], dtype=torch.float64)
            for s in states:
                acc += s[k].to(torch.float64)
            out[k] = (acc / len(states)).to(states[-1][k].dtype)
        else:
            out[k] = states[-1][k].clone()
    return out


def average_checkpoints(paths: list[Path], out: str | Path) -> None:
    """Write `out` = {"model": the average of the checkpoints' models, "averaged": their paths}."""
    states = [load_checkpoint(p)["model"] for p in paths]
    save_checkpoint(out, {"model": average_states(states), "averaged": [str(p) for p in paths]})


def best_epochs(history: list[dict[str, Any]], n: int, key: str = "valid_f1") -> list[int]:
    """The `n` epochs with the highest `key` (later epochs win ties); the last `n` when no scores."""
    scored = [h for h in history if h.get(key) is not None]
    if not scored:
        return sorted(h["epoch"] for h in history)[-n:]
    ranked = sorted(scored, key=lambda h: (h[key], h["epoch"]), reverse=True)
    return sorted(h["epoch"] for h in ranked[:n])


def average_named(exp: str | Path, n: int = 5, out: str | Path | None = None,
                  paths: list[Path] | None = None) -> list[Path]:
    """`punctkit average-checkpoints`: the given files, or the best `n` epochs of `exp` by dev F1."""
    exp = Path(exp)
    if not paths:
        require_model_dir(exp, "a package holds no checkpoints: average those of the experiment it was packed from")
        epochs = epoch_checkpoints(exp / "checkpoints")
        if not epochs:
            raise PunctkitError(f"{exp}: no checkpoints/epoch_N.pt to average")
        history = training_history(exp) or [{"epoch": e} for e in epochs]  # history.json, or repaired
        paths = [epochs[e] for e in best_epochs([h for h in history if h["epoch"] in epochs], n)]
    average_checkpoints(list(paths), out or exp / "model.avg.pt")
    return list(paths)
