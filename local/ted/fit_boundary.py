#!/usr/bin/env python3
"""Learn a model's use of speaker turns and pauses (punctkit/infer/boundary.py) and let valid choose its weight.

    python local/fit_boundary.py --model fast --train "calls_train meetings_train" \
        --valid "calls_valid meetings_val" --out exp/boundary_fast [--threads 1] [--max-docs N]

Each set is two `id path` lists in data/local/: `<set>.scp` (the cased, punctuated NLP references) and
`<set>_blind.scp` (what a user passes: local/blind.py). The network's distributions of each set are computed
once and kept in `OUT/rows_<set>.npz` (a rerun reads them). Writes `OUT/boundary.json` (the fusion at valid's
weight: the mean of punctuation F1 and exact-form case F1 over the valid sets, read with turns and times), and
`OUT/valid.tsv` (every weight's figures, each valid set read with its words only, + turns, + turns and times).
`punctkit pack MODEL --boundary OUT/boundary.json -o NEW.pkt` packs the model with it.

A network that reads the turns and pauses itself (`boundary_input`) gives other distributions for each reading, so
its fusion is fitted on the documents read whole (turns and times as they have them; the network copes with the
rest, as it learned to) and valid.tsv holds that reading only.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from punctkit.files import PunctkitError, atomic_write, iter_lines
from punctkit.infer.boundary_fit import ALL, VARIANTS, Doc, Variant, collect, fit, score_docs
from punctkit.infer.engine import load_model

WEIGHTS = (0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0)
READINGS = {"words": Variant(False, False), "turns": Variant(True, False), "turns+times": Variant(True, True)}


def scp(path: Path) -> list[tuple[str, Path]]:
    return [(a, Path(b.strip())) for _, ln in iter_lines(path) if ln.strip() for a, b in [ln.split(maxsplit=1)]]


def load_set(engine, data: Path, name: str, out: Path, max_docs: int) -> list[Doc]:
    """The documents of one set, the network's distributions cached in OUT/rows_<set>.npz."""
    refs = scp(data / f"{name}.scp")
    blinds = dict(scp(data / f"{name}_blind.scp"))
    if max_docs:  # evenly spaced over the sorted list: every domain of it (the meetings' committees sort last)
        refs = [refs[k * len(refs) // max_docs] for k in range(min(max_docs, len(refs)))]
    cache = out / f"rows_{name}.npz"
    cached = dict(np.load(cache)) if cache.is_file() else {}
    docs, t0, words = [], time.time(), 0
    for k, (uid, ref) in enumerate(refs, 1):
        if uid not in blinds:
            raise PunctkitError(f"{data / f'{name}_blind.scp'}: no {uid}")
        d = collect(engine, ref, blinds[uid], cached.get(uid))
        cached[uid] = d.rows
        docs.append(d)
        words += len(d.targets)
        print(f"\r{name}: {k}/{len(refs)} documents, {words} words, {time.time() - t0:.0f} s", end="", file=sys.stderr)
    print(file=sys.stderr)
    with atomic_write(cache, "wb") as f:
        np.savez(f, **cached)
    return docs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="fast")
    ap.add_argument("--train", required=True)
    ap.add_argument("--valid", required=True)
    ap.add_argument("--data", type=Path, default=Path("data/local"))
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--max-docs", type=int, default=0,
                    help="N documents of each training set, evenly spaced over its list (0: all)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--l2", type=float, default=1e-3)
    args = ap.parse_args()
    try:
        args.out.mkdir(parents=True, exist_ok=True)
        engine = load_model(args.model, threads=args.threads)
        train = [d for s in args.train.split() for d in load_set(engine, args.data, s, args.out, args.max_docs)]
        valid = {s: load_set(engine, args.data, s, args.out, 0) for s in args.valid.split()}
        t0 = time.time()
        reads = bool(getattr(engine.scorer, "reads_boundaries", False))  # the cached rows are the whole reading's
        readings = {"turns+times": READINGS["turns+times"]} if reads else READINGS
        fusion = fit(train, engine.inventory, seed=args.seed, l2=args.l2, variants=(ALL,) if reads else VARIANTS)
        print(f"fitted on {sum(len(d.targets) for d in train)} words in {time.time() - t0:.0f} s", file=sys.stderr)
        rows, best = [], None
        for w in WEIGHTS:
            fw = fusion.with_weight(w)
            figs = {}
            for s, docs in valid.items():
                for reading, v in readings.items():
                    if w and reading == "words":
                        continue  # nothing known: the network alone, whatever the weight
                    r = score_docs(engine, docs, fw, v)
                    figs[(s, reading)] = (r["overall"]["f1"], r["case"]["exact"]["f1"])
            for (s, reading), (p, c) in figs.items():
                rows.append(f"{w}\t{s}\t{reading}\t{p:.1f}\t{c:.1f}")
            mean = float(np.mean([x for (s, rd), pc in figs.items() if rd == "turns+times" for x in pc]))
            parts = ", ".join(f"{s} {rd} {p:.1f}/{c:.1f}" for (s, rd), (p, c) in figs.items())
            print(f"weight {w}: {mean:.2f} ({parts})", file=sys.stderr)
            if best is None or mean > best[0] + 1e-9:
                best = (mean, w)
        with atomic_write(args.out / "valid.tsv") as f:
            f.write("weight\tset\treading\tpunctuation_f1\texact_case_f1\n" + "\n".join(rows) + "\n")
        chosen = fusion.with_weight(best[1])
        with atomic_write(args.out / "boundary.json") as f:
            json.dump(chosen.to_dict(), f, indent=1)
        print(f"valid chose weight {best[1]} (mean {best[0]:.2f}): {args.out / 'boundary.json'}", file=sys.stderr)
    except PunctkitError as e:
        sys.exit(f"{Path(sys.argv[0]).name}: {e}")


if __name__ == "__main__":
    main()
