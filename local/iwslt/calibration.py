#!/usr/bin/env python3
"""How well a model's label probabilities are calibrated: a reliability table of the top probability.

Reads DECODE_DIR/probs (written by `punctkit decode --probs`; its `inventory` file names the
labels) and the reference labels of REF_DATA, and prints a markdown table: for each of 10
equal-width bins of the top probability, the words in it, their mean top probability
(confidence) and how often the top label is the reference label (accuracy); then the
expected calibration error, ECE = sum over bins of (words in bin / words) * |accuracy - confidence|.

    local/iwslt/calibration.py exp/tagger/decode_test2011/hyp data/test2011
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from punctkit.data.datadir import read_data_dir
from punctkit.data.labels import get_inventory
from punctkit.data.probs import PROBS_FILE, read_probs
from punctkit.files import PunctkitError, require_file

BINS = 10


def confidences(decode_dir: Path, ref_dir: Path) -> tuple[np.ndarray, np.ndarray]:
    """Per word: the top probability and whether its label is the reference label."""
    inv = get_inventory(require_file(decode_dir / "inventory", "inventory of the decode dir").read_text().strip())
    probs = read_probs(require_file(decode_dir / PROBS_FILE, "probs file (decode --probs)"), len(inv.labels))
    ref = {u.uttid: u for u in read_data_dir(ref_dir, inv).utterances}
    tops, hits = [], []
    for utt, rows in probs.items():
        if utt not in ref:
            raise PunctkitError(f"{decode_dir / PROBS_FILE}: utterance '{utt}' is not in {ref_dir}")
        want = ref[utt].labels
        if len(want) != len(rows):
            raise PunctkitError(f"{decode_dir / PROBS_FILE}: utterance '{utt}' has {len(rows)} words, "
                                f"{ref_dir} has {len(want)}")
        tops.append(rows.max(1))
        hits.append(rows.argmax(1) == np.array([inv.index(lab) for lab in want], dtype=int))
    if not tops:
        raise PunctkitError(f"{decode_dir / PROBS_FILE}: no utterances")
    return np.concatenate(tops), np.concatenate(hits)


Bin = tuple[str, int, float, float]  # name, words, mean confidence, accuracy


def reliability(top: np.ndarray, hit: np.ndarray, bins: int = BINS) -> tuple[list[Bin], float]:
    """(bin, words, mean confidence, accuracy) per bin of the top probability, and the ECE."""
    which = np.minimum((top * bins).astype(int), bins - 1)
    rows, ece = [], 0.0
    for b in range(bins):
        sel = which == b
        n = int(sel.sum())
        conf = float(top[sel].mean()) if n else float("nan")
        acc = float(hit[sel].mean()) if n else float("nan")
        if n:
            ece += n / len(top) * abs(acc - conf)
        rows.append((f"{b / bins:.1f}-{(b + 1) / bins:.1f}", n, conf, acc))
    return rows, ece


def table(rows: list[Bin], ece: float) -> str:
    """The markdown reliability table and the ECE line."""
    out = ["| top probability | words | mean confidence | accuracy |", "|---|---:|---:|---:|"]
    for name, n, conf, acc in rows:
        out.append(f"| {name} | {n} | {conf:.3f} | {acc:.3f} |" if n else f"| {name} | 0 | - | - |")
    out.append("")
    out.append(f"ECE: {ece:.4f} ({sum(r[1] for r in rows)} words)")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("decode_dir", type=Path, help="decode output directory with `probs` (decode --probs)")
    ap.add_argument("ref_data", type=Path, help="reference data directory (text + labels)")
    args = ap.parse_args()
    try:
        print(table(*reliability(*confidences(args.decode_dir, args.ref_data))))
    except PunctkitError as e:
        sys.exit(f"calibration.py: error: {e}")


if __name__ == "__main__":
    main()
