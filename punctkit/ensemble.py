"""Ensembles of packed models: the weighted average of their per-word label distributions.

    >>> from punctkit.ensemble import Ensemble
    >>> Ensemble.load(["a.pkt", "b.pkt"], weights=[0.6, 0.4]).punctuate("so i 'm here")

Each member keeps its own frontend, windows and search (an encoder-decoder's rows are
its step distributions given its own chosen labels); the average is taken per input
word, and each word's label is the arg-max of the average. An `Ensemble` has the
labelling interface of `Punctuator` (label_words, stream_labels, label_utterances,
probs, punctuate), so `punctuate_file`, `label_units` and what is built on them run
it unchanged. `punctkit pack --ensemble` stores one in a single package, which
`Punctuator.load` returns as an Ensemble.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

from punctkit.data.formats import AsrUtterance, split_text
from punctkit.data.labels import LabelSet, default_substitution
from punctkit.files import PunctkitError
from punctkit.punctuator import Fixed, Punctuator, fixed_labels, label_units, split_rows
from punctkit.text.frontend import Frontend


def parse_weights(spec: str | Sequence[float] | None, n: int, source: str = "--weights") -> list[float]:
    """`n` non-negative weights summing to 1, from `0.6,0.4` or a list (None: equal weights)."""
    if spec is None:
        return [1.0 / n] * n
    try:
        w = [float(x) for x in spec.split(",")] if isinstance(spec, str) else [float(x) for x in spec]
    except ValueError:
        raise PunctkitError(f"{source} '{spec}': give one number per model, e.g. 0.6,0.4") from None
    if len(w) != n:
        raise PunctkitError(f"{source}: {len(w)} weights for {n} models; give one per model")
    if any(not np.isfinite(x) or x < 0 for x in w) or sum(w) <= 0:
        raise PunctkitError(f"{source}: weights must be non-negative numbers, not all 0 (got {spec})")
    total = sum(w)
    return [x / total for x in w]


def check_inventories(names: Sequence[str], inventories: Sequence[LabelSet]) -> None:
    """A one-line error naming two models whose label inventories differ."""
    for name, inv in zip(names[1:], inventories[1:]):
        if inv.name != inventories[0].name:
            raise PunctkitError(f"{names[0]} (inventory {inventories[0].name}) and {name} (inventory {inv.name}) "
                                f"label different marks: the models of an ensemble must share one inventory")


def combine(rows: Sequence[np.ndarray], weights: Sequence[float]) -> np.ndarray:
    """The weighted average of the members' words x labels distributions."""
    out = np.zeros_like(np.asarray(rows[0], dtype=np.float64))
    for r, w in zip(rows, weights):
        out += w * np.asarray(r, dtype=np.float64)
    return out


@dataclass
class Ensemble:
    """Packed models whose per-word label distributions are averaged (weights sum to 1)."""

    members: list[Punctuator]
    weights: list[float]
    names: list[str] = field(default_factory=list)      # each member's file (errors, the card)
    manifest: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.members:
            raise PunctkitError("an ensemble needs at least one model")
        self.names = self.names or [f"model {k}" for k in range(len(self.members))]
        check_inventories(self.names, [m.inventory for m in self.members])
        self.weights = parse_weights(self.weights, len(self.members))

    @classmethod
    def load(cls, paths: Sequence[str | Path], weights: str | Sequence[float] | None = None,
             **kwargs: Any) -> "Ensemble":
        """Load packed models (`Punctuator.load`'s keyword options apply to each) as one ensemble;
        a path that is itself an ensemble package contributes its members with their packed weights."""
        members: list[Punctuator] = []
        names: list[str] = []
        packed: list[float] = []
        for p in paths:
            loaded = Punctuator.load(p, **kwargs)
            if isinstance(loaded, Ensemble):
                members += loaded.members
                names += loaded.names
                packed += [w / len(paths) for w in loaded.weights]
            else:
                members.append(loaded)
                names.append(str(p))
                packed.append(1.0 / len(paths))
        return cls(members, parse_weights(weights, len(members)) if weights is not None else packed, names)

    # --- what Punctuator's callers read
    @property
    def inventory(self) -> LabelSet:
        return self.members[0].inventory

    @property
    def frontend(self) -> Frontend:
        """The first member's frontend (for counting unknown words; each member reads with its own)."""
        return self.members[0].frontend

    @property
    def backend(self) -> str:
        return "+".join(m.backend for m in self.members)

    @property
    def card(self) -> dict[str, Any]:
        """The ensemble package's card, else one built from the members' cards."""
        return self.manifest.get("card") or {"model": "ensemble", "weights": self.weights,
                                             "members": [dict(m.card, file=n) for m, n in zip(self.members,
                                                                                                 self.names)]}

    # --- labelling
    def stream_labels(self, items: Iterable[tuple[str, str | None]], probs: bool = False) -> Iterator[Any]:
        """The label of every word of one stream of (word, fixed mark or None), in order, in bounded memory
        (each member decodes its own segments; the input is buffered at most a segment apart);
        with `probs`, (label, averaged row); a fixed mark's row is still the averaged distribution."""
        copies = itertools.tee(items, len(self.members) + 1)
        outs = [m.stream_labels(c, probs=True) for m, c in zip(self.members, copies)]
        for (_, fixed), *got in zip(copies[-1], *outs):
            row = combine([r for _, r in got], self.weights)
            label = fixed_labels(self.inventory, [int(row.argmax())], [fixed])[0]
            yield (label, row) if probs else label

    def label_utterances(self, utts: Iterable[tuple[list[str], Fixed | None]],
                         probs: bool = False) -> Iterator[Any]:
        """Labels of independent utterances (each its own stream); with `probs`, (labels, rows)."""
        copies = itertools.tee(utts, len(self.members) + 1)
        outs = [m.label_utterances(c, probs=True) for m, c in zip(self.members, copies)]
        for (_, fixed), *got in zip(copies[-1], *outs):
            rows = combine([r for _, r in got], self.weights)
            labels = fixed_labels(self.inventory, rows.argmax(1).tolist(), fixed)
            yield (labels, rows) if probs else labels

    def label_words(self, words: list[str], fixed: Fixed | None = None, probs: bool = False) -> Any:
        """Labels of one stream of words; with `probs`, (labels, words x labels averaged distributions)."""
        items = zip(words, fixed if fixed is not None else [None] * len(words))
        if probs:
            return split_rows(self.stream_labels(items, True), len(self.inventory.labels))
        return list(self.stream_labels(items))

    def probs(self, words: list[str]) -> np.ndarray:
        """The averaged distribution over the inventory's labels for each word of one stream."""
        return self.label_words(words, probs=True)[1]

    def punctuate(self, text: str, keep_input_marks: bool = False, capitalize: bool = True) -> str:
        """Punctuated, readable text, as `Punctuator.punctuate`."""
        rules = default_substitution(self.inventory)
        passages = (split_text(t, self.inventory, rules) for t in text.splitlines())
        lines = (AsrUtterance(str(i), p.words, p.marks, p.written, lineno=i, has_id=False)
                 for i, p in enumerate(passages, 1))
        return "\n".join(" ".join(shown) for _, _, shown in label_units(self, lines, True, keep_input_marks,
                                                                         capitalize))
