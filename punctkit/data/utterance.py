"""The utterance type every reader, writer and data directory shares (a leaf: imports nothing of punctkit)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Utterance:
    """One utterance: its id, its words and one label per word."""

    uttid: str
    words: list[str]
    labels: list[str]
