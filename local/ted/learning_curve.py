#!/usr/bin/env python3
"""The learning curve of one config over training sets of growing size (RESULTS.md, issue 34):
test2011 punctuation F1, and exact-form case F1 (all words, inside sentences) where the training
text is cased, against the number of training words.

    local/learning_curve.py --out ../../results/learning_curve_ted \\
        data/train_iwslt=exp/drnn_lwma_minilm_ctx_iwslt data/train_1m=exp/drnn_lwma_minilm_ctx_1m ...

Each point is TRAIN_DIR=EXP_DIR: the words of TRAIN_DIR/text are counted; EXP_DIR's
decode_test_cased/score.json (else decode_test_ref/score.json) gives the figures. Writes OUT.json
(the points), OUT.png (F1 against training words, log scale) and prints the Markdown table.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from punctkit.files import PunctkitError, atomic_write, iter_lines
from punctkit.score import read_score

SETS = ("test_cased", "test_ref")


def words_of(data_dir: Path) -> int:
    """The number of words in a data directory's `text` (every field after the utterance id)."""
    return sum(len(line.split()) - 1 for _, line in iter_lines(data_dir / "text") if line.strip())


def cased_text(data_dir: Path, share: float = 0.01) -> bool:
    """Whether a data directory's text is cased: at least `share` of its words carry an upper-case
    letter (IWSLT's lower-case text has one stray `Ä` in 266k words; TED's has about 10 %)."""
    words = [w for _, line in iter_lines(data_dir / "text") for w in line.split()[1:]]
    return sum(any(c.isupper() for c in w) for w in words) >= share * max(1, len(words))


def point(spec: str) -> dict:
    """One point of the curve from `TRAIN_DIR=EXP_DIR`."""
    train, eq, exp = spec.partition("=")
    if not eq:
        raise PunctkitError(f"{spec}: give TRAIN_DIR=EXP_DIR")
    for s in SETS:
        path = Path(exp) / f"decode_{s}" / "score.json"
        if path.is_file():
            res = read_score(path)
            case = res.get("case") or {}
            exact = (case.get("exact") or {}).get("f1")
            inside = (case.get("exact_inside") or {}).get("f1")
            has_case = cased_text(Path(train))
            return {"train": train, "exp": exp, "words": words_of(Path(train)), "set": s,
                    "f1": res["overall"]["f1"], "case_exact": exact if has_case else None,
                    "case_inside": inside if has_case else None}
    raise PunctkitError(f"{exp}: no decode_test_cased/score.json or decode_test_ref/score.json (run stages 5-6)")


def table(points: list[dict]) -> str:
    lines = ["| training set | words | test2011 punctuation F1 | exact-form case F1 | inside sentences | exp |",
             "| --- | ---: | ---: | ---: | ---: | --- |"]
    for p in points:
        case = [f"{p[k]:.1f}" if p[k] is not None else "- (lower-case text)" for k in ("case_exact", "case_inside")]
        lines.append(f"| {Path(p['train']).name} | {p['words']:,} | {p['f1']:.1f} | {case[0]} | {case[1]} "
                     f"| {p['exp']} |")
    return "\n".join(lines)


def plot(points: list[dict], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    xs = [p["words"] for p in points]
    ax.plot(xs, [p["f1"] for p in points], "o-", label="punctuation F1 (test2011)")
    cased = [p for p in points if p["case_exact"] is not None]
    if cased:
        ax.plot([p["words"] for p in cased], [p["case_exact"] for p in cased], "s-", label="exact-form case F1")
        ax.plot([p["words"] for p in cased], [p["case_inside"] for p in cased], "^-",
                label="exact-form case F1, inside sentences")
    ax.set_xscale("log")
    ax.set_xlabel("training words")
    ax.set_ylabel("F1 (%)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    with atomic_write(out, "wb") as f:
        fig.savefig(f, format="png", dpi=100)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("points", nargs="+", help="TRAIN_DIR=EXP_DIR, smallest first")
    ap.add_argument("--out", required=True, help="OUT.json and OUT.png are written")
    args = ap.parse_args(argv)
    try:
        points = sorted((point(s) for s in args.points), key=lambda p: p["words"])
        with atomic_write(f"{args.out}.json") as f:
            json.dump(points, f, indent=1)
        plot(points, Path(f"{args.out}.png"))
    except PunctkitError as e:
        print(f"{Path(sys.argv[0]).name}: {e}", file=sys.stderr)
        return 1
    print(table(points))
    return 0


if __name__ == "__main__":
    sys.exit(main())
