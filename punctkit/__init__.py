"""punctkit: punctuation and casing restoration for speech transcripts.

    >>> import punctkit
    >>> punctkit.load("fast").punctuate("so i'm here do you know why")

The public names (`load` and its `Model`: punctkit/api.py, docs/api.md; `PunctStream`; the engine's
`Engine`, `Ensemble`, `Labelled`, `Runner`, `load_model`: punctkit/infer/) are imported
on first use, so `import punctkit` stays light (no numpy, onnxruntime or torch until one is used)."""
__version__ = "0.1.0"

# each public name and the module it is imported from on first use
_PUBLIC = {
    "load": "punctkit.api", "Model": "punctkit.api",
    "PunctStream": "punctkit.infer.stream",
    "Runner": "punctkit.infer", "Engine": "punctkit.infer", "Ensemble": "punctkit.infer",
    "Labelled": "punctkit.infer", "load_model": "punctkit.infer",
}
__all__ = list(_PUBLIC)


def __getattr__(name: str):
    """A public name, imported from its module (`_PUBLIC`) on first use."""
    home = _PUBLIC.get(name)
    if home is None:
        raise AttributeError(f"module 'punctkit' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(home), name)


def __dir__() -> list[str]:
    """The module's own names and the public ones not imported yet."""
    return sorted(set(globals()) | set(_PUBLIC))
