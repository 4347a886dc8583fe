"""A minimum-edit-distance alignment of two word sequences (case-insensitive), in numpy rows.

Used by scoring (`punctkit score --align`: ASR output against a reference, through `align_slots`, which
takes a contraction split or whole as the same word) and by mark projection (punctkit/mark_projection.py).
Not to be confused with punctkit/align.py, the forced alignment of words with audio (pocketsphinx).
Hirschberg's divide and conquer keeps memory O(n+m); small
sub-problems keep their whole matrix for the traceback.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from punctkit.data.contractions import CLITICS, split_contraction

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


@dataclass
class WordPair:
    """One scoring slot of `align_slots`: a reference and a hypothesis word (None: missing on that side).

    `same`: both words there and equal as the aligner compares them (a contraction compared whole);
    `joined`: a word that is not the last piece of a contraction the other side writes as one word
    (`wo` of `wo n't` against `won't`), not unaligned; its mark, if any, is one the other side lacks.
    `ref_start`/`hyp_start`: the first word of the contraction ending at `ref`/`hyp` (`It` of `It 's`,
    whose case is the word's), else `ref`/`hyp` themselves; `inside`: of a joined word, the other side's
    word it ends inside."""

    ref: int | None
    hyp: int | None
    same: bool = False
    joined: bool = False
    ref_start: int | None = None
    hyp_start: int | None = None
    inside: int | None = None

    def __post_init__(self) -> None:
        self.ref_start = self.ref if self.ref_start is None else self.ref_start
        self.hyp_start = self.hyp if self.hyp_start is None else self.hyp_start

    def shifted(self, r0: int, h0: int) -> WordPair:
        """The pair with its reference indices moved by `r0` and its hypothesis ones by `h0` (a part of
        both sequences aligned on its own)."""
        def move(k: int | None, by: int) -> int | None:
            return None if k is None else k + by

        return WordPair(move(self.ref, r0), move(self.hyp, h0), self.same, self.joined,
                        move(self.ref_start, r0), move(self.hyp_start, h0),
                        move(self.inside, h0 if self.ref is not None else r0))


@dataclass
class Piece:
    """A word's piece as `align_slots` compares it (`wo` and `n't` of `won't`): its word, whether it ends it."""

    key: str
    word: int
    last: bool


def pieces(words: Sequence[str]) -> list[Piece]:
    """The words split into pieces: a final clitic of data/contractions.py's CLITICS split off (`won't` ->
    `wo` `n't`, `It's` -> `It` `'s`, `we've` -> `we` `'ve`), each piece case-folded, ’ read as '."""
    out = []
    for k, w in enumerate(words):
        parts = split_contraction(w, CLITICS)
        out += [Piece(norm_word(p).replace("’", "'"), k, n == len(parts) - 1) for n, p in enumerate(parts)]
    return out


def align_slots(ref: Sequence[str], hyp: Sequence[str]) -> list[WordPair]:
    """A minimum-edit-distance alignment of two word sequences in which a contraction is the same word split
    or whole (`won't` and `wo n't`, `It's` and `It 's`, `we've` and `we 've`): every word of both sides once,
    in order. The words' `pieces` are aligned (`align_words`); words pair where their last pieces do (a word's
    mark follows its last piece), a word ending inside the other side's word is a `joined` slot (`wo` of
    `wo n't` against `won't`), and a word whose last piece the other side lacks pairs with the word that
    ended inside it (`it's` against `it`: a substitution), else it is unaligned."""
    rp, hp = pieces(ref), pieces(hyp)
    rkey, hkey = [""] * len(ref), [""] * len(hyp)
    for p in rp:
        rkey[p.word] += p.key
    for p in hp:
        hkey[p.word] += p.key
    out: list[WordPair] = []
    r_from = h_from = None  # the first word of each side joined into the word pair being closed
    for a, b in align_words([p.key for p in rp], [p.key for p in hp]):
        r, h = (rp[a] if a is not None else None), (hp[b] if b is not None else None)
        r_ends, h_ends = r is not None and r.last, h is not None and h.last
        last = out[-1] if out else None
        if r_ends and h_ends:
            i0, j0 = (r.word if r_from is None else r_from), (h.word if h_from is None else h_from)
            same = "".join(rkey[i0:r.word + 1]) == "".join(hkey[j0:h.word + 1])
            out.append(WordPair(r.word, h.word, same, ref_start=i0, hyp_start=j0))
            r_from = h_from = None
        elif r_ends and h is not None:  # the reference word ends inside the hypothesis's
            out.append(WordPair(r.word, None, joined=True, inside=h.word))
            r_from = r.word if r_from is None else r_from
        elif h_ends and r is not None:
            out.append(WordPair(None, h.word, joined=True, inside=r.word))
            h_from = h.word if h_from is None else h_from
        elif r_ends:  # its last piece unaligned: it pairs with the hypothesis word that ended inside it
            if last is not None and last.ref is None and last.inside == r.word:
                out[-1] = WordPair(r.word, last.hyp, ref_start=r.word if r_from is None else r_from,
                                   hyp_start=h_from)
                h_from = None
            else:
                out.append(WordPair(r.word, None))
            r_from = None
        elif h_ends:
            if last is not None and last.hyp is None and last.inside == h.word:
                out[-1] = WordPair(last.ref, h.word, ref_start=r_from, hyp_start=h.word if h_from is None else h_from)
                r_from = None
            else:
                out.append(WordPair(None, h.word))
            h_from = None
    return out
