#!/usr/bin/env python3
"""The Earnings-22 calls as the recipe uses them: train, valid and test lists by call, and scp files.

    python local/calls.py lists $CALLS local/lists     # calls_train, calls_valid, calls_test
    python local/calls.py scp local/lists/calls_valid.txt $CALLS [--max-calls N] > data/local/calls_valid.scp

`lists`: the calls of `$CALLS/metadata.csv` grouped by its column "Language Family + Area Based"
(the accent regions: Spanish/Portuguese, Asian, English, ...), each group in a seeded shuffle
(`--seed`, default 1). Valid and test each take `--held-out` calls (10), shared out over the groups
in proportion to their sizes (largest remainders), valid first, then test, from the front of each
group's shuffled order; the rest (about 105) are `calls_train.txt`. Each list is the calls' File
IDs, one a line; the same metadata and seed always give the same lists.

`scp`: `id path` lines (sorted by id) for `punctkit prepare --file-list --from nlp`: the first
`--max-calls` calls of a list (all by default), each call's id its File ID with every run of
characters but ASCII letters and digits made one `_`, and its path `$CALLS/calls/<File ID>.aligned.nlp`.
"""
from __future__ import annotations

import argparse
import csv
import random
import re
import sys
from pathlib import Path

from punctkit.files import PunctkitError, iter_lines, write_lines

GROUP = "Language Family + Area Based"
LISTS = ("calls_train", "calls_valid", "calls_test")


def read_metadata(calls: Path) -> dict[str, list[str]]:
    """{group: File IDs, sorted} of `calls/metadata.csv`."""
    path = calls / "metadata.csv"
    if not path.is_file():
        raise PunctkitError(f"{path}: not found (CALLS should point at the earnings22 folder)")
    groups: dict[str, list[str]] = {}
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            groups.setdefault(row[GROUP], []).append(row["File ID"])
    return {g: sorted(ids) for g, ids in sorted(groups.items())}


def shares(sizes: dict[str, int], total: int) -> dict[str, int]:
    """`total` shared out over groups in proportion to `sizes`, by largest remainders (ties: name)."""
    n = sum(sizes.values())
    exact = {g: total * s / n for g, s in sizes.items()}
    out = {g: int(x) for g, x in exact.items()}
    for g in sorted(exact, key=lambda g: (-(exact[g] - out[g]), g))[:total - sum(out.values())]:
        out[g] += 1
    return out


def make_lists(calls: Path, seed: int = 1, held_out: int = 10) -> dict[str, list[str]]:
    """{list name: File IDs} (see the module's docstring)."""
    groups = read_metadata(calls)
    order = {g: ids[:] for g, ids in groups.items()}
    for g, ids in order.items():
        random.Random(f"{seed}:{g}").shuffle(ids)
    lists: dict[str, list[str]] = {name: [] for name in LISTS}
    valid_n = shares({g: len(ids) for g, ids in order.items()}, held_out)
    for g, ids in order.items():
        lists["calls_valid"] += ids[:valid_n[g]]
        del ids[:valid_n[g]]
    test_n = shares({g: len(ids) for g, ids in order.items()}, held_out)
    for g, ids in order.items():
        lists["calls_test"] += ids[:test_n[g]]
        lists["calls_train"] += ids[test_n[g]:]
    return {name: sorted(ids) for name, ids in lists.items()}


def call_id(file_id: str) -> str:
    """A Kaldi-safe id of a call: ASCII letters and digits, other runs made one `_`."""
    return re.sub(r"[^A-Za-z0-9]+", "_", file_id).strip("_") or "call"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("lists")
    a.add_argument("calls", type=Path)
    a.add_argument("out", type=Path)
    a.add_argument("--seed", type=int, default=1)
    a.add_argument("--held-out", type=int, default=10)
    b = sub.add_parser("scp")
    b.add_argument("list", type=Path)
    b.add_argument("calls", type=Path)
    b.add_argument("--max-calls", type=int, default=0)
    args = ap.parse_args()
    try:
        if args.cmd == "lists":
            args.out.mkdir(parents=True, exist_ok=True)
            for name, ids in make_lists(args.calls, args.seed, args.held_out).items():
                write_lines(args.out / f"{name}.txt", ids)
                print(f"{name}: {len(ids)} calls", file=sys.stderr)
        else:
            ids = [line.strip() for _, line in iter_lines(args.list) if line.strip()]
            if args.max_calls > 0:
                ids = ids[:args.max_calls]
            rows = sorted((call_id(i), args.calls / "calls" / f"{i}.aligned.nlp") for i in ids)
            for cid, path in rows:
                if not path.is_file():
                    raise PunctkitError(f"{args.list}: call {cid}: no such file: {path}")
                print(f"{cid} {path}")
    except PunctkitError as e:
        sys.exit(f"{Path(sys.argv[0]).name}: {e}")


if __name__ == "__main__":
    main()
