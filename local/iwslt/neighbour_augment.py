#!/usr/bin/env python3
"""A copy of a training data dir with words swapped for their nearest neighbours
(TinyBERT's augmentation for distillation, Jiao et al. 2020), for a teacher to label.

    python local/neighbour_augment.py data/train exp/X/inputs/plm_vectors.txt \
        exp/X/inputs/frontend/vocab.txt data/train_aug1 --rate 0.4 --neighbours 10 --seed 1 --prefix aug1

Each word that has a vector, other than the `--keep-top` most frequent (function words,
whose static neighbours are rarely of the same kind), is replaced with probability
`--rate` by one of its `--neighbours` nearest alphabetic vocabulary words (cosine over
the vectors, a word2vec text file such as stage 3's pooled MiniLM vectors); it keeps its
label, which only the hard-label part of distillation reads. The copy's utterances are
`PREFIX-<n>` of one speaker `PREFIX`, so they form their own stream beside the
original's (`punctkit combine-data` joins them). The output is written as every data dir
is (temporary names, renamed when complete; never over an input).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from punctkit.data.datadir import check_data_dir_output, read_data_dir, write_data_dir
from punctkit.data.utterance import Utterance
from punctkit.files import PunctkitError, iter_lines
from punctkit.text.embeddings import load_vectors

SPECIALS = ("<pad>", "<unk>")  # the word frontend's tokens, not words


def neighbour_table(words: list[str], vectors: np.ndarray, vocab: set[str], k: int) -> dict[str, list[str]]:
    """Each vector word's k nearest words by cosine among the alphabetic words of `vocab`
    (itself excluded)."""
    mat = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-8)
    cand = [i for i, w in enumerate(words) if w in vocab and w.isascii() and w.isalpha()]
    if len(cand) <= k:
        raise PunctkitError(f"only {len(cand)} vocabulary words have vectors; --neighbours {k} needs more")
    cmat = mat[cand]
    table = {}
    for start in range(0, len(words), 1024):
        sims = mat[start:start + 1024] @ cmat.T  # (chunk, candidates)
        top = np.argpartition(-sims, k + 1, axis=1)[:, :k + 1]
        for r, row in enumerate(top):
            w = words[start + r]
            order = row[np.argsort(-sims[r, row])]
            table[w] = [words[cand[j]] for j in order if words[cand[j]] != w][:k]
    return table


def augment(utts: list[Utterance], table: dict[str, list[str]], rate: float, seed: int,
            prefix: str) -> tuple[list[Utterance], int]:
    """The utterances with words swapped (renamed PREFIX-<n>, in order), and how many were."""
    rng = np.random.default_rng(seed)
    out, swapped = [], 0
    for i, u in enumerate(utts, 1):
        words = []
        for w in u.words:
            if table.get(w) and rng.random() < rate:
                w = table[w][rng.integers(len(table[w]))]
                swapped += 1
            words.append(w)
        out.append(Utterance(f"{prefix}-{i:06d}", words, list(u.labels)))
    return out, swapped


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data_dir", type=Path)
    ap.add_argument("vectors", type=Path, help="word vectors (word2vec text, as stage 3 writes them)")
    ap.add_argument("vocab", type=Path, help="the student's vocabulary, most frequent first (frontend/vocab.txt)")
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--rate", type=float, default=0.4)
    ap.add_argument("--neighbours", type=int, default=10)
    ap.add_argument("--keep-top", type=int, default=150,
                    help="never swap the vocabulary's first (most frequent) N words: function words")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--prefix", default="aug1")
    a = ap.parse_args()
    try:
        if not 0.0 <= a.rate <= 1.0:
            raise PunctkitError(f"--rate must lie in [0, 1], got {a.rate}")
        if a.neighbours < 1 or a.keep_top < 0:
            raise PunctkitError(f"--neighbours must be at least 1 and --keep-top at least 0, "
                                f"got {a.neighbours} and {a.keep_top}")
        inputs = [a.data_dir, a.vectors, a.vocab]
        check_data_dir_output(a.out_dir, inputs=inputs)
        dd = read_data_dir(a.data_dir)
        ranked = [w for _, line in iter_lines(a.vocab) if (w := line.strip()) and w not in SPECIALS]
        kv = load_vectors(a.vectors)
        table = neighbour_table(list(kv.index_to_key), kv.vectors, set(ranked), a.neighbours)
        for w in ranked[:a.keep_top]:  # the most frequent words stay
            table.pop(w, None)
        utts, swapped = augment(dd.utterances, table, a.rate, a.seed, a.prefix)
        write_data_dir(a.out_dir, utts, dd.inventory, {u.uttid: a.prefix for u in utts}, inputs=inputs)
    except PunctkitError as e:
        print(f"neighbour_augment.py: {e}", file=sys.stderr)
        return 1
    n = sum(len(u.words) for u in utts)
    print(f"{a.out_dir}: {swapped} of {n} words swapped ({100 * swapped / max(n, 1):.1f} %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
