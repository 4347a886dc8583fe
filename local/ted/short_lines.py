#!/usr/bin/env python3
"""A data directory's words as a recognizer hands them over, and the reference to score them against:
lines of MIN to MAX words (its segments, cut anywhere), lower case, no marks. Four files in OUT:
in.txt / ref.txt (plain text: `punctuate` reads the lines as one stream, sentences running on across them)
and in.kt / ref.kt (Kaldi text: each line an utterance of its own, ids `<uttid>-<n>`). With
`--whole-contractions` IWSLT's split contractions are written whole (`do n't` -> `don't`, `it 's` -> `it's`),
as recognizers write them.

    python local/short_lines.py data/calls_test OUT [--min 6] [--max 20] [--seed 1] [--whole-contractions]
    punctkit punctuate -m accurate --input-format text --format text OUT/in.txt -o OUT/accurate.txt
    punctkit score --align --ref-format text --hyp-format text OUT/ref.txt OUT/accurate.txt

(`--align`: abbreviations such as `St.` are read as words with their period, so the two sides' words may differ.)
"""
from __future__ import annotations

import argparse
import random
from pathlib import Path

from punctkit.data.datadir import read_data_dir
from punctkit.data.labels import MARK_TEXT, O, mark_of
from punctkit.files import PunctkitError

CONTRACTIONS = ("n't", "'s", "'m", "'re", "'ve", "'ll", "'d")


def joined(words: list[str], labels: list[str], whole: bool) -> list[tuple[str, str]]:
    """(word, mark) pairs, a split contraction joined to the word before it (its mark the contraction's)."""
    out: list[tuple[str, str]] = []
    for w, lab in zip(words, labels):
        if whole and out and w.lower() in CONTRACTIONS and out[-1][1] == O:
            out[-1] = (out[-1][0] + w, mark_of(lab))
        else:
            out.append((w, mark_of(lab)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--min", type=int, default=6)
    ap.add_argument("--max", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--whole-contractions", action="store_true")
    args = ap.parse_args()
    if not 1 <= args.min <= args.max:
        raise SystemExit("short_lines.py: --min must be at least 1 and at most --max")
    try:
        dd = read_data_dir(args.data)
    except PunctkitError as e:
        raise SystemExit(f"short_lines.py: {e}") from None
    if not any(u.labels for u in dd.utterances):
        raise SystemExit(f"short_lines.py: {args.data} has no labels: give a reference data directory (data/calls_test)")
    rng = random.Random(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    files = {name: open(args.out / name, "w", encoding="utf-8") for name in ("in.txt", "ref.txt", "in.kt", "ref.kt")}
    try:
        for u in sorted(dd.utterances, key=lambda u: u.uttid):
            pairs = joined(u.words, u.labels, args.whole_contractions)
            i = n = 0
            while i < len(pairs):
                seg = pairs[i:i + rng.randint(args.min, args.max)]
                i += len(seg)
                n += 1
                ref = " ".join(w + (MARK_TEXT[m] if m != O else "") for w, m in seg)
                given = " ".join(w.lower() for w, _ in seg)
                files["ref.txt"].write(ref + "\n")
                files["in.txt"].write(given + "\n")
                files["ref.kt"].write(f"{u.uttid}-{n:03d} {ref}\n")
                files["in.kt"].write(f"{u.uttid}-{n:03d} {given}\n")
    finally:
        for f in files.values():
            f.close()
    print(f"short_lines.py: {len(dd.utterances)} utterances of {args.data} -> {args.out}/{{in,ref}}.{{txt,kt}}")


if __name__ == "__main__":
    main()
