"""Checkpoints: atomic save, checked load, RNG states, and averaging (ESPnet's `model.avg`)."""
from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import numpy as np
import torch

from punctkit.files import PunctkitError, atomic_write

EPOCH_RE = re.compile(r"^epoch_(\d+)\.pt$")


def save_checkpoint(path: str | Path, state: dict[str, Any]) -> None:
    """torch.save `state` to `path`; the file appears only when complete."""
    with atomic_write(path, "wb") as f:
        torch.save(state, f)


def load_checkpoint(path: str | Path, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Load a checkpoint dict; a missing, truncated or foreign file is a one-line error."""
    p = Path(path)
    if not p.is_file():
        raise PunctkitError(f"checkpoint not found: {p}")
    try:
        state = torch.load(p, map_location=map_location, weights_only=False)
    except Exception as e:  # torch raises many types on corrupt files
        raise PunctkitError(f"{p}: corrupt or unreadable checkpoint ({type(e).__name__})") from None
    if not isinstance(state, dict) or "model" not in state:
        raise PunctkitError(f"{p}: not a punctkit checkpoint (no model state)")
    return state


def epoch_checkpoints(ckpt_dir: str | Path) -> dict[int, Path]:
    """{epoch: path} of `epoch_N.pt` files in a checkpoint directory."""
    d = Path(ckpt_dir)
    out = {}
    if d.is_dir():
        for p in d.iterdir():
            m = EPOCH_RE.match(p.name)
            if m:
                out[int(m.group(1))] = p
    return dict(sorted(out.items()))


def rng_state() -> dict[str, Any]:
    """Every random generator the training loop touches."""
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what `rng_state` saved."""
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"].cpu() if hasattr(state["torch"], "cpu") else state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


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
    import json

    exp = Path(exp)
    if not paths:
        epochs = epoch_checkpoints(exp / "checkpoints")
        if not epochs:
            raise PunctkitError(f"{exp}: no checkpoints/epoch_N.pt to average")
        hist_path = exp / "history.json"
        history = json.loads(hist_path.read_text()) if hist_path.is_file() else [{"epoch": e} for e in epochs]
        paths = [epochs[e] for e in best_epochs([h for h in history if h["epoch"] in epochs], n)]
    average_checkpoints(list(paths), out or exp / "model.avg.pt")
    return list(paths)
