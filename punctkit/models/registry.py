"""Models registered by name and built from the `model:` section of a YAML config."""
from __future__ import annotations

import contextlib
import importlib
import inspect
import math
import threading
from typing import Any, Callable, Iterator

from punctkit.files import PunctkitError
from punctkit.models.base import PunctModel

MODELS: dict[str, type[PunctModel]] = {}
# Modules imported on first use, so that `punctkit --help` does not import every model.
_MODULES = (
    "punctkit.models.drnn_lwma",
    "punctkit.models.transformer",
    "punctkit.models.hier_seq2seq",
    "punctkit.models.concat_transformer",
    "punctkit.models.ff2",
)


def register(name: str) -> Callable[[type[PunctModel]], type[PunctModel]]:
    """Class decorator: make a model buildable as `model: {type: name, ...}`."""

    def deco(cls: type[PunctModel]) -> type[PunctModel]:
        MODELS[name] = cls
        cls.type_name = name  # type: ignore[attr-defined]
        return cls

    return deco


def _load_all() -> None:
    for mod in _MODULES:
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name != mod:  # a real missing dependency inside an existing module
                raise


def model_class(conf: dict[str, Any]) -> type[PunctModel]:
    """The registered class of a `model:` section, after checking every option is one of its
    constructor's (a one-line error otherwise); builds nothing."""
    _load_all()
    name = conf.get("type")
    if name not in MODELS:
        raise PunctkitError(f"unknown model type '{name}' (known: {', '.join(sorted(MODELS))})")
    cls = MODELS[name]
    params = inspect.signature(cls.__init__).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        unknown = [k for k in conf if k != "type" and k not in params]
        if unknown:
            raise PunctkitError(f"model '{name}' has no option(s) {', '.join(unknown)}")
    for k, v in conf.items():
        if k in params:
            check_option(name, k, v, str(params[k].annotation), params[k].default)
    return cls


def check_option(model: str, key: str, value: Any, annotation: str, default: Any = None) -> None:
    """A one-line error when a model option's value does not fit its declared type (int: a whole
    number >= 0, >= 1 where the default is, as for sizes; float: a finite number, a dropout in
    [0, 1); bool: true/false)."""
    kinds = {a.strip() for a in annotation.split("|")}
    if value is None and "None" in kinds:
        return
    where = f"model '{model}': option {key}"
    is_num = isinstance(value, (int, float)) and not isinstance(value, bool)
    if "bool" in kinds and isinstance(value, bool):
        return
    if "int" in kinds and isinstance(value, int) and not isinstance(value, bool):
        low = 1 if isinstance(default, int) and not isinstance(default, bool) and default >= 1 else 0
        if value < low:
            raise PunctkitError(f"{where} must be >= {low}, got {value}")
        return
    if "float" in kinds and is_num:
        if value != value or abs(value) == float("inf"):
            raise PunctkitError(f"{where} must be a finite number, got {value}")
        if "dropout" in key and not 0 <= value < 1:
            raise PunctkitError(f"{where} is a probability: give a value in [0, 1), got {value}")
        return
    expected = [t for t in ("int", "float", "bool") if t in kinds]
    if expected:
        raise PunctkitError(f"{where} must be {' or '.join(expected)}, got {value!r}")


def build_model(conf: dict[str, Any], **env: Any) -> PunctModel:
    """Build `conf["type"]` with the rest of `conf` as keyword arguments.

    `env` carries what the data decides, not the config: `vocab_size`,
    `n_labels`, `pad_id`, `embeddings` (a pre-trained matrix or None), `feat_dim`.
    The model's constructor takes the subset of these it declares.
    """
    cls = model_class(conf)
    params = inspect.signature(cls.__init__).parameters
    accepts_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
    kwargs = {k: v for k, v in env.items() if k in params or accepts_any}
    kwargs.update({k: v for k, v in conf.items() if k != "type"})
    try:
        return cls(**kwargs)
    except ValueError as e:  # torch's checks of sizes the config gave (e.g. d_model: 0)
        raise PunctkitError(f"model '{conf['type']}': {e} (check the model section's sizes)") from None
    except (MemoryError, RuntimeError) as e:  # a size this machine cannot hold (d_model: 50000)
        if not isinstance(e, MemoryError) and "allocate" not in str(e):
            raise
        raise PunctkitError(f"model '{conf['type']}': its sizes need more memory than this machine has "
                            f"(check the model section's sizes)") from None


class _TooLarge(Exception):
    """Raised inside a build on the meta device once it has made more than the weights hold."""


@contextlib.contextmanager
def _counting(max_values: int, max_tensors: int) -> Iterator[None]:
    """Count the tensors a model build makes (parameters and buffers as they are registered, and
    the clones that copy.deepcopy makes of whole layers, as nn.TransformerEncoder stacks them) and
    raise `_TooLarge` as soon as they pass either bound. Nothing is drawn into a meta tensor: normal_
    there runs a Python reference that imports torch's compiler (1.9 s of a command's start)."""
    import torch
    from torch.nn.modules import module as tm
    from torch.overrides import TorchFunctionMode

    made = [0, 0]
    thread = threading.get_ident()  # the hooks are global: another thread's modules are not this build's

    def add(t: Any) -> None:
        if t is None or threading.get_ident() != thread:
            return
        made[0] += t.numel()
        made[1] += 1
        if made[0] > max_values or made[1] > max_tensors:
            raise _TooLarge

    def on_tensor(module: Any, name: str, t: Any) -> None:
        add(t)

    draws = (torch.nn.init.normal_, torch.Tensor.normal_)

    class Clones(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
            if func in draws:  # a meta tensor has no values to draw
                t = args[0] if args else (kwargs or {}).get("tensor")
                if getattr(t, "is_meta", False):
                    return t
            out = func(*args, **(kwargs or {}))
            if func is torch.Tensor.clone:
                add(out)
            return out

    hooks = [tm.register_module_parameter_registration_hook(on_tensor),
             tm.register_module_buffer_registration_hook(on_tensor)]
    try:
        with Clones():
            yield
    finally:
        for h in hooks:
            h.remove()


def misfit(conf: dict[str, Any], env: dict[str, Any], shapes: dict[str, tuple[int, ...]]) -> str | None:
    """Why the model of `conf` cannot hold the weights `shapes` (name -> shape), or None when it can.

    The model is built on the meta device (no memory for its weights), its tensors counted as they
    are made: a build that makes more than twice the values (or tensors) the weights hold, plus a
    little for buffers a state dict leaves out, stops at once, so `d_model: 50000` or
    `n_layers: 200000` over a small checkpoint is found in milliseconds and bounded memory. A build
    within that is compared name by name and shape by shape with the weights (what
    `load_state_dict` checks, before anything is allocated)."""
    import torch

    values = sum(math.prod(s) for s in shapes.values())
    try:
        with torch.device("meta"), _counting(2 * values + 2 ** 20, 2 * len(shapes) + 1000):
            built = build_model(conf, **env)
    except _TooLarge:
        return f"it builds a model larger than the weights' {values} values in {len(shapes)} tensors"
    except Exception:  # a model that cannot be built on the meta device: no verdict (the build checks it)
        return None
    want = {k: tuple(v.shape) for k, v in built.state_dict().items()}
    missing = [k for k in want if k not in shapes]
    extra = [k for k in shapes if k not in want]
    if missing or extra:
        return (f"it builds tensors the weights lack ({', '.join(missing[:3])})" if missing else
                f"the weights hold tensors it does not build ({', '.join(extra[:3])})")
    for k, shape in want.items():
        if tuple(shapes[k]) != shape:
            return f"it builds {k} of shape {list(shape)}, the weights hold {list(shapes[k])}"
    return None


def model_needs(conf: dict[str, Any]) -> tuple[str, ...]:
    """The batch keys the configured model type declares (without building it)."""
    return tuple(getattr(model_class(conf), "needs", ()))
