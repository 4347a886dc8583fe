#!/usr/bin/env python3
"""Whether a candidate replaces a shipped model, by valid sets only (never a test set): the six
figures of issue 79, punctuation F1 on dev2012's valid, the calls' valid and the meetings' val,
exact-form case F1 on TED's valid_case, the calls' valid and the meetings' val (the calls and
the meetings decoded with the turns and times their data directories carry). A replacement raises
the mean of the six and loses no more than `--max-loss` (0.5) on any one. Reads the score.json
files of local/ship_eval.sh.

    local/ship_rule.py exp/plm_minilm_accurate/pkg_decode exp/fast_shipped/decode
    (PREFIX_<set>/score.json: candidate first, then the model it would replace)

Prints one line per figure and the verdict; exit status 0 either way (1 on a missing file).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

FIGURES = (("valid", "punctuation"), ("calls_valid", "punctuation"), ("meetings_val", "punctuation"),
           ("valid_case", "case"), ("calls_valid", "case"), ("meetings_val", "case"))


def figure(prefix: str, data: str, kind: str) -> float:
    path = Path(f"{prefix}_{data}") / "score.json"
    if not path.is_file():
        sys.exit(f"{path}: not found (run local/ship_eval.sh first)")
    s = json.loads(path.read_text(encoding="utf-8"))
    return float(s["overall"]["f1"] if kind == "punctuation" else s["case"]["exact"]["f1"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("candidate", help="the candidate's decode prefix (e.g. exp/X/pkg_decode)")
    ap.add_argument("shipped", help="the shipped model's decode prefix")
    ap.add_argument("--max-loss", type=float, default=0.5)
    a = ap.parse_args()
    new = [figure(a.candidate, d, k) for d, k in FIGURES]
    old = [figure(a.shipped, d, k) for d, k in FIGURES]
    for (d, k), n, o in zip(FIGURES, new, old):
        print(f"{d:12s} {k:11s} {o:6.2f} -> {n:6.2f} ({n - o:+.2f})")
    mean_new, mean_old = sum(new) / len(new), sum(old) / len(old)
    worst = min(n - o for n, o in zip(new, old))
    ok = mean_new > mean_old and worst >= -a.max_loss
    print(f"mean {mean_old:.2f} -> {mean_new:.2f}; largest loss {max(0.0, -worst):.2f}; "
          f"replace: {'yes' if ok else 'no'}")


if __name__ == "__main__":
    main()
