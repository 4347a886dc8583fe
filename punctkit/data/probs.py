"""Per-word label probabilities: the Kaldi-style `probs` file of a decode directory.

One line per utterance, keyed and sorted as `text` and `labels` (so `head`, `sort`,
`split` and the data-directory splitters handle it):

    uttid 0.9100,0.0600,0.0250,0.0050 0.0200,0.8100,0.1500,0.0200 ...

one comma-joined group per word, the probabilities of the inventory's labels in the
inventory's order (the directory's `inventory` file names it). `decode --probs` writes
it, distillation reads it as soft labels.
"""
from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from punctkit.files import PunctkitError, iter_lines, where, write_lines

PROBS_FILE = "probs"
DIGITS = 4      # written precision: enough for soft labels and calibration bins
SUM_TOL = 0.01  # a written row sums to 1 within rounding (DIGITS decimals of up to 10 labels)


def format_row(row: Sequence[float]) -> str:
    """One word's distribution as `p1,p2,...` (DIGITS decimals)."""
    return ",".join(f"{float(p):.{DIGITS}f}" for p in row)


def format_probs(utt: str, probs: np.ndarray) -> str:
    """One line of a probs file: the utterance id and one group per word (`probs`: words x labels)."""
    return " ".join([utt] + [format_row(r) for r in np.asarray(probs, dtype=float)])


def write_probs(path: str | Path, rows: Iterable[tuple[str, np.ndarray]]) -> None:
    """Write (utterance id, words x labels array) rows, atomically, in the order given."""
    write_lines(path, (format_probs(u, p) for u, p in rows))


def parse_row(text: str, n_labels: int, loc: str) -> list[float]:
    """One `p1,p2,...` group, checked: n_labels numbers in [0, 1] that sum to 1."""
    try:
        row = [float(x) for x in text.split(",")]
    except ValueError:
        raise PunctkitError(f"{loc}: '{text[:40]}' is not a list of probabilities (p1,p2,...)") from None
    if len(row) != n_labels:
        raise PunctkitError(f"{loc}: {len(row)} probabilities for a word, the inventory has {n_labels} labels")
    if any(not 0.0 <= p <= 1.0 for p in row) or abs(sum(row) - 1.0) > SUM_TOL:
        raise PunctkitError(f"{loc}: the probabilities '{text[:40]}' are not a distribution (each in [0, 1], sum 1)")
    return row


def check_inventory(path: str | Path, inventory: str, data: str) -> None:
    """The `inventory` file beside a probs file (a decode dir's), where there is one, must name
    `inventory`, the labels of `data` (named in the error): the rows' columns are its labels."""
    inv_file = Path(path).parent / "inventory"
    if not inv_file.is_file():
        return
    theirs = next((line.strip() for _, line in iter_lines(inv_file) if line.strip()), "")
    if theirs != inventory:
        raise PunctkitError(f"{inv_file}: the teacher's labels are {theirs}, {data}'s {inventory}: "
                            f"use a teacher with the same label inventory")


def read_probs(path: str | Path, n_labels: int) -> "OrderedDict[str, np.ndarray]":
    """utterance id -> words x labels float32 array; errors name file, line and what is wrong."""
    p = Path(path)
    table: OrderedDict[str, np.ndarray] = OrderedDict()
    for i, line in iter_lines(p):
        if not line.strip():
            continue
        utt, *groups = line.split()
        if utt in table:
            raise PunctkitError(f"{where(p, i)}: duplicate key '{utt}'")
        loc = where(p, i, utt)
        arr = np.array([parse_row(g, n_labels, loc) for g in groups], dtype=np.float32)
        table[utt] = arr.reshape(len(groups), n_labels)
    return table
