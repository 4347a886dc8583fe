"""The models punctkit ships with (package data), by name: `-m fast` (the default: `punctuate`, `serve`
and `load_model()` use it when no model is named) and `-m accurate`. Both are true-case packages of
recipes/ted trained on TED talks and Earnings-22 calls, ONNX only: `fast` is DRNN-LWMA over
MiniLM-pooled vectors, `accurate` a fine-tuned MiniLM-L6 encoder grown to nine layers, in int8, about a
sixth as fast and several points more accurate. Each card names the command that rebuilds it, its figures
and its training data's licences (unlike punctkit's Apache-2.0); `punctkit models` prints them.

`model_path` is the one place a model argument becomes a file: a path that exists is that file, a
shipped model's name is its package, and any other name is a one-line error listing the names."""
from __future__ import annotations

import os
from pathlib import Path

from punctkit.files import PunctkitError

# name -> the package file in this directory; the first is the default
SHIPPED: dict[str, str] = {"fast": "fast.pkt", "accurate": "accurate.pkt"}
DEFAULT_NAME = "fast"
DEFAULT_MODEL = SHIPPED[DEFAULT_NAME]


def shipped_path(name: str) -> Path:
    """The package of a shipped model; a one-line error when the installation lacks it."""
    path = Path(__file__).with_name(SHIPPED[name])
    if not path.is_file():
        raise PunctkitError(f"the shipped model '{name}' ({path}) is missing from this installation: "
                            f"reinstall punctkit (pip install .), or name a package file with -m")
    return path


def default_model() -> Path:
    """The path of the default shipped model (`fast`)."""
    return shipped_path(DEFAULT_NAME)


def model_path(model: str | os.PathLike) -> Path:
    """A model argument as a file: an existing path as it is; a shipped model's name (`fast`) as its
    package; a name that is neither (no directory part, no `.pkt`) a one-line error listing the names;
    any other path as it is (its reader says it is missing)."""
    text = os.fspath(model)
    if os.path.exists(text):
        return Path(text)
    if text in SHIPPED:
        return shipped_path(text)
    if os.sep not in text and "/" not in text and not text.endswith(".pkt"):
        raise PunctkitError(f"unknown model '{text}': not a shipped model ({', '.join(SHIPPED)}) and no such "
                            f"file; name a shipped model or give a package file's path (punctkit models lists them)")
    return Path(text)
