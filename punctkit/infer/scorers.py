"""What gives the engine its distributions: one model (`ModelScorer`) or an ensemble (`Ensemble`), a scorer
that averages its members' distributions.

    >>> from punctkit import load
    >>> load(["a.pkt", "b.pkt"], weights=[0.6, 0.4]).punctuate("so i 'm here")

A scorer gives each stream's words their n-best label ids and the 1-best's distributions over the
inventory's labels (`distributions`), what follows each word (a turn change, a pause: decode/boundary.py)
read by the network where it takes it as an input (`boundary_input`: each window's `boundaries`, all
NOTHING where unknown) and fused in by the model's packaged boundary fusion (both where it has both); the
engine (infer/engine.py: `Engine`) decides the labels from them, once, whichever scorer it runs.

An ensemble's members each keep their own frontend, windows, search and boundary fusion (an
encoder-decoder's rows are its step distributions given its own chosen labels); each member's
distributions are fused with its own boundary fusion, then averaged per input word with the weights.
`punctkit pack --ensemble` stores one in a single package (infer/engine.py: `load_model`).

How the members run (`MemberRun`):
- `shared`: members that onnxruntime runs over one frontend (byte-identical frontend files) and
  one window plan read the same tokens in the same windows, so the ensemble reads each segment
  once and runs the members' graphs side by side on every batch, each in its own thread with
  its share of `threads` (punctkit/onnx.py: OnnxTaggers): the same labels and probabilities as
  member by member, in about the time of one member when there are cores enough (where a member's
  boundary fusion has turns or pauses to weigh, the members run in turn: each fuses its own);
- `threads`: each member decodes the streams in its own thread (torch and onnxruntime release
  the GIL), for members that do not share windows;
- `in_turn`: one member after the other (the least memory at a time).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Literal, Sequence

import numpy as np

from punctkit.data.boundaries import NOTHING, window_boundaries
from punctkit.data.labels import LabelSet
from punctkit.data.streams import IGNORE, Extra, Stream, join_extras
from punctkit.decode.boundary import BoundaryFusion
from punctkit.decode.combine import check_inventories, combine, parse_weights
from punctkit.decode.lookahead import Span, label_windows
from punctkit.decode.model_words import ModelWords
from punctkit.decode.options import DecodeOptions
from punctkit.decode.windows import Hypothesis, WindowPrediction, decode_windows_rows
from punctkit.files import PunctkitError
from punctkit.infer.backends import Runner, SharedOnnxRunner, decode_options, pick_backend
from punctkit.package import Package
from punctkit.text.frontend import Frontend

MemberRun = Literal["shared", "threads", "in_turn"]
MEMBER_RUNS: tuple[MemberRun, ...] = ("shared", "threads", "in_turn")
Boundaries = Sequence[int] | None  # per word of a stream: what follows it (decode/boundary.py's ids); None: unknown


@dataclass(kw_only=True)
class ModelScorer:
    """One model: how it runs (`runner`), how it reads words (`frontend`), its labels (`inventory`) and its
    resolved decoding options; its packaged boundary fusion (`boundary`, a package's boundary.json)."""

    runner: Runner
    frontend: Frontend
    inventory: LabelSet
    conf: dict[str, Any]
    options: DecodeOptions = field(default_factory=DecodeOptions)
    manifest: dict[str, Any] = field(default_factory=dict)
    needs_audio: bool = False     # the model reads a data directory's features (`extra`)
    boundary: BoundaryFusion | None = None

    @property
    def backend(self) -> str:
        return self.runner.name

    @property
    def card(self) -> dict[str, Any]:
        """The packed model's card (training data, test figures, ...)."""
        return self.manifest.get("card", {})

    @property
    def reads_boundaries(self) -> bool:
        """Whether the network reads what follows each word as an input (a `boundary_input` model)."""
        return self.runner.reads_boundaries

    @property
    def uses_boundaries(self) -> bool:
        """Whether what follows each word weighs on its marks (the network's input, a boundary fusion)."""
        return self.boundary is not None or self.reads_boundaries

    def without_boundaries(self) -> "ModelScorer":
        """This model with its boundary fusion off (a network that reads boundaries still reads them)."""
        return replace(self, boundary=None)

    def with_options(self, **changes: Any) -> "ModelScorer":
        """This model with decoding options changed (`DecodeOptions`' fields)."""
        return replace(self, options=replace(self.options, **changes))

    def model_width(self, word: str) -> int:
        """How many of the words the model reads one input word is (`don't`: 2 where the model reads
        IWSLT's `do n't`): the engine plans its segments over those."""
        return ModelWords.width(word, self.frontend.split_contractions)

    def predictions(self, streams: list[Stream], extra: Extra | None = None,
                    boundaries: Sequence[Boundaries] | None = None) -> list[WindowPrediction]:
        """Per stream: n-best label ids and the 1-best's distributions, one per input word, before any fusion;
        a network that reads what follows each word gets each stream's `boundaries` (None: nothing known).
        A model trained on IWSLT's tokens reads `don't` as `do n't` (`ModelWords`), one label back."""
        extra = extra if self.needs_audio else None  # a text model reads words only
        split = [ModelWords(s.words, self.frontend.split_contractions) for s in streams]
        if extra is not None and any(m.starts is not None for m in split):
            raise PunctkitError("this model reads contractions split (do n't) and the data directory has them "
                                "whole (don't): its audio is aligned to its words; prepare it with "
                                "--split-contractions")
        model_streams = [s if m.starts is None else Stream(s.key, s.uttids, [m.starts[i] for i in s.starts],
                                                           m.words, [IGNORE] * len(m.words), s.meta)
                         for s, m in zip(streams, split)]
        if self.reads_boundaries:
            bounds = boundaries if boundaries is not None else [None] * len(streams)
            ids = [model_boundaries(b, m, len(s)) for b, m, s in zip(bounds, split, streams)]
            extra = join_extras(extra, window_boundaries(ids))
        o = self.options
        decoded = decode_windows_rows(model_streams, self.frontend, o.window, o.step, self.runner.predict, extra,
                                      o.overlap)
        return [m.collapse_hyps(got, self.inventory) for m, got in zip(split, decoded)]

    def fuse(self, got: WindowPrediction, boundaries: Boundaries) -> WindowPrediction:
        """A stream's prediction given what follows each word (`boundaries`): the distributions fused with the
        boundary fusion, and the 1-best's ids the arg-max where a boundary is known (None, all NOTHING or no
        fusion: `got` as it is)."""
        if self.boundary is None or boundaries is None:
            return got
        rows = self.boundary.apply(got.rows, boundaries, self.inventory)
        best = [b if k == NOTHING else int(r.argmax()) for b, k, r in zip(got.best, boundaries, rows)]
        return WindowPrediction([Hypothesis(best, got.hyps[0].score), *got.hyps[1:]], rows)

    def distributions(self, streams: list[Stream], extra: Extra | None = None,
                      boundaries: Sequence[Boundaries] | None = None) -> list[WindowPrediction]:
        """Per stream: the n-best and the 1-best's distributions (words x labels, inventory order), fused with
        each stream's `boundaries`, before any decision. `extra`: a data directory's audio."""
        got = self.predictions(streams, extra, boundaries)
        if boundaries is None:
            return got
        return [self.fuse(g, b) for g, b in zip(got, boundaries)]

    def label_window_spans(self, words: Sequence[str], base: int, wanted: Iterable[tuple[int, Sequence[Span]]],
                           cache: dict[Span, WindowPrediction], boundaries: Sequence[int] | None = None,
                           ) -> tuple[dict[int, int], dict[int, np.ndarray]]:
        """For streaming (infer/stream.py): each wanted model word's label id and distribution, given as
        (word index, its windows (start, end): decode/lookahead.py's `word_windows`), `words` holding the
        stream's model words from `base` on, `boundaries` what follows each of them (None: nothing known;
        read where the network reads them); the windows not in `cache` are read in one batch
        (decode/lookahead.py: label_windows)."""
        extra = None
        if self.reads_boundaries:  # the windows of `words` read theirs
            extra = window_boundaries([list(boundaries) if boundaries is not None else [NOTHING] * len(words)])
        rows: dict[int, np.ndarray] = {}
        ids = label_windows(words, base, wanted, self.frontend, self.runner.predict, cache, rows, extra=extra)
        return ids, rows

    def streamable(self) -> "ModelScorer":
        """The one model a stream runs: this one."""
        return self


@dataclass(kw_only=True)
class Ensemble:
    """Models whose per-word label distributions are averaged (weights sum to 1), each fused first with its own
    boundary fusion. `options`: the plan the engine reads (the first member's options, windows as long as the
    longest member's, a step that is a multiple of every member's, streams closed and marks and case decided
    together when every member's are)."""

    members: list[ModelScorer]
    weights: list[float]
    names: list[str] = field(default_factory=list)      # each member's file or directory (errors, the card)
    manifest: dict[str, Any] = field(default_factory=dict)
    shared: ModelScorer | None = None  # the members as one tagger over shared windows (`shared`)
    run: MemberRun = "in_turn"         # how the members decode when they do not share windows
    options: DecodeOptions = field(init=False)

    def __post_init__(self) -> None:
        if not self.members:
            raise PunctkitError("an ensemble needs at least one model")
        if self.run not in MEMBER_RUNS:
            raise PunctkitError(f"unknown way to run an ensemble's members '{self.run}' "
                                f"(known: {', '.join(MEMBER_RUNS)})")
        self.names = self.names or [f"model {k}" for k in range(len(self.members))]
        check_inventories(self.names, [m.inventory for m in self.members])
        self.weights = parse_weights(self.weights, len(self.members))
        each = [m.options for m in self.members]
        self.options = replace(each[0], window=max(o.window for o in each), step=math.lcm(*(o.step for o in each)),
                               stream_end="sentence" if all(o.closes_streams for o in each) else "open",
                               joint=all(o.joint for o in each))

    @property
    def inventory(self) -> LabelSet:
        return self.members[0].inventory

    @property
    def frontend(self) -> Frontend:
        """The first member's frontend (its case lexicon and prior decide and show; each member reads with its
        own)."""
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

    @property
    def member_run(self) -> MemberRun:
        """How the members decode now."""
        return "shared" if self.shared is not None else self.run

    @property
    def uses_boundaries(self) -> bool:
        """Whether what follows each word weighs on a member's marks (a member's boundary fusion)."""
        return any(m.uses_boundaries for m in self.members)

    def without_boundaries(self) -> "Ensemble":
        """This ensemble with its members' boundary fusions off."""
        return replace(self, members=[m.without_boundaries() for m in self.members])

    def with_options(self, **changes: Any) -> "Ensemble":
        """This ensemble with every member's decoding options changed (`DecodeOptions`' fields)."""
        return replace(self, members=[m.with_options(**changes) for m in self.members],
                       shared=self.shared.with_options(**changes) if self.shared is not None else None)

    def model_width(self, word: str) -> int:
        """The members' width of `word` where they all read it alike; else 1 (segments then start on the
        grid of the input's words)."""
        widths = {m.model_width(word) for m in self.members}
        return widths.pop() if len(widths) == 1 else 1

    def distributions(self, streams: list[Stream], extra: Extra | None = None,
                      boundaries: Sequence[Boundaries] | None = None) -> list[WindowPrediction]:
        """Per stream: the members' distributions, each fused with its own boundary fusion, averaged, and the
        average's arg-max."""
        fused = boundaries is not None and any(m.boundary is not None for m in self.members) and any(
            k != NOTHING for b in boundaries if b is not None for k in b)
        if self.shared is not None and not fused:
            return self.shared.predictions(streams, extra, boundaries)
        if self.run == "threads" and len(self.members) > 1:
            from concurrent.futures import ThreadPoolExecutor  # here: 3 ms of every start-up otherwise

            with ThreadPoolExecutor(len(self.members), thread_name_prefix="punctkit-member") as pool:
                each = list(pool.map(lambda m: m.distributions(streams, extra, boundaries), self.members))
        else:
            each = [m.distributions(streams, extra, boundaries) for m in self.members]
        out: list[WindowPrediction] = []
        for k in range(len(streams)):
            avg = combine([member[k].rows for member in each], self.weights)
            out.append(WindowPrediction([Hypothesis(avg.argmax(1).tolist(), 0.0)], avg))
        return out

    def streamable(self) -> ModelScorer:
        """The members as one tagger over shared windows, which a stream runs; else a one-line error."""
        if self.shared is None:
            raise PunctkitError("streaming runs one model, or an ensemble of ONNX members over one frontend "
                                "and one window plan (pack them with --onnx): these models do not share "
                                "them; give one packed model")
        return self.shared


def model_boundaries(boundaries: Boundaries, words: ModelWords, n: int) -> list[int]:
    """The boundary ids of the words a model reads (`words`) from those of the `n` input words (None: all
    NOTHING): a split contraction's last piece has its word's, the pieces before it NOTHING."""
    ids = list(boundaries) if boundaries is not None else [NOTHING] * n
    if words.starts is None:
        return ids
    out = [NOTHING] * words.starts[-1]
    for k, end in enumerate(words.starts[1:]):
        out[end - 1] = ids[k]
    return out


def side_by_side(pkgs: list[Package], opts: dict[str, Any]) -> bool:
    """Whether an ensemble's members can run as one tagger: several, all on onnxruntime under
    `opts` (`load_model`'s), over byte-identical frontends, the same windows and the same
    look-ahead by construction (direction, delay)."""
    if len(pkgs) < 2 or len({p.frontend_digest for p in pkgs}) != 1:
        return False
    if any(pick_backend(p, opts.get("backend", "auto"), opts.get("ngpu", 0), opts.get("quantize", False)) != "onnx"
           for p in pkgs):
        return False
    plans = {(o.window, o.step, o.batch_size, o.overlap, p.conf["model"].get("direction"), p.conf["model"].get("delay"))
             for p, o in ((p, decode_options(p.conf, opts.get("batch_size"), opts.get("beam"), opts.get("step")))
                          for p in pkgs)}
    return len(plans) == 1  # (a uni-directional model's delay decides what a stream may commit)


def shared_windows(members: list[ModelScorer], weights: list[float], workers: int) -> ModelScorer:
    """The (ONNX) members as one tagger over the first member's windows, `workers` threads."""
    from punctkit.onnx import OnnxTaggers

    taggers = OnnxTaggers([m.runner.tagger for m in members], weights, workers=workers)  # type: ignore[attr-defined]
    first = members[0]
    batch_size = min(m.options.batch_size for m in members)  # 1 where a member is int8
    return ModelScorer(runner=SharedOnnxRunner(taggers, batch_size, first.frontend.pad_id), frontend=first.frontend,
                       inventory=first.inventory, conf=first.conf, options=first.options)
