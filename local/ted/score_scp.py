#!/usr/bin/env python3
"""Score a set of documents as one: each `id path` reference of an scp against `HYPDIR/<id>.nlp`, the words of all
of them joined in order (`punctkit score`'s report, then one summary line: punctuation F1, exact-form case F1, and
the share of speaker turn changes whose last word has no mark, in the hypothesis and in the reference).

    python local/score_scp.py data/local/calls_valid.scp exp/boundary_fast/score/after/calls_valid_turns/hyp
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from punctkit.data.formats.nlp import nlp_units
from punctkit.data.formats.protocol import ReadContext
from punctkit.data.labels import O, default_substitution, get_inventory
from punctkit.files import PunctkitError, iter_lines
from punctkit.score import Transcript, format_report, read_transcript, score

INV = get_inventory("truecase4")


def turn_ends(ref: Path, hyp: Path) -> tuple[list[str], list[str]]:
    """The marks (O for none) after the last word of each of the reference's speaker turns that another speaker's
    turn follows, in the reference and in the hypothesis (the same rows, whatever speakers it was given)."""
    rules = default_substitution(INV)
    units = [u for u in nlp_units.read(ref, ReadContext.of(ref, INV, rules)) if u.words]
    ends, at = [], 0
    for a, b in zip(units, units[1:]):
        at += len(a.words)
        if a.speaker != b.speaker:
            ends.append(at - 1)
    ref_marks = [m for u in units for m in u.marks]
    hyp_marks = [m for u in nlp_units.read(hyp, ReadContext.of(hyp, INV, rules)) for m in u.marks]
    if len(hyp_marks) != len(ref_marks):
        raise PunctkitError(f"{hyp}: {len(hyp_marks)} words, its reference {ref} {len(ref_marks)}")
    return [ref_marks[k] for k in ends], [hyp_marks[k] for k in ends]


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
        ends_ref: list[str] = []
        ends_hyp: list[str] = []
        for _, line in iter_lines(args.scp):
            if not line.strip():
                continue
            uid, path = line.split(maxsplit=1)
            refs.append(read_transcript(path.strip(), "nlp", "truecase4"))
            hyps.append(read_transcript(args.hypdir / f"{uid}.nlp", "nlp", "truecase4"))
            r, h = turn_ends(Path(path.strip()), args.hypdir / f"{uid}.nlp")
            ends_ref += r
            ends_hyp += h
        if not refs:
            raise PunctkitError(f"{args.scp}: no documents")
        result = score(joined(refs, str(args.scp)), joined(hyps, str(args.hypdir)), align=False)
        print(format_report(result))
        case = result["case"]["exact"]["f1"] if result.get("case") else float("nan")
        bare = (f"turn changes without a mark {100 * ends_hyp.count(O) / len(ends_hyp):.1f} % "
                f"(reference {100 * ends_ref.count(O) / len(ends_ref):.1f} %, {len(ends_ref)} turn changes)  "
                if ends_ref else "")
        print(f"punctuation F1 {result['overall']['f1']:.1f}  exact-form case F1 {case:.1f}  {bare}"
              f"({result['counts']['ref_words']} words, {len(refs)} documents)")
    except PunctkitError as e:
        sys.exit(f"{Path(sys.argv[0]).name}: {e}")


if __name__ == "__main__":
    main()
