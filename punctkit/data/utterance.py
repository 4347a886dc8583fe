"""The utterance type every reader, writer and data directory shares (a leaf: imports nothing of punctkit)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Utterance:
    """One utterance: its id, its words and one label per word."""

    uttid: str
    words: list[str]
    labels: list[str]


def is_one_word(name: str) -> bool:
    """Whether `name` can be a Kaldi id: not empty, no white space (Kaldi's files split lines on it)."""
    return bool(name) and len(name.split()) == 1 and name == name.strip()
