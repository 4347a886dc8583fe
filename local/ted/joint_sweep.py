#!/usr/bin/env python3
"""The joint decision of marks and case (punctkit/decode/joint.py) over settings, on data directories:
each set decoded once by a packed model (its per-word distributions), then labelled under each
setting and scored as `punctkit score` scores a decode (punctuation F1; exact-form case F1, all words
and inside sentences; lower-case words after a sentence end, of all such words; capitals inside
sentences on words the reference writes in lower case). Choose on valid sets only.

    python local/joint_sweep.py PACKAGE data/valid data/valid_case data/calls_valid
      [--setting NAME:LOOKAHEAD:THRESHOLD:WEIGHT:AHEAD ...]   (default: the grid below)

A setting `argmax` is each word's own arg-max (the decode option `joint: false`).
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from punctkit.data.datadir import read_data_dir, write_data_dir
from punctkit.data.formats import Utterance
from punctkit.data.labels import cased_words
from punctkit.data.streams import make_streams
from punctkit.decode.joint import JointDecision
from punctkit.decode.stream_end import close_ids
from punctkit.infer import Engine, load_model
from punctkit.score import score_files

GRID = ["argmax", "la1_rule1:1:0:0:0", "la1_th0.05:1:0.05:0:0", "la1_th0.1:1:0.1:0:0", "la1_th0.1_ahead:1:0.1:0:1",
        "la1_w0.5:1:0:0.5:1", "la1_w1:1:0:1:1", "la0_th0.1:0:0.1:0:0"]


def decision(spec: str, eng: Engine) -> tuple[str, JointDecision]:
    fe = eng.frontend
    if spec == "argmax":
        return spec, JointDecision(eng.inventory, fe.case_lexicon, fe.case_prior, enabled=False)
    name, la, th, wt, ahead = spec.split(":")
    return name, JointDecision(eng.inventory, fe.case_lexicon, fe.case_prior, threshold=float(th), lookahead=int(la),
                               weight=float(wt), rule2_ahead=ahead == "1")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("package")
    ap.add_argument("sets", nargs="+", type=Path)
    ap.add_argument("--setting", action="append", default=None)
    args = ap.parse_args()
    eng = load_model(args.package, threads=1, single=True)
    inv = eng.inventory
    decoded = {}
    for d in args.sets:
        dd = read_data_dir(d)
        streams = make_streams(dd, inv)
        decoded[d] = (dd, streams, eng.scorer.distributions(streams))
    print("\t".join(["setting"]
                    + [f"{d.name}: P / exact / inside / lower after end / capitals inside" for d in args.sets]))
    for spec in args.setting or GRID:
        name, jd = decision(spec, eng)
        cells = [name]
        for d, (dd, streams, hyps) in decoded.items():
            utts = []
            for s, got in zip(streams, hyps):
                ids = close_ids(jd.decide(got.rows, s.words, opens=True, best=got.best), got.rows, inv, closes=True)
                for uttid, a, b in s.utt_spans():
                    labels = [inv.labels[i] for i in ids[a:b]]
                    utts.append(Utterance(uttid, cased_words(s.words[a:b], labels, inv, eng.frontend.case_lexicon),
                                          labels))
            with tempfile.TemporaryDirectory() as tmp:
                write_data_dir(Path(tmp) / "hyp", utts, inv, dd.utt2spk)
                r = score_files(d, Path(tmp) / "hyp")
            c = r.get("case")
            if c:
                k = c["contradictions"]
                cells.append(f"{r['overall']['f1']:.1f} / {c['exact']['f1']:.1f} / {c['exact_inside']['f1']:.1f} / "
                             f"{k['lower_after_end']} of {k['after_end']} / {k['capital_inside']}")
            else:
                cells.append(f"{r['overall']['f1']:.1f}")
        print("\t".join(cells), flush=True)


if __name__ == "__main__":
    main()
