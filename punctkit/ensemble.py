"""Ensembles of packed models: the weighted average of their per-word label distributions.

    >>> from punctkit.ensemble import Ensemble
    >>> Ensemble.load(["a.pkt", "b.pkt"], weights=[0.6, 0.4]).punctuate("so i 'm here")

Each member keeps its own frontend, windows and search (an encoder-decoder's rows are
its step distributions given its own chosen labels); the average is taken per input
word, and each word's label is the arg-max of the average. An `Ensemble` has the
labelling interface of `Punctuator` (label_words, stream_labels, label_utterances,
probs, punctuate), so `punctuate_file`, `label_units` and what is built on them run
it unchanged. `punctkit pack --ensemble` stores one in a single package, which
`load_model` returns as an Ensemble.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from punctkit.data.labels import LabelSet
from punctkit.files import PunctkitError
from punctkit.decode.combine import check_inventories, combine, parse_weights  # noqa: F401 (the ensemble's API)
from punctkit.package import EnsemblePackage, read_package
from punctkit.package import pack_ensemble as pack_ensemble_files
from punctkit.punctuator import Fixed, Labeller, Punctuator, fixed_labels
from punctkit.text.frontend import Frontend


@dataclass
class Ensemble(Labeller):
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
            loaded = load_model(p, **kwargs)
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


def load_model(path: str | Path, **opts: Any) -> "Punctuator | Ensemble":
    """Any packed model: a Punctuator, or for an ensemble package (`punctkit pack --ensemble`) an
    Ensemble of its members with their packed weights; `opts` as `Punctuator.load`'s, for each model."""
    pkg = read_package(path)
    if isinstance(pkg, EnsemblePackage):
        members = [Punctuator.from_package(m, **opts) for m in pkg.members]
        return Ensemble(members, pkg.weights, [f"{pkg.path} (model {k})" for k in range(len(members))], pkg.manifest)
    return Punctuator.from_package(pkg, **opts)


def pack_ensemble(exp_dirs: list[str | Path], out: str | Path, weights: str | None = None,
                  **kwargs: Any) -> dict[str, Any]:
    """`punctkit pack --ensemble` (punctkit/package.py's `pack_ensemble`; `weights` as `0.6,0.4`,
    default equal), the file checked by loading it back before it replaces `out`."""
    return pack_ensemble_files(list(exp_dirs), out, parse_weights(weights, len(exp_dirs)),
                               verify=load_model, **kwargs)
