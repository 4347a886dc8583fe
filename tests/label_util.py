"""Helpers over the engine's one labelling call (`Engine.label`) for tests that label plain words."""
from __future__ import annotations

from typing import Any

from punctkit.infer.engine import Engine, as_unit


def words_labels(engine: Engine, words: list[str], forced: list[str | None] | None = None,
                 probs: bool = False) -> Any:
    """The labels of one stream of words (`forced`: a mark per word, None where predicted); with
    `probs`, (labels, words x labels distributions)."""
    done = next(engine.label([as_unit(words, forced)], forced=forced is not None, probs=True))
    return (done.labels, done.rows) if probs else done.labels


def words_rows(engine: Engine, words: list[str]) -> Any:
    """The distributions (words x labels) of one stream of words."""
    return words_labels(engine, words, probs=True)[1]


def streamed_labels(engine: Engine, words: list[str]) -> list[str]:
    """The labels of one stream of words read as it comes (`one_stream`: in segments of `chunk_words`)."""
    return [lab for done in engine.label([as_unit(words)], one_stream=True) for lab in done.labels]


def utterance_labels(engine: Engine, utts: list[tuple[list[str], Any]], probs: bool = False) -> list[Any]:
    """Labels of independent utterances, (words, forced marks or None) each; with `probs`, (labels, rows)."""
    done = engine.label([as_unit(w, f) for w, f in utts], forced=True, probs=True)
    return [(d.labels, d.rows) if probs else d.labels for d in done]
