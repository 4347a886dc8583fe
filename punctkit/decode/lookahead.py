"""Decoding with a bounded look-ahead: each word's label from a window that ends at most L words after it.

With look-ahead L, word i of a stream of n words is labelled in the window that
ends at word min(i + L, n - 1) and starts up to `window` words before that end
(left context up to the window), so its mark is decided as soon as L further
words have arrived, or the stream has ended. L is capped at `window - 1` (a
window must hold its word). Unlimited look-ahead (`None`) is today's decoding
(punctkit/decode/windows.py): word i's label comes from its most central window
of the whole stream (or, with `overlap: average`, from all the windows that hold
it), which are known once `window` further words have arrived (no later window can
then hold it) or the stream has ended. A bounded look-ahead reads one window a
word, whatever the overlap.

Everything here is pure windows logic plus one batching function over a
`Predict` (torch or onnxruntime), so both backends work unchanged;
punctkit/infer/stream.py drives it word by word.
"""
from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np

from punctkit.data.labels import LabelSet
from punctkit.data.streams import IGNORE, Extra, Stream, Window, WindowDataset
from punctkit.decode.decide import Decision
from punctkit.decode.windows import Predict, WindowPrediction, average_rows
from punctkit.files import PunctkitError

UNLIMITED = ("-1", "inf", "none", "unlimited")


def parse_lookahead(value: str | int | None) -> int | None:
    """A look-ahead setting: a count of words >= 0, or None for unlimited (None, -1, `inf`, `none`)."""
    if value is None:
        return None
    text = str(value).strip().lower()
    if text in UNLIMITED:
        return None
    try:
        n = int(text)
    except ValueError:
        n = -2
    if n < 0:
        raise PunctkitError(f"--lookahead expects a number of words >= 0, or inf / -1 for unlimited (got '{value}')")
    return n


def delay(window: int, lookahead: int | None) -> int:
    """Words that must follow word i before its label is decided (unless the stream ends first)."""
    return window if lookahead is None else min(lookahead, window - 1)


def owner_window(i: int, n: int, window: int, step: int) -> tuple[int, int]:
    """The most central window holding word i among `plan_windows(n, window, step)`, as
    `owners` (decode/windows.py) chooses it, without planning the whole stream."""
    if n <= window:
        return (0, n)
    last = n - window
    first = max(0, math.ceil((i - window + 1) / step)) * step
    cands = [(s, s + window) for s in range(first, min(i, last - 1) + 1, step)]
    if last <= i:
        cands.append((last, n))
    best, score = cands[0], -1
    for a, b in cands:
        c = min(i - a if a > 0 else n + 1, b - 1 - i if b < n else n + 1)
        if c > score:  # ties go to the earlier window
            best, score = (a, b), c
    return best


def word_window(i: int, n: int, window: int, step: int, lookahead: int | None) -> tuple[int, int]:
    """(start, end) of the window that labels word i of a stream of (so far) n words.

    Valid once word i is decided: `n >= i + 1 + delay(window, lookahead)` or n is the stream's length.
    """
    if lookahead is None:
        return owner_window(i, n, window, step)
    end = min(i + 1 + delay(window, lookahead), n)
    return (max(0, end - window), end)


Span = tuple[int, int]


def covering_windows(i: int, n: int, window: int, step: int) -> list[Span]:
    """Every window of `plan_windows(n, window, step)` that holds word i, in order, without planning
    the whole stream (what `overlap: average` averages)."""
    if n <= window:
        return [(0, n)]
    last = n - window
    first = max(0, math.ceil((i - window + 1) / step)) * step
    out = [(s, s + window) for s in range(first, min(i, last - 1) + 1, step)]
    if last <= i:
        out.append((last, n))
    return out


def word_windows(i: int, n: int, window: int, step: int, lookahead: int | None,
                 overlap: str = "central") -> list[Span]:
    """The windows whose distributions give word i of a stream of (so far) n words its label: one
    (`word_window`), or with unlimited look-ahead and `overlap: average` all that hold it (weighed by
    `label_windows` as decode/windows.py weighs them). Valid once word i is decided (`word_window`)."""
    if lookahead is None and overlap == "average":
        return covering_windows(i, n, window, step)
    return [word_window(i, n, window, step, lookahead)]


def label_windows(words: Sequence[str], base: int, wanted: Iterable[tuple[int, Sequence[Span]]], frontend: object,
                  predict: Predict, cache: dict[Span, WindowPrediction] | None = None,
                  rows: dict[int, np.ndarray] | None = None, *, extra: Extra | None = None) -> dict[int, int]:
    """Label id of each wanted word, given as (word index, its windows (start, end): `word_windows`),
    indices counted from the stream's start and `words` holding the stream from index `base` on; the
    distinct windows not in `cache` go through `predict` in one batch (and into `cache`, with their
    distributions). A word of one window takes that window's label; of several, their distributions
    averaged (`average_rows`) and the average's arg-max. `rows`, when given, receives each wanted
    word's distribution. `extra`: what the windows read beside their words (data/streams.py's `Extra`, over
    `words` as stream 0: the boundary ids of a network that reads them)."""
    wanted = [(i, list(ws)) for i, ws in wanted]
    cache = {} if cache is None else cache
    spans = sorted({w for _, ws in wanted for w in ws} - cache.keys())
    if spans:
        if spans[0][0] < base or max(b for _, b in spans) > base + len(words):
            raise PunctkitError(f"window {spans[0]} is outside the words kept ({base}..{base + len(words)})")
        stream = Stream("stream", ["stream"], [0], list(words), [IGNORE] * len(words))
        hyps = predict(WindowDataset([stream], frontend, [Window(0, a - base, b - base) for a, b in spans],
                                     extra=extra))
        cache.update(zip(spans, hyps))
    n = base + len(words)
    ids: dict[int, int] = {}
    for i, ws in wanted:
        if len(ws) == 1:
            w = ws[0]
            row = cache[w].rows[i - w[0]]
            ids[i] = cache[w].best[i - w[0]]
        else:
            row = average_rows(i, n, ws, [cache[w].rows[i - w[0]] for w in ws])
            ids[i] = int(row.argmax())
        if rows is not None:
            rows[i] = row
    return ids


def decode_lookahead(streams: list[list[str]], frontend: object, window: int, step: int,
                     lookahead: int | None, predict: Predict,
                     cache: dict[tuple[int, Span], WindowPrediction] | None = None,
                     inventory: LabelSet | None = None, overlap: str = "central") -> list[list[int]]:
    """Label ids of every word of whole streams, each decided as with look-ahead `lookahead`
    (the same labels as streaming them word by word; `overlap` as the decode option: `word_windows`);
    the windows not in `cache` in one batch. Windows are shared between look-aheads (word i at
    look-ahead L and word i+1 at L-1 use the same one), so a sweep over look-aheads of the same streams
    passes one `cache`. With `inventory`, each stream's first word begins a sentence, and its last word
    ends one, as a stream's end does when that word is still held then (decode/stream_end.py: a
    look-ahead of 0 commits it as it comes)."""
    cache = {} if cache is None else cache
    plan = [(k, i, word_windows(i, len(s), window, step, lookahead, overlap)) for k, s in enumerate(streams)
            for i in range(len(s))]
    spans = sorted({(k, w) for k, _, ws in plan for w in ws} - cache.keys())
    if spans:
        ss = [Stream(f"s{k}", [f"s{k}"], [0], list(s), [IGNORE] * len(s)) for k, s in enumerate(streams)]
        hyps = predict(WindowDataset(ss, frontend, [Window(k, a, b) for k, (a, b) in spans]))
        cache.update(zip(spans, hyps))
    out: list[list[int]] = [[] for _ in streams]
    rows: list[list[np.ndarray]] = [[] for _ in streams]
    for k, i, ws in plan:
        n = len(streams[k])
        if len(ws) == 1:
            w = ws[0]
            label, row = cache[(k, w)].best[i - w[0]], cache[(k, w)].rows[i - w[0]]
        else:  # as label_windows averages them
            row = average_rows(i, n, ws, [cache[(k, w)].rows[i - w[0]] for w in ws])
            label = int(row.argmax())
        out[k].append(label)
        rows[k].append(row)
    if inventory is not None:  # the stream's ends (decode/stream_end.py; with no delay every word is out at once)
        decision = Decision.argmax(inventory, closes=True)
        out = [decision.decide(np.array(rows[k]), list(s), best=ids, last=delay(window, lookahead) > 0) if ids else ids
               for k, (s, ids) in enumerate(zip(streams, out))]
    return out
