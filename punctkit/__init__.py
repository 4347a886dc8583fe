"""punctkit: punctuation and casing restoration for speech transcripts."""
__version__ = "0.1.0"


def __getattr__(name: str):
    """`punctkit.Punctuator` is imported on first use, so `import punctkit` stays light (no torch)."""
    if name == "Punctuator":
        from punctkit.punctuator import Punctuator

        return Punctuator
    raise AttributeError(f"module 'punctkit' has no attribute {name!r}")
