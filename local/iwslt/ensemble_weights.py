#!/usr/bin/env python3
"""Ensemble weights chosen on the validation data: a grid search over the members' label probabilities.

Each member (an experiment dir or a packed single model) labels VALID once, with its
per-word label probabilities (an experiment as `punctkit decode --probs` does, into a
temporary directory; a package through `Engine`, stream by stream as decode groups
them); then every weighting on a grid of STEP (0.1: weights 0, 0.1, ..., 1 summing to 1)
averages them in numpy, takes each word's arg-max and is scored against VALID's labels
with punctkit.score. Prints each member's F1, the best weights and their valid F1:

    local/iwslt/ensemble_weights.py exp/tagger exp/seq2seq --valid data/valid
    punctkit pack --ensemble exp/tagger exp/seq2seq --weights 0.7,0.3 -o ens.pkt

`--max-members K` keeps only the weightings with at most K non-zero weights: among many
candidates, the best ensemble of K models (a package of K graphs, its speed about K models').
"""
from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
from pathlib import Path

import numpy as np

from punctkit.data.datadir import read_data_dir
from punctkit.data.formats import read
from punctkit.data.labels import LabelSet
from punctkit.data.probs import PROBS_FILE, read_probs
from punctkit.data.streams import Stream, make_streams
from punctkit.data.utterance import Utterance
from punctkit.decode.combine import check_inventories, combine
from punctkit.decode.stream_end import close_ids
from punctkit.files import PunctkitError
from punctkit.score import Transcript, score


def member_probs(member: Path, valid: Path, tmp: Path) -> tuple[LabelSet, dict[str, np.ndarray]]:
    """The member's inventory and uttid -> words x labels probabilities on `valid`."""
    if member.is_dir():
        from punctkit.data.labels import get_inventory
        from punctkit.decode_data import decode_dir
        from punctkit.expdir import read_model_config

        inv = get_inventory(read_model_config(member)["resolved"]["inventory"])
        out = tmp / f"m{len(list(tmp.iterdir()))}"
        decode_dir(member, valid, out, probs=True, log=lambda m: print(m, file=sys.stderr))
        return inv, dict(read_probs(out / PROBS_FILE, len(inv.labels)))
    from punctkit.infer import load_model

    punct = load_model(member, single=True)  # (an ensemble package is refused, in one line)
    rows: dict[str, np.ndarray] = {}
    streams = make_streams(read_data_dir(valid, punct.inventory, need_labels=False), punct.inventory)
    for s, done in zip(streams, punct.label([s.words for s in streams], probs=True)):
        rows.update({u: done.rows[a:b] for u, a, b in s.utt_spans()})
    return punct.inventory, rows


def grid(n: int, step: float, max_members: int | None = None) -> list[tuple[float, ...]]:
    """Every n weights on the grid of `step` that sum to 1, at most `max_members` of them non-zero."""
    k = round(1 / step)
    if abs(k * step - 1) > 1e-9:
        raise PunctkitError(f"--step {step}: 1 must be a whole number of steps")
    if max_members is not None and max_members < 1:
        raise PunctkitError(f"--max-members {max_members}: give 1 or more")
    return [tuple(c / k for c in combo) for combo in itertools.product(range(k + 1), repeat=n)
            if sum(combo) == k and (max_members is None or sum(c > 0 for c in combo) <= max_members)]


def f1_of(weights: tuple[float, ...], tables: list[dict[str, np.ndarray]], streams: list[Stream],
          inv: LabelSet, ref: Transcript, closes: bool = True) -> float:
    """Overall valid F1 of the weighted average's arg-max labels, each stream's last word ending a
    sentence as `punctkit decode` ends it (punctkit/decode/stream_end.py), unless not `closes`
    (`--stream-end open`)."""
    hyp = []
    for s in streams:
        spans = [(u, a, b) for u, a, b in s.utt_spans() if b > a]
        if not spans:
            continue
        rows = np.concatenate([combine([t[u] for t in tables], weights) for u, _, _ in spans])
        labels = [inv.labels[i] for i in close_ids(rows.argmax(1).tolist(), rows, inv, closes=closes)]
        hyp += [Utterance(u, s.words[a:b], labels[a - spans[0][1]:b - spans[0][1]]) for u, a, b in spans]
    return float(score(ref, Transcript.from_utterances(hyp, "ensemble", ref.marks, keyed=True))["overall"]["f1"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("members", nargs="+", type=Path, help="experiment dirs or packed models (2 or more)")
    ap.add_argument("--valid", type=Path, required=True, help="validation data directory (text + labels)")
    ap.add_argument("--step", type=float, default=0.1, help="grid step of the weights (default 0.1)")
    ap.add_argument("--stream-end", choices=("sentence", "open"), default="sentence",
                    help="as punctkit decode --stream-end: whether a stream's last word ends a sentence")
    ap.add_argument("--max-members", type=int, default=None,
                    help="only weightings with at most this many non-zero weights (a package's size and speed)")
    args = ap.parse_args()
    try:
        ref_utts, found = read(args.valid, "datadir")
        ref = Transcript.from_utterances(ref_utts, str(args.valid), found.marks, keyed=True)
        with tempfile.TemporaryDirectory(prefix="punctkit-ensemble-") as tmp:
            got = [member_probs(m, args.valid, Path(tmp)) for m in args.members]
        check_inventories([str(m) for m in args.members], [inv for inv, _ in got])
        inv, tables = got[0][0], [t for _, t in got]
        missing = [u.uttid for u in ref_utts if u.words and any(u.uttid not in t for t in tables)]
        if missing:
            raise PunctkitError(f"{args.valid}: utterance '{missing[0]}' has no probabilities from every member")
        streams = make_streams(read_data_dir(args.valid, inv, need_labels=False), inv)
        closes = args.stream_end == "sentence"
        for k, m in enumerate(args.members):
            one = tuple(float(i == k) for i in range(len(tables)))
            print(f"member {k} {m}: valid F1 {f1_of(one, tables, streams, inv, ref, closes):.2f}")
        scored = [(f1_of(w, tables, streams, inv, ref, closes), w)
                  for w in grid(len(tables), args.step, args.max_members)]
        best_f1, best = max(scored, key=lambda x: (x[0], -max(x[1])))  # ties: the more even weights
        print(f"best weights {','.join(f'{w:g}' for w in best)}: valid F1 {best_f1:.2f} "
              f"({len(scored)} weightings tried)")
    except PunctkitError as e:
        sys.exit(f"ensemble_weights.py: error: {e}")


if __name__ == "__main__":
    main()
