"""Ensembles of models: the weighted average of their per-word label distributions, as one engine.

    >>> from punctkit import Ensemble
    >>> Ensemble.load(["a.pkt", "b.pkt"], weights=[0.6, 0.4]).punctuate("so i 'm here")

Each member keeps its own frontend, windows and search (an encoder-decoder's rows are its step
distributions given its own chosen labels); the average is taken per input word, and each word's
label is decided from the average as one model's is (`Engine.decide`). An `Ensemble` is an
`Engine` (infer/engine.py), so `Engine.label`, `punctuate`, `decode` (several model dirs), `serve`
and what is built on them run it unchanged. `punctkit pack --ensemble` stores one in a single
package, which `load_model` returns as an Ensemble.

How the members run (`MemberRun`):
- `shared`: members that onnxruntime runs over one frontend (byte-identical frontend files) and
  one window plan read the same tokens in the same windows, so the ensemble reads each segment
  once and runs the members' graphs side by side on every batch, each in its own thread with
  its share of `threads` (punctkit/onnx.py: OnnxTaggers): the same labels and probabilities as
  member by member, in about the time of one member when there are cores enough;
- `threads`: each member decodes the streams in its own thread (torch and onnxruntime release
  the GIL), for members that do not share windows;
- `in_turn`: one member after the other (the least memory at a time).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Sequence

from punctkit.data.labels import LabelSet
from punctkit.data.streams import Extra, Stream
from punctkit.decode.combine import check_inventories, combine, parse_weights
from punctkit.decode.windows import Predicted
from punctkit.files import PunctkitError
from punctkit.infer.backends import decode_options, pick_backend
from punctkit.infer.engine import Backend, Engine, Punctuator
from punctkit.package import EnsemblePackage, Package, read_package
from punctkit.text.frontend import Frontend

MemberRun = Literal["shared", "threads", "in_turn"]
MEMBER_RUNS: tuple[MemberRun, ...] = ("shared", "threads", "in_turn")


@dataclass(kw_only=True)
class Ensemble(Engine):
    """Models whose per-word label distributions are averaged (weights sum to 1)."""

    members: list[Punctuator]
    weights: list[float]
    names: list[str] = field(default_factory=list)      # each member's file or directory (errors, the card)
    manifest: dict[str, Any] = field(default_factory=dict)
    side_by_side: Punctuator | None = None  # the members as one tagger over shared windows (`shared`)
    run: MemberRun = "in_turn"              # how the members decode when they do not share windows

    def __post_init__(self) -> None:
        if not self.members:
            raise PunctkitError("an ensemble needs at least one model")
        if self.run not in MEMBER_RUNS:
            raise PunctkitError(f"unknown way to run an ensemble's members '{self.run}' "
                                f"(known: {', '.join(MEMBER_RUNS)})")
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
            from punctkit.onnx import usable_cpus

            cores = int(opts.get("threads") or 0) or usable_cpus()
            opts = dict(opts, threads=max(1, cores // len(pkgs)))
        members = [Punctuator.from_package(p, **opts) for p in pkgs]
        ens = cls(members=members, weights=list(weights), names=names, manifest=manifest or {})
        if together:
            ens.share_windows(workers=min(len(members), cores))
        return ens

    def share_windows(self, workers: int) -> None:
        """Run the (ONNX) members as one tagger over the first member's windows, `workers` threads."""
        from punctkit.onnx import OnnxTaggers

        taggers = OnnxTaggers([m.tagger for m in self.members], self.weights, workers=workers)
        first = self.members[0]
        batch_size = min(m.options.batch_size for m in self.members)  # 1 where a member is int8
        pad_id = first.frontend.pad_id
        self.side_by_side = Punctuator(runner=Backend(lambda ds: taggers.predict(ds, batch_size, pad_id), "onnx"),
                                       frontend=first.frontend, inventory=first.inventory, conf=first.conf,
                                       chunk_words=first.chunk_words, options=first.options)

    # --- what the engine and the applications read
    @property
    def inventory(self) -> LabelSet:  # type: ignore[override]
        return self.members[0].inventory

    @property
    def chunk_words(self) -> int:  # type: ignore[override]
        return self.members[0].chunk_words

    @property
    def frontend(self) -> Frontend:
        """The first member's frontend (for counting unknown words; each member reads with its own)."""
        return self.members[0].frontend

    @property
    def step(self) -> int:
        return math.lcm(*(m.step for m in self.members))

    @property
    def window(self) -> int:
        return max(m.window for m in self.members)

    @property
    def closes_streams(self) -> bool:
        return all(m.closes_streams for m in self.members)

    @property
    def decides_jointly(self) -> bool:
        return all(m.decides_jointly for m in self.members)

    def model_width(self, word: str) -> int:
        """The members' width of `word` where they all read it alike; else 1 (segments then start on the
        grid of the input's words)."""
        widths = {m.model_width(word) for m in self.members}
        return widths.pop() if len(widths) == 1 else 1

    @property
    def capital_rule(self) -> tuple[float, float]:
        """The first member's (its frontend's case prior is the one the decision reads)."""
        return self.members[0].capital_rule

    @property
    def backend(self) -> str:
        return "+".join(m.backend for m in self.members)

    @property
    def card(self) -> dict[str, Any]:
        """The ensemble package's card, else one built from the members' cards."""
        return self.manifest.get("card") or {"model": "ensemble", "weights": self.weights,
                                             "members": [dict(m.card, file=n) for m, n in zip(self.members,
                                                                                                 self.names)]}

    @property
    def member_run(self) -> MemberRun:
        """How the members decode now."""
        return "shared" if self.side_by_side is not None else self.run

    # --- labelling
    def distributions(self, streams: list[Stream], extra: Extra | None = None) -> list[Predicted]:
        """Per stream: the arg-max of the members' averaged distributions, and that average."""
        if self.side_by_side is not None:
            return self.side_by_side.distributions(streams, extra)
        if self.run == "threads" and len(self.members) > 1:
            from concurrent.futures import ThreadPoolExecutor  # here: 3 ms of every start-up otherwise

            with ThreadPoolExecutor(len(self.members), thread_name_prefix="punctkit-member") as pool:
                each = list(pool.map(lambda m: m.distributions(streams, extra), self.members))
        else:
            each = [m.distributions(streams, extra) for m in self.members]
        out: list[Predicted] = []
        for k in range(len(streams)):
            avg = combine([member[k][1] for member in each], self.weights)
            out.append(([(avg.argmax(1).tolist(), 0.0)], avg))
        return out

    def streamable(self) -> Punctuator:
        if self.side_by_side is None:
            raise PunctkitError("streaming runs one model, or an ensemble of ONNX members over one frontend "
                                "and one window plan (pack them with --onnx): these models do not share "
                                "them; give one packed model")
        return self.side_by_side


def side_by_side(pkgs: list[Package], opts: dict[str, Any]) -> bool:
    """Whether an ensemble's members can run as one tagger: several, all on onnxruntime under
    `opts` (`Punctuator.load`'s), over byte-identical frontends, the same windows and the same
    look-ahead by construction (direction, delay)."""
    if len(pkgs) < 2 or len({p.frontend_digest for p in pkgs}) != 1:
        return False
    if any(pick_backend(p, opts.get("backend", "auto"), opts.get("ngpu", 0), opts.get("quantize", False)) != "onnx"
           for p in pkgs):
        return False
    plans = {(o.window, o.step, o.batch_size, o.overlap, p.conf["model"].get("direction"), p.conf["model"].get("delay"))
             for p, o in ((p, decode_options(p, opts.get("batch_size"), opts.get("beam"), opts.get("step")))
                          for p in pkgs)}
    return len(plans) == 1  # (a uni-directional model's delay decides what a stream may commit)


def load_model(path: str | Path | Sequence[str | Path], weights: str | Sequence[float] | None = None,
               **opts: Any) -> "Punctuator | Ensemble":
    """Any packed model (a file, or a shipped model's name: `fast`): a Punctuator, or for an ensemble package
    (`punctkit pack --ensemble`) an Ensemble of its members with their packed weights; several models, or
    `weights`: their ensemble (`Ensemble.load`); `opts` as `Punctuator.load`'s, for each model."""
    if not isinstance(path, (str, os.PathLike)):
        paths = list(path)
        if not paths:
            raise PunctkitError("no model given: name a shipped model (fast, accurate) or a packed model's file")
        if len(paths) > 1 or weights is not None:
            return Ensemble.load(paths, weights, **opts)
        path = paths[0]
    elif weights is not None:
        return Ensemble.load([path], weights, **opts)
    pkg = read_package(path)
    if isinstance(pkg, EnsemblePackage):
        return Ensemble.from_packages(pkg.members, pkg.weights,
                                      [f"{pkg.path} (model {k})" for k in range(len(pkg.members))],
                                      pkg.manifest, **opts)
    return Punctuator.from_package(pkg, **opts)
