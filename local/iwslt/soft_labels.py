#!/usr/bin/env python3
"""Soft labels for distillation (`train.distill.probs`) from a data dir's gold labels and,
optionally, a teacher's `probs` file over the same utterances.

    python local/soft_labels.py data/train exp/gold               # one-hot rows of the gold labels
    python local/soft_labels.py data/train_aug1 exp/aug1_q \\
        --probs exp/mpnet_decode_aug1/probs --keep QUESTION       # the teacher's rows, but gold where gold is QUESTION

Writes OUT_DIR/probs and OUT_DIR/inventory (the data's inventory name), as a decode dir holds them, so
`punctkit combine-data` joins several into one teacher. With `--probs`, every word takes the
teacher's row except those whose gold label is one of `--keep` (their one-hot row instead):
a teacher that almost never writes a mark on new text (the MPNet teacher's QUESTIONs on the
swapped copies) then still teaches it where the text has one.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from punctkit.data.datadir import read_data_dir
from punctkit.data.probs import PROBS_FILE, check_inventory, format_probs, read_probs
from punctkit.files import PunctkitError, check_output_dir, output_dir

OUT_FILES = (PROBS_FILE, "inventory")


def soft_rows(labels: list[str], names: list[str], teacher: np.ndarray | None, keep: set[str]) -> np.ndarray:
    """One utterance's rows (words x labels): the teacher's, or one-hot gold where there is
    no teacher or the gold label is in `keep`."""
    rows = np.zeros((len(labels), len(names)), dtype=np.float32) if teacher is None else teacher.copy()
    for i, lab in enumerate(labels):
        if teacher is None or lab in keep:
            rows[i] = 0.0
            rows[i, names.index(lab)] = 1.0
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data_dir", type=Path)
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--probs", type=Path, help="the teacher's probs file over DATA_DIR's utterances")
    ap.add_argument("--keep", nargs="*", default=[], help="gold labels that replace the teacher's row")
    a = ap.parse_args()
    try:
        inputs = [a.data_dir] + ([a.probs] if a.probs else [])
        check_output_dir(a.out_dir, OUT_FILES, inputs=inputs)
        dd = read_data_dir(a.data_dir)
        names = list(dd.inventory.labels)
        unknown = sorted(set(a.keep) - set(names))
        if unknown:
            raise PunctkitError(f"--keep {' '.join(unknown)}: not in {a.data_dir}/inventory ({' '.join(names)})")
        if a.keep and a.probs is None:
            raise PunctkitError("--keep needs --probs (without a teacher every row is gold already)")
        teacher = None
        if a.probs:
            check_inventory(a.probs, dd.inventory.name, str(a.data_dir))
            teacher = read_probs(a.probs, len(names))
        rows = []
        for u in dd.utterances:
            t = None
            if teacher is not None:
                if u.uttid not in teacher:
                    raise PunctkitError(f"{a.probs}: no row for utterance '{u.uttid}' of {a.data_dir}")
                t = teacher[u.uttid]
                if len(t) != len(u.words):
                    raise PunctkitError(f"{a.probs}: utterance '{u.uttid}' has {len(t)} rows, "
                                        f"{a.data_dir} has {len(u.words)} words")
            rows.append((u.uttid, soft_rows(list(u.labels), names, t, set(a.keep))))
        with output_dir(a.out_dir, OUT_FILES, inputs=inputs) as out:
            out.write_lines(PROBS_FILE, (format_probs(u, r) for u, r in rows))
            out.write_lines("inventory", [dd.inventory.name])
    except PunctkitError as e:
        print(f"soft_labels.py: {e}", file=sys.stderr)
        return 1
    print(f"{a.out_dir}/probs: {len(rows)} utterances")
    return 0


if __name__ == "__main__":
    sys.exit(main())
