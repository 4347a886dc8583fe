#!/usr/bin/env python3
"""How initials come back: words of a reference that are letters joined by periods (`U.S.`, `J.P.`,
`i.e.`) or by `&` (`Q&A`, `M&A`, `P&L`, `R&D`), and how many a hypothesis writes in exactly the same
form (both data directories of the same words, as `punctkit decode` writes them).

    python local/initials.py data/calls_test exp/TAG/decode_calls_test/hyp
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

from punctkit.data.datadir import read_data_dir
from punctkit.files import PunctkitError

CLASSES = {"dotted": re.compile(r"[^\W\d_](?:\.[^\W\d_])+\.?"), "ampersand": re.compile(r"[^\W\d_]{1,3}(?:&[^\W\d_])+")}


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    try:
        ref, hyp = (read_data_dir(Path(p)) for p in sys.argv[1:])
    except PunctkitError as e:
        sys.exit(f"initials.py: {e}")
    rw = [w for u in ref.utterances for w in u.words]
    hw = [w for u in hyp.utterances for w in u.words]
    if [w.lower() for w in rw] != [w.lower() for w in hw]:
        sys.exit("initials.py: the two directories do not hold the same words")
    for name, pat in CLASSES.items():
        idx = [i for i, w in enumerate(rw) if pat.fullmatch(w)]
        same = sum(rw[i] == hw[i] for i in idx)
        upper = [i for i in idx if rw[i] == rw[i].upper()]
        print(f"{name}: {len(idx)} in the reference, {same} written the same"
              f" ({len(upper)} in capitals there, {sum(rw[i] == hw[i] for i in upper)} of them the same)")


if __name__ == "__main__":
    main()
