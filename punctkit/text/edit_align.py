"""A minimum-edit-distance alignment of two word sequences (case-insensitive), in numpy rows.

Used by scoring (`punctkit score --align`: ASR output against a reference) and by mark projection
(punctkit/mark_projection.py). Not to be confused with punctkit/align.py, the forced alignment of
words with audio (pocketsphinx). Hirschberg's divide and conquer keeps memory O(n+m); small
sub-problems keep their whole matrix for the traceback.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

# Sub-problems of at most this many DP cells keep their whole matrix for traceback.
FULL_DP_CELLS = 4_000_000


def norm_word(word: str) -> str:
    """A word as the alignment compares it (case-folded)."""
    return word.casefold()


def _next_row(prev: np.ndarray, x: int, b: np.ndarray, ar: np.ndarray) -> np.ndarray:
    """One Levenshtein DP row: the cost of a[:i+1] against every prefix of b, from row i.

    cur[j] = min(prev[j-1] + sub, prev[j] + 1, cur[j-1] + 1); the insertion chain is
    solved in one pass as cur[j] = j + min_{k<=j}(A[k] - k) (a running minimum).
    """
    a_best = np.empty_like(prev)
    a_best[0] = prev[0] + 1
    np.minimum(prev[:-1] + (b != x), prev[1:] + 1, out=a_best[1:])
    a_best -= ar
    np.minimum.accumulate(a_best, out=a_best)
    a_best += ar
    return a_best


def _last_row(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Edit distance of all of `a` against every prefix of `b`, in O(len(b)) memory."""
    ar = np.arange(len(b) + 1, dtype=np.int32)
    row = ar.copy()
    for x in a:
        row = _next_row(row, x, b, ar)
    return row


def _full_dp(a: np.ndarray, b: np.ndarray, a0: int, b0: int, out: list) -> None:
    """Align a small sub-problem with the whole DP matrix and a traceback."""
    n, m = len(a), len(b)
    ar = np.arange(m + 1, dtype=np.int32)
    dp = np.empty((n + 1, m + 1), dtype=np.int32)
    dp[0] = ar
    for i in range(n):
        dp[i + 1] = _next_row(dp[i], a[i], b, ar)
    steps = []
    i, j = n, m
    while i > 0 or j > 0:
        if i > 0 and j > 0 and dp[i, j] == dp[i - 1, j - 1] + (a[i - 1] != b[j - 1]):
            i, j = i - 1, j - 1
            steps.append((a0 + i, b0 + j))
        elif i > 0 and dp[i, j] == dp[i - 1, j] + 1:
            i -= 1
            steps.append((a0 + i, None))
        else:
            j -= 1
            steps.append((None, b0 + j))
    out.extend(reversed(steps))


def _align(a: np.ndarray, b: np.ndarray, a0: int, b0: int, out: list) -> None:
    """Hirschberg: split `a` in half, find where the optimal path crosses, recurse."""
    k = min(len(a), len(b))
    diff = np.flatnonzero(a[:k] != b[:k])
    pre = int(diff[0]) if len(diff) else k
    out.extend((a0 + t, b0 + t) for t in range(pre))
    a, b, a0, b0 = a[pre:], b[pre:], a0 + pre, b0 + pre
    k = min(len(a), len(b))
    diff = np.flatnonzero(a[len(a) - k:][::-1] != b[len(b) - k:][::-1])
    suf = int(diff[0]) if len(diff) else k
    tail = [(a0 + len(a) - suf + t, b0 + len(b) - suf + t) for t in range(suf)]
    a, b = a[:len(a) - suf], b[:len(b) - suf]
    if len(a) == 0 or len(b) == 0:
        out.extend((a0 + t, None) for t in range(len(a)))
        out.extend((None, b0 + t) for t in range(len(b)))
    elif (len(a) + 1) * (len(b) + 1) <= FULL_DP_CELLS or len(a) == 1:
        _full_dp(a, b, a0, b0, out)
    else:
        mid = len(a) // 2
        left = _last_row(a[:mid], b)
        right = _last_row(a[mid:][::-1], b[::-1])[::-1]
        cut = int(np.argmin(left + right))
        _align(a[:mid], b[:cut], a0, b0, out)
        _align(a[mid:], b[cut:], a0 + mid, b0 + cut, out)
    out.extend(tail)


def align_words(ref: Sequence[str], hyp: Sequence[str]) -> list[tuple[int | None, int | None]]:
    """A minimum-edit-distance alignment of two word sequences (case-insensitive).

    Returns (ref index, hyp index) pairs in order; None on one side marks a deleted
    (ref only) or inserted (hyp only) word. Time O(n·m) in numpy rows, memory O(n+m).
    """
    vocab: dict[str, int] = {}
    a = np.array([vocab.setdefault(norm_word(w), len(vocab)) for w in ref], dtype=np.int32)
    b = np.array([vocab.setdefault(norm_word(w), len(vocab)) for w in hyp], dtype=np.int32)
    out: list[tuple[int | None, int | None]] = []
    _align(a, b, 0, 0, out)
    return out
