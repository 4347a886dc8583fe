"""The optional parts of an installation: which extra (`pip install 'punctkit[EXTRA]'`, setup.cfg) brings
each module that a plain `pip install punctkit` leaves out, and the one line a command that needs a missing
one fails with (punctkit/cli_errors.py turns every ModuleNotFoundError for these modules into it).

A plain install runs punctuate, score, convert, models, serve and `pack` of a package with onnxruntime
alone; training, decoding with torch, features, word vectors and BPE need the `train` extra."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Extra:
    """An optional module: the PyPI distribution that provides it and the extra that installs it."""

    distribution: str
    extra: str


# top-level module name -> its extra; setup.cfg's [options.extras_require] lists the same
EXTRAS = {
    "torch": Extra("torch", "train"),
    "kaldiio": Extra("kaldiio", "train"),
    "sentencepiece": Extra("sentencepiece", "train"),
    "subword_nmt": Extra("subword-nmt", "train"),
    "gensim": Extra("gensim", "train"),
    "kaldi_native_fbank": Extra("kaldi-native-fbank", "train"),
    "scipy": Extra("scipy", "train"),
    "transformers": Extra("transformers", "plm"),
    "onnx": Extra("onnx", "onnx"),
    "onnxscript": Extra("onnxscript", "onnx"),
    "aiohttp": Extra("aiohttp", "serve"),
    "pocketsphinx": Extra("pocketsphinx", "speech"),
    "matplotlib": Extra("matplotlib", "bench"),
}


def missing_extra(e: ModuleNotFoundError, command: Optional[str] = None) -> Optional[str]:
    """The one-line message for `e` when the module it failed to import is one an extra provides
    (`punctkit train needs torch, which is not installed: pip install 'punctkit[train]'`); else None."""
    extra = EXTRAS.get((e.name or "").partition(".")[0])
    if extra is None:
        return None
    who = f"punctkit {command}" if command else "this command"
    return f"{who} needs {extra.distribution}, which is not installed: pip install 'punctkit[{extra.extra}]'"
