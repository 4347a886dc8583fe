"""Overlapping decoding windows over a stream, and the choice of each word's prediction.

A stream of n words is covered by windows of `length` words every `step`
words, the last one aligned to the stream's end. A word seen by several windows
takes its prediction (`overlap`):

- `central`: from the window where it is most central: the one where its distance
  to the nearest *cut* edge (a window edge that is not the stream's own start or
  end) is largest; ties go to the earlier window;
- `average`: from all of them, its distributions averaged, each weighted by one plus
  that distance (`centrality`), so a word near a cut edge, short of context on that
  side, counts least; its label is the average's arg-max. One-best only (no n-best).

Every predictor also gives, per word, the probabilities of all the inventory's labels
(`WindowPrediction`): a tagger's softmax (`tagger_predicted`, shared by torch and onnxruntime),
an encoder-decoder's step distribution (decode/search.py). A word's row comes from its
owner window, as its label does.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from punctkit.data.streams import Extra, Stream, Window, WindowDataset
from punctkit.files import PunctkitError


@dataclass
class Hypothesis:
    """One of a search's n-best: a label id per word and its log-probability."""

    ids: list[int]
    score: float = 0.0


@dataclass
class WindowPrediction:
    """What a model gives a window (or a stream, its windows joined): the search's n-best, best first, and
    the 1-best's per-word distributions over the inventory's labels (words x labels)."""

    hyps: list[Hypothesis]
    rows: np.ndarray

    @property
    def best(self) -> list[int]:
        """The 1-best's label ids."""
        return self.hyps[0].ids

    @classmethod
    def empty(cls) -> "WindowPrediction":
        """A window of no words."""
        return cls([], np.zeros((0, 0)))


Predict = Callable[[WindowDataset], list[WindowPrediction]]  # of every window of a dataset


def centrality(i: int, a: int, b: int, n: int) -> int:
    """Word i's distance to the nearest cut edge of window (a, b) of a stream of n words (an edge at
    the stream's own start or end is not cut: it counts as n + 1)."""
    left = i - a if a > 0 else n + 1
    right = b - 1 - i if b < n else n + 1
    return min(left, right)


def overlap_weights(a: int, b: int, n: int, i: np.ndarray) -> np.ndarray:
    """The weights of words `i` of window (a, b) of a stream of n words under `overlap: average`: 1 +
    their `centrality`, at most the window's length (a stream's uncut edge counts as a window's worth
    of context)."""
    left = np.where(a > 0, i - a, n + 1)
    right = np.where(b < n, b - 1 - i, n + 1)
    return 1.0 + np.minimum(np.minimum(left, right), b - a)


def average_rows(i: int, n: int, spans: Sequence[tuple[int, int]], rows: Sequence[np.ndarray]) -> np.ndarray:
    """Word i's distribution under `overlap: average`: the rows its windows `spans` (of a stream of n
    words) give it, weighted by `overlap_weights` (streaming's one word at a time; `_averaged`'s whole
    stream at once)."""
    w = np.array([overlap_weights(a, b, n, np.array([i]))[0] for a, b in spans])
    return (w[:, None] * np.asarray(rows, dtype=np.float64)).sum(0) / w.sum()


def plan_windows(n: int, length: int, step: int) -> list[tuple[int, int]]:
    """(start, end) windows covering words 0..n-1; every window has `length` words unless n < length."""
    if length < 1 or step < 1:
        raise PunctkitError(f"window length and step must be positive (got {length}, {step})")
    if step > length:
        raise PunctkitError(f"window step {step} is longer than the window {length}: words would be skipped")
    if n <= length:
        return [(0, n)] if n > 0 else []
    starts = list(range(0, n - length, step)) + [n - length]
    return [(s, s + length) for s in starts]


def owners(n: int, windows: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """For each word 0..n-1: (window index, position in that window) of its most central window."""
    best: list[tuple[int, int]] = [(-1, -1)] * n
    score = [-1] * n
    for k, (a, b) in enumerate(windows):
        for i in range(a, b):
            c = centrality(i, a, b, n)
            if c > score[i]:
                score[i], best[i] = c, (k, i - a)
    missing = [i for i in range(n) if best[i][0] < 0]
    if missing:
        raise PunctkitError(f"windows do not cover word {missing[0]} of a stream of {n} words")
    return best


def decode_windows_rows(streams: list[Stream], frontend: object, window: int, step: int, predict: Predict,
                        extra: Extra | None = None, overlap: str = "central") -> list[WindowPrediction]:
    """n-best label ids per stream and the 1-best's per-word distributions (words x labels), each
    word's label and row taken from its most central window, or from all its windows averaged
    (`overlap`: see the module's docstring; one-best).

    `predict` labels the windows (torch: decode/decoder.py; onnxruntime: punctkit/onnx.py).
    With n-best lists the k-th hypothesis joins the k-th hypotheses of the windows
    (exact when a stream fits in one window) and its score sums theirs.
    """
    plans = [plan_windows(len(s), window, step) for s in streams]
    wins = [Window(k, a, b) for k, plan in enumerate(plans) for a, b in plan]
    preds = predict(WindowDataset(streams, frontend, wins, extra=extra))
    out: list[WindowPrediction] = []
    pos = 0
    for s, plan in zip(streams, plans):
        mine = preds[pos: pos + len(plan)]
        pos += len(plan)
        out.append(_averaged(len(s), plan, mine) if overlap == "average" else _owned(len(s), plan, mine))
    return out


def _owned(n: int, plan: Sequence[tuple[int, int]], mine: Sequence[WindowPrediction]) -> WindowPrediction:
    """One stream's n-best and distributions under `overlap: central`: each word's label and row from its
    owner window (`owners`); the k-th hypothesis joins the windows' k-th, its score the sum of theirs."""
    own = owners(n, plan)
    used = sorted({k for k, _ in own})
    depth = min(len(mine[k].hyps) for k in used) if used else 1
    hyps = [Hypothesis([mine[k].hyps[r].ids[j] for k, j in own], sum(mine[k].hyps[r].score for k in used))
            for r in range(depth)]
    n_labels = mine[0].rows.shape[-1] if mine else 0
    rows = np.array([mine[k].rows[j] for k, j in own], dtype=np.float64).reshape(len(own), n_labels)
    return WindowPrediction(hyps, rows)


def _averaged(n: int, plan: Sequence[tuple[int, int]], mine: Sequence[WindowPrediction]) -> WindowPrediction:
    """One stream's one-best and distributions under `overlap: average`: each word's rows from every
    window holding it, weighted as `average_rows` weighs them (here for all words at once)."""
    if n == 0:
        return WindowPrediction([Hypothesis([], 0.0)], np.zeros((0, 0)))
    n_labels = mine[0].rows.shape[-1]
    acc, total = np.zeros((n, n_labels)), np.zeros(n)
    seen, own = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)  # windows per word; a lone one's label
    for (a, b), got in zip(plan, mine):
        w = overlap_weights(a, b, n, np.arange(a, b))
        acc[a:b] += w[:, None] * np.asarray(got.rows, dtype=np.float64)
        total[a:b] += w
        seen[a:b] += 1
        own[a:b] = got.best
    rows = acc / total[:, None]
    ids = np.where(seen == 1, own, rows.argmax(-1))  # a word of one window keeps its label (as streaming does)
    return WindowPrediction([Hypothesis(ids.tolist(), float(np.log(np.maximum(rows[np.arange(n), ids],
                                                                                   1e-300)).sum()))], rows)


def softmax(logits: np.ndarray) -> np.ndarray:
    """The softmax over the last axis, in float64."""
    z = np.asarray(logits, dtype=np.float64)
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def tagger_predicted(logits: np.ndarray, n_words: Sequence[int]) -> list[WindowPrediction]:
    """1-best of every row of a tagger's (B, W, n_labels) logits: each real word's arg-max label,
    scored by the sum of their log-probabilities, and each word's softmax; row b's real words
    are its first `n_words[b]`.

    Both backends take a tagger's greedy decoding from here (torch: decode/decoder.py, onnxruntime:
    punctkit/onnx.py), so they cannot disagree on ties, scores or probabilities.
    """
    ids = np.asarray(logits).argmax(-1)
    probs = softmax(logits)
    logp = np.log(np.take_along_axis(probs, ids[..., None], -1)[..., 0])  # log-softmax at the arg-max
    return [WindowPrediction([Hypothesis(ids[b, :n].tolist(), float(logp[b, :n].sum()))], probs[b, :n])
            for b, n in enumerate(n_words)]
