"""The model punctkit ships with (package data): `punctuate`, `serve` and `Punctuator.load()` use it
when no model is named. It is a fast true-case package (recipes/ted: DRNN-LWMA over MiniLM-pooled
vectors, ONNX, int8) trained on TED talk transcripts; its card names the command that rebuilds it and
the training data's licence (CC BY-NC-ND, unlike punctkit's Apache-2.0)."""
from __future__ import annotations

from pathlib import Path

from punctkit.files import PunctkitError

DEFAULT_MODEL = "ted_truecase.pkt"


def default_model() -> Path:
    """The path of the shipped model; a one-line error when the installation lacks it."""
    path = Path(__file__).with_name(DEFAULT_MODEL)
    if not path.is_file():
        raise PunctkitError(f"no model given (-m model.pkt) and the default model {path} is missing from this "
                            f"installation: reinstall punctkit (pip install .), or name a model with -m")
    return path
