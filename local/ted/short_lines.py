#!/usr/bin/env python3
"""A data directory's words as a recognizer hands them over, and the reference to score them against:
lines of MIN to MAX words (its segments, cut anywhere), lower case, no marks. Four files in OUT:
in.txt / ref.txt (plain text: `punctuate` reads the lines as one stream, sentences running on across them)
and in.kt / ref.kt (Kaldi text: each line an utterance of its own, ids `<uttid>-<line number>`). With
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
from punctkit.data.formats import write
from punctkit.data.labels import LabelSet, O, mark_of
from punctkit.data.utterance import Utterance
from punctkit.files import PunctkitError, check_output_file

CONTRACTIONS = ("n't", "'s", "'m", "'re", "'ve", "'ll", "'d")


def joined(words: list[str], labels: list[str], inv: LabelSet, whole: bool) -> list[tuple[str, str]]:
    """(word, label) pairs, a split contraction joined to the word before it (its case the stem's, its
    mark the contraction's)."""
    out: list[tuple[str, str]] = []
    for w, lab in zip(words, labels):
        if whole and out and w.lower() in CONTRACTIONS and mark_of(out[-1][1]) == O:
            out[-1] = (out[-1][0] + w, inv.relabel(out[-1][1], mark_of(lab)))
        else:
            out.append((w, lab))
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
        raise SystemExit(f"short_lines.py: {args.data} has no labels: "
                         "give a reference data directory (data/calls_test)")
    inv, rng = dd.inventory, random.Random(args.seed)
    ref: list[Utterance] = []
    given: list[Utterance] = []
    for u in sorted(dd.utterances, key=lambda u: u.uttid):
        pairs = joined(u.words, u.labels, inv, args.whole_contractions)
        i = 0
        while i < len(pairs):
            seg = pairs[i:i + rng.randint(args.min, args.max)]
            i += len(seg)
            uttid = f"{u.uttid}-{len(ref) + 1:06d}"
            ref.append(Utterance(uttid, [w for w, _ in seg], [lab for _, lab in seg]))
            given.append(Utterance(uttid, [w.lower() for w, _ in seg], [inv.label_for(w.lower(), O) for w, _ in seg]))
    outs = [(args.out / f"{name}.{ext}", fmt, utts) for name, utts in (("ref", ref), ("in", given))
            for ext, fmt in (("txt", "text"), ("kt", "kaldi_text"))]
    try:  # a file punctkit did not write is never replaced; each file appears only when complete
        for path, _, _ in outs:
            check_output_file(path, [args.data])
        args.out.mkdir(parents=True, exist_ok=True)
        for path, fmt, utts in outs:
            write(utts, path, fmt, inv, inputs=[args.data])
    except PunctkitError as e:
        raise SystemExit(f"short_lines.py: {e}") from None
    print(f"short_lines.py: {len(dd.utterances)} utterances of {args.data} -> {len(ref)} lines in "
          f"{args.out}/{{in,ref}}.{{txt,kt}}")


if __name__ == "__main__":
    main()
