"""punctkit: punctuation and casing restoration for speech transcripts."""
__version__ = "0.1.0"
