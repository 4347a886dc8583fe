"""Models registered by name and built from the `model:` section of a YAML config."""
from __future__ import annotations

import importlib
import inspect
from typing import Any, Callable

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


def model_needs(conf: dict[str, Any]) -> tuple[str, ...]:
    """The batch keys the configured model type declares (without building it)."""
    return tuple(getattr(model_class(conf), "needs", ()))
