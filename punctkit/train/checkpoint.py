"""Checkpoints: atomic save, checked load, RNG states, and averaging (ESPnet's `model.avg`).

A checkpoint holds tensors and plain data only (dicts, lists, numbers, strings): it is
loaded with `torch.load(weights_only=True)`, so no file runs code. Checkpoints written
before the RNG states became tensors and lists hold numpy's state as an ndarray; they
load through `LEGACY_GLOBALS`, the few numpy types that needs, and nothing else.
"""
from __future__ import annotations

import io
import pickle
import pickletools
import random
import re
import warnings
import zipfile
from pathlib import Path
from typing import IO, Any

import numpy as np
import torch

from punctkit.files import PunctkitError, atomic_write

EPOCH_RE = re.compile(r"^epoch_(\d+)\.pt$")


def _legacy_globals() -> list[Any]:
    """What numpy's RNG state (a uint32 ndarray) needs to unpickle, under numpy 2's and numpy 1's names."""
    multiarray = np._core.multiarray if hasattr(np, "_core") else np.core.multiarray
    found = [np.ndarray, np.dtype, multiarray._reconstruct, (multiarray._reconstruct, "numpy.core.multiarray._reconstruct")]
    return found + ([np.dtypes.UInt32DType] if hasattr(np, "dtypes") else [])


LEGACY_GLOBALS = _legacy_globals()


def save_checkpoint(path: str | Path, state: dict[str, Any]) -> None:
    """torch.save `state` to `path`; the file appears only when complete."""
    with atomic_write(path, "wb") as f:
        torch.save(state, f)


def load_plain(src: str | Path | IO[bytes], name: str | Path, map_location: str | torch.device = "cpu") -> Any:
    """torch.load of tensors and plain data (and LEGACY_GLOBALS); anything that needs other code
    is refused with a one-line error naming `name` and what it needs."""
    try:
        with torch.serialization.safe_globals(LEGACY_GLOBALS), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. torch's note on a pickle protocol it did not write
            return torch.load(src, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as e:
        if "weights only load failed" not in str(e).lower():
            raise PunctkitError(f"{name}: corrupt or unreadable checkpoint (UnpicklingError)") from None
        m = re.search(r"GLOBAL (\S+?)\.?(?:\s|$)", str(e))
        why = f"needs GLOBAL {m.group(1)}" if m else _weights_only_reason(str(e))
        if why.startswith("Unsupported operand"):  # not torch's pickle: garbage, or a raw pickle of another protocol
            found = _pickle_globals(src)
            if not found:
                raise PunctkitError(f"{name}: corrupt or unreadable checkpoint ({why})") from None
            why = f"needs GLOBAL {found[0]}"
        raise PunctkitError(f"{name}: not a plain-data checkpoint ({why}); punctkit loads no code") from None
    except Exception as e:  # torch raises many types on corrupt files
        raise PunctkitError(f"{name}: corrupt or unreadable checkpoint ({type(e).__name__})") from None


def _pickle_globals(src: str | Path | IO[bytes]) -> list[str]:
    """The globals a raw pickle names, found by reading its opcodes (pickletools; nothing runs)."""
    try:
        if isinstance(src, (str, Path)):
            data = Path(src).read_bytes()
        else:
            src.seek(0)
            data = src.read()
        if data[:2] == b"PK":  # torch's zip format: the pickle is <archive>/data.pkl
            with zipfile.ZipFile(io.BytesIO(data)) as z:
                data = z.read(next(n for n in z.namelist() if n.endswith("/data.pkl")))
    except (OSError, zipfile.BadZipFile, StopIteration, ValueError):
        return []
    found: list[str] = []
    strings: list[str] = []
    try:
        for op, arg, _ in pickletools.genops(data):
            if op.name in ("GLOBAL", "INST"):
                found.append(str(arg).replace(" ", "."))
            elif op.name == "STACK_GLOBAL" and len(strings) >= 2:
                found.append(f"{strings[-2]}.{strings[-1]}")
            elif isinstance(arg, str):
                strings.append(arg)
    except Exception:  # not a pickle, or cut: what was found so far is the answer
        pass
    return found


def _weights_only_reason(msg: str) -> str:
    """The unpickler's own reason from torch's long weights-only message, on one short line."""
    _, _, rest = msg.partition("WeightsUnpickler error:")
    lines = [ln.strip() for ln in rest.splitlines() if ln.strip()]
    return lines[0][:160] if lines else "needs more than tensors and plain data"


def load_checkpoint(path: str | Path, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Load a checkpoint dict; a missing, truncated, foreign or code-carrying file is a one-line error."""
    p = Path(path)
    if not p.is_file():
        raise PunctkitError(f"checkpoint not found: {p}")
    state = load_plain(p, p, map_location)
    if not isinstance(state, dict) or not isinstance(state.get("model"), dict):
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
