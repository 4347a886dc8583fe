#!/usr/bin/env python3
"""The speed/accuracy front of packages (RESULTS.md, issue 36): test F1 against words/s of the whole
process, log scale, the Pareto front drawn and named.

    utils/bench_punctuate.sh --score true --out front.tsv A.pkt B.pkt ...    # one session, one machine
    utils/plot_front.py front.tsv --out results/front_test2011 [--name A.pkt=fast ...]

Reads utils/bench_punctuate.sh's `--out` lines with the F1 column (`--score true`): model, words,
seconds, words/s, words/s without start-up, F1; `#` lines (the CPU) are kept for the plot's title.
A model timed more than once (different options) is one point per line, labelled with its name.
A point is on the front when no other is at least as fast and at least as accurate, and better in
one. Writes OUT.json (the points, `front` marked) and OUT.png, and prints the Markdown table.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from punctkit.files import PunctkitError, atomic_write, iter_lines


def read_points(paths: list[Path], names: dict[str, str]) -> tuple[list[dict], list[str]]:
    """The points of bench TSV files, and their `# cpu:` lines (distinct, in order)."""
    points, cpus = [], []
    for path in paths:
        for i, line in iter_lines(path):
            if not line.strip():
                continue
            if line.startswith("#"):
                if line not in cpus:
                    cpus.append(line)
                continue
            f = line.split("\t")
            if len(f) < 6:
                raise PunctkitError(f"{path}:{i}: {len(f)} fields, expected 6 (model, words, seconds, words/s, "
                                    f"words/s without start-up, F1): run utils/bench_punctuate.sh with --score true")
            try:
                wps, f1 = float(f[3]), float(f[5])
            except ValueError:
                raise PunctkitError(f"{path}:{i}: words/s {f[3]!r} or F1 {f[5]!r} is not a number") from None
            points.append({"model": f[0], "name": names.get(f[0], Path(f[0]).name), "words_per_s": wps, "f1": f1})
    if not points:
        raise PunctkitError(f"{', '.join(map(str, paths))}: no timed packages")
    return points, cpus


def mark_front(points: list[dict]) -> list[dict]:
    """Set `front` on each point: True when no other point dominates it."""
    for p in points:
        p["front"] = not any(q is not p and q["words_per_s"] >= p["words_per_s"] and q["f1"] >= p["f1"]
                             and (q["words_per_s"] > p["words_per_s"] or q["f1"] > p["f1"]) for q in points)
    return points


def table(points: list[dict]) -> str:
    lines = ["| package | words/s (whole process) | F1 | on the front |", "| --- | ---: | ---: | --- |"]
    for p in sorted(points, key=lambda p: -p["words_per_s"]):
        lines.append(f"| {p['name']} | {p['words_per_s']:,.0f} | {p['f1']:.1f} | {'yes' if p['front'] else ''} |")
    return "\n".join(lines)


def plot(points: list[dict], cpus: list[str], out: Path, target: tuple[float, float] | None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for p in points:
        ax.plot(p["words_per_s"], p["f1"], "o" if p["front"] else "x", color="C0" if p["front"] else "C7")
        ax.annotate(p["name"], (p["words_per_s"], p["f1"]), textcoords="offset points", xytext=(4, 4), fontsize=7)
    front = sorted((p for p in points if p["front"]), key=lambda p: p["words_per_s"])
    ax.plot([p["words_per_s"] for p in front], [p["f1"] for p in front], "-", color="C0", label="Pareto front")
    if target:
        ax.axvline(target[0], color="C3", ls=":", lw=1)
        ax.axhline(target[1], color="C3", ls=":", lw=1, label=f"target: {target[1]:g} F1 at {target[0]:,.0f} words/s")
    ax.set_xscale("log")
    ax.set_xlabel("words/s, whole process (log scale)")
    ax.set_ylabel("F1 (%)")
    if cpus:
        ax.set_title(cpus[0].lstrip("# ")[:90], fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower left", fontsize=8)
    fig.tight_layout()
    with atomic_write(out, "wb") as f:
        fig.savefig(f, format="png", dpi=100)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tsv", nargs="+", type=Path, help="utils/bench_punctuate.sh --score true --out files")
    ap.add_argument("--out", required=True, help="OUT.json and OUT.png are written")
    ap.add_argument("--name", action="append", default=[], help="MODEL=LABEL: a point's label in the plot")
    ap.add_argument("--target", default="2000,75", help="WORDS_PER_S,F1 drawn as dotted lines ('' for none)")
    args = ap.parse_args(argv)
    try:
        names = {}
        for spec in args.name:
            model, eq, label = spec.partition("=")
            if not eq or not label:
                raise PunctkitError(f"--name {spec!r}: give MODEL=LABEL")
            names[model] = label
        target = None
        if args.target:
            try:
                wps, f1 = (float(x) for x in args.target.split(","))
            except ValueError:
                raise PunctkitError(f"--target {args.target!r}: give WORDS_PER_S,F1, e.g. 2000,75") from None
            target = (wps, f1)
        points, cpus = read_points(args.tsv, names)
        mark_front(points)
        with atomic_write(f"{args.out}.json") as f:
            json.dump({"cpu": cpus, "points": points}, f, indent=1)
        plot(points, cpus, Path(f"{args.out}.png"), target)
    except (PunctkitError, OSError) as e:
        print(f"{Path(sys.argv[0]).name}: {e}", file=sys.stderr)
        return 1
    print(table(points))
    return 0


if __name__ == "__main__":
    sys.exit(main())
