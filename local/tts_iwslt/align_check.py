#!/usr/bin/env python3
"""Benchmark: pocketsphinx forced alignment (`punctkit align`) against espeak-ng's own word events.

Takes the first --words words of IWSLT test2011 in --block-words word utterances,
speaks them with `punctkit synthesize` (espeak-ng; its CTM is exact: the
synthesizer's own word and phoneme events), aligns the audio with `punctkit align`,
and prints the boundary error (|start diff| and |end diff| of every word) and the
alignment speed:

    python local/tts_iwslt/align_check.py [--words 600] [--block-words 20] [--workdir DIR]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from punctkit.align import align_data_dir, boundary_errors  # noqa: E402
from punctkit.data.prepare import prepare  # noqa: E402
from punctkit.data.timing import read_ctm  # noqa: E402
from punctkit.feats.synth import synthesize_data_dir  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iwslt", type=Path, default=ROOT.parent / "shared" / "data" / "iwslt" / "test2011")
    ap.add_argument("--words", type=int, default=600, help="words of test2011 to speak")
    ap.add_argument("--block-words", type=int, default=20, help="words per utterance")
    ap.add_argument("--seed", type=int, default=1, help="voice and rate choice (punctkit synthesize)")
    ap.add_argument("--nj", type=int, default=1, help="synthesis processes")
    ap.add_argument("--workdir", type=Path, help="keep the data here (default: a temporary directory)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.workdir or Path(tmp)
        prepare([args.iwslt], work / "text", block_len=args.block_words, lines=(1, args.words), overwrite=True)
        synthesize_data_dir(work / "text", work / "audio", seed=args.seed, nj=args.nj, overwrite=True)
        s = align_data_dir(work / "audio", work / "align.ctm", overwrite=True, skip_bad=True)
        err = boundary_errors(read_ctm(work / "audio" / "ctm"), read_ctm(work / "align.ctm"))
        print(s.line(), file=sys.stderr)
    if not len(err):
        sys.exit("align_check: no utterance aligned")
    ms = 1000 * err
    print(f"| utterances | words | mean (ms) | median (ms) | 95th pct (ms) | max (ms) | within 50 ms | RTF/core |\n"
          f"|---|---|---|---|---|---|---|---|\n"
          f"| {s.stats.done} of {s.stats.utterances} | {len(err) // 2} | {ms.mean():.1f} | {np.median(ms):.1f} | "
          f"{np.percentile(ms, 95):.1f} | {ms.max():.0f} | {100 * np.mean(ms <= 50):.1f} % | {s.stats.rtf:.3f} |")


if __name__ == "__main__":
    main()
