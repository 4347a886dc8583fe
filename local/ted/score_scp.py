#!/usr/bin/env python3
"""Score a set of documents as one: each `id path` reference of an scp against `HYPDIR/<id>.nlp`, the words of all
of them joined in order (`punctkit score`'s report, then one summary line: punctuation F1, exact-form case F1).

    python local/score_scp.py data/local/calls_valid.scp exp/boundary_fast/score/after/calls_valid_turns/hyp
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from punctkit.files import PunctkitError, iter_lines
from punctkit.score import Transcript, format_report, read_transcript, score


def joined(parts: list[Transcript], name: str) -> Transcript:
    """Transcripts one after another as one (each keeps its utterances)."""
    words, labels, uttids, starts = [], [], [], []
    for t in parts:
        starts += [len(words) + s for s in t.starts]
        uttids += [f"{Path(t.path).stem}:{u}" for u in t.uttids]
        words += t.words
        labels += t.labels
    first = parts[0]
    return Transcript(name, words, labels, uttids, starts, first.marks, False, first.inventory)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scp", type=Path)
    ap.add_argument("hypdir", type=Path)
    args = ap.parse_args()
    try:
        refs, hyps = [], []
        for _, line in iter_lines(args.scp):
            if not line.strip():
                continue
            uid, path = line.split(maxsplit=1)
            refs.append(read_transcript(path.strip(), "nlp", "truecase4"))
            hyps.append(read_transcript(args.hypdir / f"{uid}.nlp", "nlp", "truecase4"))
        if not refs:
            raise PunctkitError(f"{args.scp}: no documents")
        result = score(joined(refs, str(args.scp)), joined(hyps, str(args.hypdir)), align=False)
        print(format_report(result))
        case = result["case"]["exact"]["f1"] if result.get("case") else float("nan")
        print(f"punctuation F1 {result['overall']['f1']:.1f}  exact-form case F1 {case:.1f}  "
              f"({result['counts']['ref_words']} words, {len(refs)} documents)")
    except PunctkitError as e:
        sys.exit(f"{Path(sys.argv[0]).name}: {e}")


if __name__ == "__main__":
    main()
