"""punctkit: punctuation and casing restoration for speech transcripts.

    >>> from punctkit import Punctuator
    >>> Punctuator.load("fast").punctuate("so i'm here do you know why")

The public names (`Punctuator`, `Ensemble`, `Engine`, `Labelled`, `Backend`, `load_model`: punctkit/infer/)
are imported on first use, so `import punctkit` stays light (no torch)."""
__version__ = "0.1.0"


def __getattr__(name: str):
    if name in ("Backend", "Engine", "Ensemble", "Labelled", "Punctuator", "load_model"):
        import punctkit.infer

        return getattr(punctkit.infer, name)
    raise AttributeError(f"module 'punctkit' has no attribute {name!r}")
