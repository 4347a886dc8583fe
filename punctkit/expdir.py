"""An experiment directory (written by `punctkit train`): its config, its checkpoints, its model
(ESPnet's `build_model_from_file`), for decoding, packing and training alike.

A model dir holds `config.yaml` (with its `resolved:` section), `frontend/`, and checkpoints
(`model.avg.pt`, `model.best.pt`, `checkpoints/epoch_N.pt`). A checkpoint holds tensors and
plain data only (dicts, lists, numbers, strings): it is loaded with
`torch.load(weights_only=True)`, so no file runs code. Checkpoints written before the RNG
states became tensors and lists hold numpy's state as an ndarray; they load through
`LEGACY_GLOBALS`, the few numpy types that needs, and nothing else.
"""
from __future__ import annotations

import io
import math
import pickle
import pickletools
import re
import warnings
import zipfile
from pathlib import Path
from typing import IO, Any

import numpy as np
import torch

from punctkit.config import load_config
from punctkit.data.labels import LabelSet, get_inventory
from punctkit.files import PunctkitError, read_json_file
from punctkit.models.base import PunctModel
from punctkit.models.registry import build_model, misfit
from punctkit.text.frontend import Frontend, load_frontend

EPOCH_RE = re.compile(r"^epoch_(\d+)\.pt$")


def _legacy_globals() -> list[Any]:
    """What numpy's RNG state (a uint32 ndarray) needs to unpickle, under numpy 2's and numpy 1's names."""
    multiarray = np._core.multiarray if hasattr(np, "_core") else np.core.multiarray
    found = [np.ndarray, np.dtype, multiarray._reconstruct,
             (multiarray._reconstruct, "numpy.core.multiarray._reconstruct")]
    return found + ([np.dtypes.UInt32DType] if hasattr(np, "dtypes") else [])


LEGACY_GLOBALS = _legacy_globals()


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


# atomic_write's temporary name of an epoch checkpoint (`.epoch_N.pt.XXXXXXXX.tmp`, tempfile.mkstemp's
# eight characters): left behind only when a run is killed while it writes one
EPOCH_TMP_RE = re.compile(r"^\.epoch_\d+\.pt\.[a-z0-9_]{8}\.tmp$")


def epoch_history(path: Path, state: dict[str, Any] | None = None) -> list[dict[str, Any]] | None:
    """The per-epoch records an epoch checkpoint carries (`state.history`, written with it), or None
    when it carries none (`state`: its contents, when already read)."""
    st = (state or load_checkpoint(path)).get("state")
    history = st.get("history") if isinstance(st, dict) else None
    if not isinstance(history, list) or not all(isinstance(h, dict) and isinstance(h.get("epoch"), int)
                                                for h in history) or not history:
        return None
    return history


def training_history(model_dir: str | Path) -> list[dict[str, Any]] | None:
    """A training run's per-epoch records: history.json, unless its last epoch is older than the last
    epoch checkpoint (a run killed between the checkpoint's rename and history.json's, and not resumed
    since), then the record that checkpoint carries; None when there is neither. An unreadable
    history.json is a one-line error."""
    d = Path(model_dir)
    hist = d / "history.json"
    history = read_json_file(hist) if hist.is_file() else None
    last = max(epoch_checkpoints(d / "checkpoints"), default=None)
    recorded = max((h["epoch"] for h in history if isinstance(h, dict) and isinstance(h.get("epoch"), int)),
                   default=0) if isinstance(history, list) else 0
    if last is not None and last > recorded:
        return epoch_history(d / "checkpoints" / f"epoch_{last}.pt") or history
    return history


def require_model_dir(model_dir: str | Path, for_a_file: str) -> Path:
    """`model_dir` as a Path, or a one-line error: a file given where a trained model directory goes
    (a package: `for_a_file` says what to do instead), or nothing there."""
    d = Path(model_dir)
    if d.is_file():
        raise PunctkitError(f"{d}: a file, not a trained model directory (exp/NAME); {for_a_file}")
    if not d.is_dir():
        raise PunctkitError(f"model directory not found: {d}")
    return d


def read_model_config(model_dir: str | Path) -> dict[str, Any]:
    """The resolved config of a trained model dir (one-line error when missing)."""
    require_model_dir(model_dir, f"a package is re-packed with its scores by `punctkit pack {model_dir} "
                                 f"--card-results SCORE.json`")
    p = Path(model_dir) / "config.yaml"
    if not p.is_file():
        raise PunctkitError(f"{model_dir}: no config.yaml (not a trained model directory?)")
    conf = load_config(p)
    if "resolved" not in conf:
        raise PunctkitError(f"{p}: no 'resolved' section (written by punctkit train)")
    return conf


def pick_device(ngpu: int) -> torch.device:
    """cuda:0 with `ngpu >= 1` (error if there is none), else the CPU."""
    if ngpu <= 0:
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise PunctkitError(f"--ngpu {ngpu} but no CUDA device is visible")
    return torch.device("cuda", 0)


def model_env(conf: dict[str, Any]) -> dict[str, Any]:
    """The build_model keyword arguments recorded at training time (`resolved:` of config.yaml)."""
    env = dict(conf["resolved"].get("env", {}))
    shape = env.pop("embeddings_shape", None)
    env["embeddings"] = np.zeros(shape, dtype=np.float32) if shape else None  # weights come from the checkpoint
    return env


def offline_model_conf(model_conf: dict[str, Any], frontend_dir: Path) -> dict[str, Any]:
    """The model section with a PLM path replaced by its config.json (`plm: {config: ...}`): the
    frontend's copy (`frontend_dir/plm/config.json`) when it has one, else the named encoder's."""
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
    if isinstance(spec, dict) and spec.get("layers") is not None:
        conf["plm"]["layers"] = spec["layers"]  # the encoder was cut to its first N layers
    for key in ("extra_layers", "extra_copy", "extra_gate"):  # and grown by K gated layers
        if isinstance(spec, dict) and spec.get(key) is not None:
            conf["plm"][key] = spec[key]
    return conf


def build_for(conf: dict[str, Any], state: dict[str, Any], config: str | Path, weights: str | Path,
              advice: str, frontend_dir: Path | None = None) -> PunctModel:
    """The model of `conf` (its `model:` section and `resolved:` env) that holds the weights `state`.

    The config is checked against the weights before anything is allocated: the embedding table
    `resolved.env` declares must fit in them, and the model, built first on the meta device
    (`registry.misfit`: bounded by the weights' size, then name by name and shape by shape), must
    have their tensors. A config that builds more than its weights (`d_model: 50000` over a small
    model.pt) is then one line naming `config` and `weights`, with `advice`, not an allocation of
    gigabytes. `frontend_dir`: where a pre-trained encoder's config.json may be (the check builds
    it from that, since pre-trained weights cannot be read onto the meta device)."""
    shapes = {k: tuple(v.shape) for k, v in state.items() if isinstance(v, torch.Tensor)}
    values = sum(math.prod(s) for s in shapes.values())
    emb = conf["resolved"].get("env", {}).get("embeddings_shape")
    if isinstance(emb, list) and all(isinstance(n, int) for n in emb) and math.prod(emb) > values:
        raise PunctkitError(f"{config} does not fit {weights} (its embeddings_shape {emb} is larger than "
                            f"the weights' {values} values); {advice}")  # before model_env allocates it
    env = model_env(conf)
    model_conf = conf["model"]
    if frontend_dir is not None:
        try:
            model_conf = offline_model_conf(model_conf, frontend_dir)
        except PunctkitError:
            pass  # no encoder config to check with: the build names what is missing
    why = misfit(model_conf, env, shapes)
    if why is not None:
        raise PunctkitError(f"{config} does not fit {weights} ({why}); {advice}")
    return build_model(conf["model"], **env)


def find_checkpoint(model_dir: Path, checkpoint: str | None) -> Path:
    """`checkpoint` (a path, or a name inside the model dir), else model.avg.pt, model.best.pt, the last epoch."""
    if checkpoint:
        p = Path(checkpoint)
        return p if p.is_file() else model_dir / checkpoint
    for name in ("model.avg.pt", "model.best.pt"):
        if (model_dir / name).is_file():
            return model_dir / name
    epochs = epoch_checkpoints(model_dir / "checkpoints")
    if not epochs:
        raise PunctkitError(f"{model_dir}: no model.avg.pt, model.best.pt or checkpoints/epoch_N.pt")
    return list(epochs.values())[-1]


def load_experiment_model(model_dir: str | Path, checkpoint: str | None = None, device: torch.device | str = "cpu",
               conf: dict[str, Any] | None = None) -> tuple[PunctModel, Frontend, LabelSet, dict[str, Any]]:
    """Rebuild a trained model (eval mode, on `device`) with its frontend, inventory and config
    (`conf`: its config.yaml when already read)."""
    d = Path(model_dir)
    conf = conf or read_model_config(d)
    frontend = load_frontend(d / "frontend")
    inventory = get_inventory(conf["resolved"]["inventory"])
    path = find_checkpoint(d, checkpoint)
    state = load_checkpoint(path)
    model = build_for(conf, state["model"], d / "config.yaml", path,
                      "restore the config.yaml it was trained with, or name the checkpoint trained with this one",
                      d / "frontend")
    try:
        model.load_state_dict(state["model"])
    except RuntimeError as e:
        raise PunctkitError(f"{path}: does not match the model of {d / 'config.yaml'} "
                            f"({str(e).splitlines()[0][:100]})") from None
    return model.to(device).eval(), frontend, inventory, conf
