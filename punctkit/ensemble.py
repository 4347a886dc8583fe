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

Members that onnxruntime runs over one frontend (byte-identical frontend files) and one
window plan read the same tokens in the same windows, so the ensemble reads each segment
once and runs the members' graphs side by side on every batch, each in its own thread with
its share of `threads` (punctkit/onnx.py: OnnxTaggers): the same labels and probabilities
as member by member (a word's row comes from the same owner window), in about the time of
one member when there are cores enough.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from punctkit.data.labels import LabelSet
from punctkit.files import PunctkitError
from punctkit.decode.combine import check_inventories, combine, parse_weights  # noqa: F401 (the ensemble's API)
from punctkit.package import EnsemblePackage, Package, read_package
from punctkit.package import pack_ensemble as pack_ensemble_files
from punctkit.punctuator import Fixed, Labeller, Punctuator, decode_options, fixed_labels, pick_backend
from punctkit.text.frontend import Frontend


@dataclass
class Ensemble(Labeller):
    """Packed models whose per-word label distributions are averaged (weights sum to 1)."""

    members: list[Punctuator]
    weights: list[float]
    names: list[str] = field(default_factory=list)      # each member's file (errors, the card)
    manifest: dict[str, Any] = field(default_factory=dict)
    side_by_side: Punctuator | None = None  # the members as one tagger over shared windows (`from_packages`)

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
        pkgs: list[Package] = []
        names: list[str] = []
        packed: list[float] = []
        for p in paths:
            pkg = read_package(p)
            if isinstance(pkg, EnsemblePackage):
                pkgs += pkg.members
                names += [f"{pkg.path} (model {k})" for k in range(len(pkg.members))]
                packed += [w / len(paths) for w in pkg.weights]
            else:
                pkgs.append(pkg)
                names.append(str(p))
                packed.append(1.0 / len(paths))
        return cls.from_packages(pkgs, parse_weights(weights, len(pkgs)) if weights is not None else packed,
                                 names, **kwargs)

    @classmethod
    def from_packages(cls, pkgs: list[Package], weights: Sequence[float], names: list[str],
                      manifest: dict[str, Any] | None = None, **opts: Any) -> "Ensemble":
        """The ensemble of read packages (`Punctuator.load`'s options for each); where `side_by_side`
        allows, the members share `threads` (0: every CPU this process may use) and run side by side."""
        together = side_by_side(pkgs, opts)
        if together:
            from punctkit.onnx import OnnxTaggers, usable_cpus

            cores = int(opts.get("threads") or 0) or usable_cpus()
            opts = dict(opts, threads=max(1, cores // len(pkgs)))
        members = [Punctuator.from_package(p, **opts) for p in pkgs]
        ens = cls(members, list(weights), names, manifest or {})
        if together:
            run = OnnxTaggers([m.tagger for m in members], ens.weights, workers=min(len(members), cores))
            first = members[0]
            batch_size, pad_id = first.options.batch_size, first.frontend.pad_id
            ens.side_by_side = Punctuator(lambda ds: run.predict(ds, batch_size, pad_id), first.frontend,
                                          first.inventory, first.conf, {}, "onnx", None, first.chunk_words,
                                          first.options)
        return ens

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
        if self.side_by_side is not None:
            yield from self.side_by_side.stream_labels(items, probs)
            return
        copies = itertools.tee(items, len(self.members) + 1)
        outs = [m.stream_labels(c, probs=True) for m, c in zip(self.members, copies)]
        for (_, fixed), *got in zip(copies[-1], *outs):
            row = combine([r for _, r in got], self.weights)
            label = fixed_labels(self.inventory, [int(row.argmax())], [fixed])[0]
            yield (label, row) if probs else label

    def label_utterances(self, utts: Iterable[tuple[list[str], Fixed | None]],
                         probs: bool = False) -> Iterator[Any]:
        """Labels of independent utterances (each its own stream); with `probs`, (labels, rows)."""
        if self.side_by_side is not None:
            yield from self.side_by_side.label_utterances(utts, probs)
            return
        copies = itertools.tee(utts, len(self.members) + 1)
        outs = [m.label_utterances(c, probs=True) for m, c in zip(self.members, copies)]
        for (_, fixed), *got in zip(copies[-1], *outs):
            rows = combine([r for _, r in got], self.weights)
            labels = fixed_labels(self.inventory, rows.argmax(1).tolist(), fixed)
            yield (labels, rows) if probs else labels


def side_by_side(pkgs: list[Package], opts: dict[str, Any]) -> bool:
    """Whether an ensemble's members can run as one tagger: several, all on onnxruntime under
    `opts` (`Punctuator.load`'s), over byte-identical frontends, the same windows and the same
    look-ahead by construction (direction, delay)."""
    if len(pkgs) < 2 or len({p.frontend_digest for p in pkgs}) != 1:
        return False
    if any(pick_backend(p, opts.get("backend", "auto"), opts.get("ngpu", 0), opts.get("quantize", False)) != "onnx"
           for p in pkgs):
        return False
    plans = {(o.window, o.step, o.batch_size, p.conf["model"].get("direction"), p.conf["model"].get("delay"))
             for p, o in ((p, decode_options(p, opts.get("batch_size"), opts.get("beam"), opts.get("step")))
                          for p in pkgs)}
    return len(plans) == 1  # (a uni-directional model's delay decides what a stream may commit)


def load_model(path: str | Path, **opts: Any) -> "Punctuator | Ensemble":
    """Any packed model: a Punctuator, or for an ensemble package (`punctkit pack --ensemble`) an
    Ensemble of its members with their packed weights; `opts` as `Punctuator.load`'s, for each model."""
    pkg = read_package(path)
    if isinstance(pkg, EnsemblePackage):
        return Ensemble.from_packages(pkg.members, pkg.weights,
                                      [f"{pkg.path} (model {k})" for k in range(len(pkg.members))],
                                      pkg.manifest, **opts)
    return Punctuator.from_package(pkg, **opts)


def pack_ensemble(exp_dirs: list[str | Path], out: str | Path, weights: str | None = None,
                  **kwargs: Any) -> dict[str, Any]:
    """`punctkit pack --ensemble` (punctkit/package.py's `pack_ensemble`; `weights` as `0.6,0.4`,
    default equal), the file checked by loading it back before it replaces `out`."""
    return pack_ensemble_files(list(exp_dirs), out, parse_weights(weights, len(exp_dirs)),
                               verify=load_model, **kwargs)
