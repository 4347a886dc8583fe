"""Overlapping decoding windows over a stream, and the choice of each word's prediction.

A stream of n words is covered by windows of `length` words every `step`
words, the last one aligned to the stream's end. A word seen by several windows
takes its prediction from the window where it is most central: the one where
its distance to the nearest *cut* edge (a window edge that is not the stream's
own start or end) is largest; ties go to the earlier window.

Every predictor also gives, per word, the probabilities of all the inventory's labels
(`Predicted`): a tagger's softmax (`tagger_predicted`, shared by torch and onnxruntime),
an encoder-decoder's step distribution (decode/search.py). A word's row comes from its
owner window, as its label does.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from punctkit.data.streams import Extra, Stream, Window, WindowDataset
from punctkit.files import PunctkitError

Hyps = list[tuple[list[int], float]]  # n-best: (label ids, log-probability), best first
Predicted = tuple[Hyps, np.ndarray]  # n-best, and the 1-best's per-word distributions (words x labels)
Predict = Callable[[WindowDataset], list[Predicted]]  # of every window of a dataset


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
    inf = n + 1
    best: list[tuple[int, int]] = [(-1, -1)] * n
    score = [-1] * n
    for k, (a, b) in enumerate(windows):
        for i in range(a, b):
            left = i - a if a > 0 else inf
            right = b - 1 - i if b < n else inf
            c = min(left, right)
            if c > score[i]:
                score[i], best[i] = c, (k, i - a)
    missing = [i for i in range(n) if best[i][0] < 0]
    if missing:
        raise PunctkitError(f"windows do not cover word {missing[0]} of a stream of {n} words")
    return best


def decode_windows_rows(streams: list[Stream], frontend: object, window: int, step: int, predict: Predict,
                        extra: Extra | None = None) -> list[Predicted]:
    """n-best label ids per stream and the 1-best's per-word distributions (words x labels), each
    word's label and row taken from its most central window.

    `predict` labels the windows (torch: decode/decoder.py; onnxruntime: punctkit/onnx.py).
    With n-best lists the k-th hypothesis joins the k-th hypotheses of the windows
    (exact when a stream fits in one window) and its score sums theirs.
    """
    plans = [plan_windows(len(s), window, step) for s in streams]
    wins = [Window(k, a, b) for k, plan in enumerate(plans) for a, b in plan]
    preds = predict(WindowDataset(streams, frontend, wins, extra=extra))
    out: list[Predicted] = []
    pos = 0
    for s, plan in zip(streams, plans):
        mine = preds[pos: pos + len(plan)]
        pos += len(plan)
        own = owners(len(s), plan)
        used = sorted({k for k, _ in own})
        n = min(len(mine[k][0]) for k in used) if used else 1
        hyps = [([mine[k][0][r][0][j] for k, j in own], sum(mine[k][0][r][1] for k in used)) for r in range(n)]
        n_labels = mine[0][1].shape[-1] if mine else 0
        rows = np.array([mine[k][1][j] for k, j in own], dtype=np.float64).reshape(len(own), n_labels)
        out.append((hyps, rows))
    return out


def softmax(logits: np.ndarray) -> np.ndarray:
    """The softmax over the last axis, in float64."""
    z = np.asarray(logits, dtype=np.float64)
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def tagger_predicted(logits: np.ndarray, n_words: Sequence[int]) -> list[Predicted]:
    """1-best of every row of a tagger's (B, W, n_labels) logits: each real word's arg-max label,
    scored by the sum of their log-probabilities, and each word's softmax; row b's real words
    are its first `n_words[b]`.

    Both backends take a tagger's greedy decoding from here (torch: decode/decoder.py, onnxruntime:
    punctkit/onnx.py), so they cannot disagree on ties, scores or probabilities.
    """
    ids = np.asarray(logits).argmax(-1)
    probs = softmax(logits)
    logp = np.log(np.take_along_axis(probs, ids[..., None], -1)[..., 0])  # log-softmax at the arg-max
    return [([(ids[b, :n].tolist(), float(logp[b, :n].sum()))], probs[b, :n]) for b, n in enumerate(n_words)]
