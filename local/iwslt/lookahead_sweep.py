#!/usr/bin/env python3
"""F1 against look-ahead for streaming punctuation (issue #19; a benchmark, not a test).

For each model (a packed model.pkt, or an experiment directory, packed on the fly
into a temporary file) and each look-ahead L, decodes the test data dir's streams
(utt2spk: one per talk) with every word's mark decided from at most L words after
it (punctkit/decode/lookahead.py: the labels `punctkit punctuate --stream
--lookahead L` commits), scores them (punctkit.score), and measures the mean delay
from a word's arrival to its mark's commit: in words, and in seconds when the data
dir has a `ctm` (word end times, relative to the utterance: plus its start in
`segments` when there is one, else a talk's utterances are taken as back to back).
Writes a markdown table (stdout and OUT/sweep.md), the numbers (OUT/sweep.json) and a
plot of F1 against L (OUT/sweep.png, matplotlib: pip install 'punctkit[bench]').

    local/iwslt/lookahead_sweep.py exp/drnn_minilm_ctx exp/drnn_minilm_ctx_lookahead \\
        --test data/test_ref --lookahead 0,1,2,4,8,16,inf --out exp/lookahead_sweep
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from punctkit.data.datadir import read_data_dir
from punctkit.data.formats import Utterance
from punctkit.data.streams import Stream, make_streams
from punctkit.decode.lookahead import decode_lookahead, delay, parse_lookahead
from punctkit.files import PunctkitError, atomic_write
from punctkit.infer import Engine, load_model
from punctkit.packing import pack
from punctkit.score import Transcript, read_transcript, score


def load(model: str, tmp: Path, threads: int, backend: str) -> Engine:
    """A packed model, or an experiment directory packed into `tmp` first."""
    path = Path(model)
    if path.is_dir():
        out = tmp / f"{len(list(tmp.iterdir()))}.pkt"
        pack(path, out)
        path = out
    return load_model(path, threads=threads, backend=backend, single=True)


def word_times(test: Path, streams: list[Stream]) -> list[list[float]] | None:
    """End time in seconds of every word of every stream, from TEST/ctm (None without one, or when
    its words do not match the text's one for one)."""
    if not (test / "ctm").is_file():
        return None
    from punctkit.data.timing import read_ctm, read_segments

    ctm = read_ctm(test / "ctm")
    seg = {s.uttid: s.start for s in read_segments(test / "segments")} if (test / "segments").is_file() else {}
    out = []
    for s in streams:
        times: list[float] = []
        for uttid, a, b in s.utt_spans():
            words = ctm.get(uttid, [])
            if len(words) != b - a:
                print(f"warning: {test}/ctm has {len(words)} words for {uttid}, the text {b - a}: no delay in "
                      f"seconds", file=sys.stderr)
                return None
            offset = seg.get(uttid, times[-1] if times else 0.0)  # no segments: utterances back to back
            times += [offset + w.end for w in words]
        out.append(times)
    return out


def delays(streams: list[Stream], times: list[list[float]] | None, window: int,
           lookahead: int | None) -> tuple[float, float | None]:
    """Mean delay (words, seconds) from each word's arrival to its commit: word i of a stream of
    n words is committed when word min(n, i + 1 + delay) - 1 arrives."""
    d = delay(window, lookahead)
    words = secs = 0.0
    total = 0
    for k, s in enumerate(streams):
        n = len(s)
        for i in range(n):
            j = min(n, i + 1 + d) - 1
            words += j - i
            if times is not None:
                secs += times[k][j] - times[k][i]
        total += n
    return words / total, (secs / total if times is not None else None)


def hyp_transcript(streams: list[Stream], labels: list[list[str]]) -> Transcript:
    """The decoded labels as a transcript with the reference's utterances."""
    utts = [Utterance(uttid, s.words[a:b], lab[a:b]) for s, lab in zip(streams, labels)
            for uttid, a, b in s.utt_spans()]
    return Transcript.from_utterances(utts, "hyp")


def sweep(punct: Engine, test: Path, looks: list[int | None]) -> list[dict[str, Any]]:
    """One row per look-ahead: F1 (overall), mean delay in words and seconds."""
    dd = read_data_dir(test, punct.inventory)
    streams = make_streams(dd, punct.inventory)
    ref = read_transcript(test)
    times = word_times(test, streams)
    rows = []
    cache: dict = {}  # windows shared between look-aheads: each is run once over the sweep
    for L in looks:
        ids = decode_lookahead([s.words for s in streams], punct.frontend, punct.window, punct.step, L,
                               punct.scorer.runner.predict, cache,  # type: ignore[union-attr]
                               punct.inventory if punct.closes_streams else None,
                               overlap=punct.options.overlap)
        labels = [[punct.inventory.labels[i] for i in x] for x in ids]
        res = score(ref, hyp_transcript(streams, labels))
        dw, ds = delays(streams, times, punct.window, L)
        rows.append({"lookahead": "inf" if L is None else L, "f1": res["overall"]["f1"],
                     "per_class_f1": {c: res["per_class"][c]["f1"] for c in res["classes"]},
                     "delay_words": round(dw, 2), "delay_s": None if ds is None else round(ds, 3)})
        print(f"{L}: F1 {res['overall']['f1']:.1f}, delay {dw:.2f} words", file=sys.stderr)
    return rows


def table(results: dict[str, list[dict[str, Any]]]) -> str:
    """Markdown: one row per model and look-ahead."""
    lines = ["| model | look-ahead (words) | F1 | mean delay (words) | mean delay (s) |",
             "|---|---:|---:|---:|---:|"]
    for name, rows in results.items():
        for r in rows:
            s = "-" if r["delay_s"] is None else f"{r['delay_s']:.2f}"
            lines.append(f"| {name} | {r['lookahead']} | {r['f1']:.1f} | {r['delay_words']:.2f} | {s} |")
    return "\n".join(lines) + "\n"


def plot(results: dict[str, list[dict[str, Any]]], out: Path) -> None:
    """F1 against look-ahead (unlimited drawn at the right end, labelled inf)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    finite = sorted({r["lookahead"] for rows in results.values() for r in rows if r["lookahead"] != "inf"})
    inf_x = 2 * max(finite) if finite and max(finite) > 0 else 1
    for name, rows in results.items():
        xs = [inf_x if r["lookahead"] == "inf" else r["lookahead"] for r in rows]
        order = sorted(range(len(xs)), key=xs.__getitem__)
        ax.plot([xs[i] for i in order], [rows[i]["f1"] for i in order], marker="o", label=name)
    ticks = finite + ([inf_x] if any(r["lookahead"] == "inf" for rows in results.values() for r in rows) else [])
    ax.set_xscale("symlog", linthresh=1)
    ax.set_xticks(ticks)
    ax.set_xticklabels(["inf" if t == inf_x and t not in finite else str(t) for t in ticks])
    ax.set_xlabel("look-ahead (words after the mark)")
    ax.set_ylabel("F1 (%)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    with atomic_write(out, "wb", encoding=None) as f:
        fig.savefig(f, format="png", dpi=120)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+", help="packed models (.pkt) or experiment directories")
    ap.add_argument("--test", required=True, type=Path, help="test data dir with labels (data/test_ref)")
    ap.add_argument("--lookahead", default="0,1,2,4,8,16,inf", help="comma-separated look-aheads (inf: unlimited)")
    ap.add_argument("--out", type=Path, help="directory for sweep.md, sweep.json, sweep.png (new files only)")
    ap.add_argument("--names", help="comma-separated model names for the table (default: the paths)")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--backend", default="auto")
    args = ap.parse_args()
    try:
        looks = [parse_lookahead(x) for x in args.lookahead.split(",")]
        names = args.names.split(",") if args.names else args.models
        if len(names) != len(args.models):
            raise PunctkitError(f"--names gives {len(names)} names for {len(args.models)} models")
        files = {k: args.out / f"sweep.{k}" for k in ("md", "json", "png")} if args.out else {}
        taken = [str(p) for p in files.values() if p.exists()]
        if taken:
            raise PunctkitError(f"{taken[0]} exists: give another --out (this script never overwrites)")
        results = {}
        with tempfile.TemporaryDirectory(prefix="punctkit-sweep-") as tmp:
            for name, model in zip(names, args.models):
                results[name] = sweep(load(model, Path(tmp), args.threads, args.backend), args.test, looks)
        md = table(results)
        print(md, end="")
        if files:
            args.out.mkdir(parents=True, exist_ok=True)
            with atomic_write(files["md"]) as f:
                f.write(md)
            with atomic_write(files["json"]) as f:
                json.dump(results, f, indent=1)
            plot(results, files["png"])
    except PunctkitError as e:
        sys.exit(f"lookahead_sweep.py: error: {e}")


if __name__ == "__main__":
    main()
