#!/usr/bin/env python3
"""Capitals inside sentences (both the reference's and the decode's previous mark not a sentence end) that the
reference writes and a decode misses or adds, counted by the package's case prior share of the word (how often
the training text writes it with a capital inside sentences; unk: too rare to be in the prior).

    python local/case_misses_by_prior.py PACKAGE DECODE_ROOT SET...     (DECODE_ROOT/SET: `punctkit decode` output)
"""
import collections
import pathlib
import sys
import tempfile
import zipfile

from punctkit.data.case_prior import CasePrior
from punctkit.data.datadir import read_data_dir
from punctkit.data.labels import SENTENCE_END, case_of, mark_of

package, root, sets = sys.argv[1], pathlib.Path(sys.argv[2]), sys.argv[3:]
tmp = pathlib.Path(tempfile.mkdtemp())
(tmp / "p.txt").write_bytes(zipfile.ZipFile(package).read("frontend/case_prior.txt"))
prior = CasePrior.read(tmp / "p.txt")
for x in sets:
    ref, hyp = read_data_dir(f"data/{x}"), read_data_dir(root / x)
    H = {u.uttid: u for u in hyp.utterances}
    miss, add, tot = collections.Counter(), collections.Counter(), collections.Counter()
    ex = collections.defaultdict(collections.Counter)
    for u in ref.utterances:
        h = H[u.uttid]
        pr = ph = "PERIOD"
        for w, lr, lh in zip(u.words, u.labels, h.labels):
            if mark_of(pr) not in SENTENCE_END and mark_of(ph) not in SENTENCE_END and w.isalpha():
                cr, ch = case_of(lr), case_of(lh)
                s = prior.capital_share(w.lower())
                b = "unk" if s is None else ("<.1" if s < .1 else "<.5" if s < .5 else "<.9" if s < .9 else ">=.9")
                if cr == "C":
                    tot[b] += 1
                if cr == "C" and ch == "L":
                    miss[b] += 1
                    ex[b][w] += 1
                if cr == "L" and ch == "C":
                    add[b] += 1
            pr, ph = lr, lh
    print(x, "capitals inside sentences by share:", dict(tot))
    print("  missed:", dict(miss))
    print("  added:", dict(add))
    for b in ex:
        print("   ", b, ex[b].most_common(12))
