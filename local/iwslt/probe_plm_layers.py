#!/usr/bin/env python3
"""Which layer of a pre-trained LM gives the best static word vectors for punctuation?

A linear probe on the training data alone (nothing of valid or test is read): each word type
with a vector (pooled over its occurrences at every layer, `embeddings.pooled_hidden_states`;
the mean input embedding; random vectors as the floor) predicts, by softmax regression, the
distribution of the mark after the word and of the mark before it (a sentence start). The
probe is fitted on a random 80 % of the types seen at least `--min-count` times and scored on
the held-out types seen at most `--max-count` times: rare words, where a model learns least
from the data and pre-trained vectors matter most. The score is the held-out cross-entropy's
gain over the training prior, in nats (higher is better), the best of three L2 weights.

    local/probe_plm_layers.py data/train [--plm auto] [--min-count 5] [--max-count 50]
"""
from __future__ import annotations

import argparse
import sys

import numpy as np
import torch

from punctkit.data.datadir import read_data_dir
from punctkit.files import PunctkitError
from punctkit.text.embeddings import input_word_vectors, pooled_hidden_states
from punctkit.text.plm import read_plm_config, resolve_plm_dir


def mark_counts(dd, vocab: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(types, labels) counts of the label after each word and of the label before it."""
    idx = {w: i for i, w in enumerate(vocab)}
    labels = list(dd.inventory.labels)
    after = np.zeros((len(vocab), len(labels)))
    before = np.zeros_like(after)
    prev = None
    for u in dd.utterances:  # one stream: the word before an utterance's first is the last one's
        for w, lab in zip(u.words, u.labels):
            after[idx[w], labels.index(lab)] += 1
            if prev is not None:
                before[idx[w], labels.index(prev)] += 1
            prev = lab
    return after, before


def probe_gain(x: np.ndarray, counts: np.ndarray, weights: np.ndarray, train: np.ndarray, test: np.ndarray,
               l2: float) -> float:
    """Held-out cross-entropy gain (nats, count-weighted) of softmax regression over the prior."""
    X = torch.tensor(x, dtype=torch.float64)
    X = (X - X[train].mean(0)) / (X[train].std(0) + 1e-6)
    P = torch.tensor(counts / np.maximum(counts.sum(1, keepdims=True), 1))
    w = torch.tensor(weights, dtype=torch.float64)
    W = torch.zeros(X.shape[1], P.shape[1], dtype=torch.float64, requires_grad=True)
    b = torch.zeros(P.shape[1], dtype=torch.float64, requires_grad=True)

    def xent(rows: np.ndarray, logp: torch.Tensor) -> torch.Tensor:
        return -((P[rows] * logp).sum(1) * w[rows]).sum() / w[rows].sum()

    opt = torch.optim.LBFGS([W, b], max_iter=200, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = xent(train, torch.log_softmax(X[train] @ W + b, -1)) + l2 * (W ** 2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    prior = (P[train] * w[train, None]).sum(0) / w[train].sum()
    with torch.no_grad():
        return float(xent(test, prior.clamp(min=1e-12).log()) - xent(test, torch.log_softmax(X[test] @ W + b, -1)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", help="training data directory (text, labels)")
    ap.add_argument("--plm", default="auto", help="PLM directory (auto: the packaged MiniLM)")
    ap.add_argument("--min-count", type=int, default=5)
    ap.add_argument("--max-count", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    dd = read_data_dir(args.data)
    sents = [u.words for u in dd.utterances if u.words]
    d = resolve_plm_dir(args.plm)
    n_layers = int(read_plm_config(d)["num_hidden_layers"])
    vocab, pooled = pooled_hidden_states(sents, d, range(n_layers + 1), show=True)
    feats = {f"layer {k}": pooled[k] for k in range(n_layers + 1)}
    feats["input embeddings"] = input_word_vectors(sents, d)[1]
    after, before = mark_counts(dd, vocab)
    n = after.sum(1)
    cand = np.where(n >= args.min_count)[0]
    rng = np.random.default_rng(args.seed)
    held = rng.random(len(cand)) < 0.2
    feats["random"] = rng.normal(size=feats["input embeddings"].shape)
    train, test = cand[~held], cand[held]
    test = test[n[test] <= args.max_count]
    print(f"{args.data}: {len(vocab)} word types; probe fitted on {len(train)}, scored on {len(test)} "
          f"held-out types seen {args.min_count}-{args.max_count} times")
    print("| vectors | mark after | mark before | sum |\n|---|---|---|---|")
    for name, x in feats.items():
        gains = [max(probe_gain(x, c, n, train, test, l2) for l2 in (1e-4, 1e-3, 1e-2)) for c in (after, before)]
        print(f"| {name} | {gains[0]:.3f} | {gains[1]:.3f} | {sum(gains):.3f} |", flush=True)


if __name__ == "__main__":
    try:
        main()
    except PunctkitError as e:
        sys.exit(f"{sys.argv[0]}: {e}")
