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
    return cls


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
    return cls(**kwargs)


def model_needs(conf: dict[str, Any]) -> tuple[str, ...]:
    """The batch keys the configured model type declares (without building it)."""
    return tuple(getattr(model_class(conf), "needs", ()))
