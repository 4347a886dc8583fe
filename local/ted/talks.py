#!/usr/bin/env python3
"""The TED talks as the recipe uses them: held-out and training lists by talk, and Kaldi-safe ids.

    python local/talks.py lists $TED/talks local/lists     # valid_case, train_1m, train_2m, train_all
    python local/talks.py scp local/lists/train_1m.txt $TED/talks [--max-talks N] > data/train_1m.scp

`lists`: the talk files in a seeded shuffle (`--seed`, default 1), cut by cumulative word count:
the first talks, up to `--valid-words` (100,000) words, are `valid_case.txt` (the true-case valid
set, held out by talk); the rest, in the same order, are the training talks, and `train_1m.txt`,
`train_2m.txt` (the size of IWSLT's train2012, 2.1M words) and `train_all.txt` are nested prefixes
of them. A talk's words here are its whitespace-separated tokens holding a letter or a digit, as
published (before preparation). Each list is file names, one a line, in the shuffled order; the
same talks and seed always give the same lists.

`scp`: `id path` lines (sorted by id) for `punctkit prepare --file-list`: the first `--max-talks`
talks of a list (all by default) and each one's id, `talk_id` of its file name: ASCII letters,
digits and `_` only, so Kaldi's files and sorting take it (312 names hold an apostrophe).
"""
from __future__ import annotations

import argparse
import random
import re
import sys
import unicodedata
from itertools import accumulate
from pathlib import Path

from punctkit.files import PunctkitError, iter_lines, write_lines

SUBSETS = (("train_1m", 1_000_000), ("train_2m", 2_100_000))  # nested training subsets: (name, words)
VALID = "valid_case"
WORD = re.compile(r"\S*[^\W_]\S*")  # a whitespace-separated token holding a letter or a digit


def talk_id(name: str) -> str:
    """The Kaldi-safe id of a talk file: its name without `.md`, accents folded to ASCII, apostrophes
    dropped and every other run of characters but letters and digits made one `_`."""
    stem = name[:-3] if name.endswith(".md") else name
    ascii_name = unicodedata.normalize("NFKD", stem).encode("ascii", "ignore").decode()
    return re.sub(r"[^A-Za-z0-9]+", "_", ascii_name.replace("'", "")).strip("_") or "talk"


def count_words(path: Path) -> int:
    """The words of a talk as published: whitespace-separated tokens holding a letter or a digit."""
    return len(WORD.findall("\n".join(line for _, line in iter_lines(path))))


def make_lists(talks: Path, seed: int = 1, valid_words: int = 100_000,
               subsets: tuple[tuple[str, int], ...] = SUBSETS) -> dict[str, list[str]]:
    """{list name: talk file names} (see the module's docstring): valid_case, then the training
    talks' shortest prefixes of at least each of `subsets`' word counts, then train_all."""
    names = sorted(p.name for p in talks.glob("*.md"))
    if not names:
        raise PunctkitError(f"{talks}: no talk files (*.md)")
    random.Random(seed).shuffle(names)
    lists: dict[str, list[str]] = {VALID: []}
    total, k = 0, 0
    while k < len(names) and total < valid_words:
        total += count_words(talks / names[k])
        lists[VALID].append(names[k])
        k += 1
    train = names[k:]
    cumulative = list(accumulate(count_words(talks / n) for n in train))
    for name, words in subsets:
        n = next((i + 1 for i, c in enumerate(cumulative) if c >= words), len(train))
        lists[name] = train[:n]
    lists["train_all"] = train
    return lists


def scp_lines(list_file: Path, talks: Path, max_talks: int = 0) -> list[str]:
    """`id path` lines of a list's talks (the first `max_talks`, or all), sorted by id; a talk that
    is not in `talks`, or two talks with one id, is an error naming the list's line."""
    rows: dict[str, str] = {}
    for i, line in iter_lines(list_file):
        name = line.strip()
        if not name:
            continue
        if 0 < max_talks <= len(rows):
            break
        path = talks / name
        if not path.is_file():
            raise PunctkitError(f"{list_file}:{i}: {name}: not in {talks}")
        uid = talk_id(name)
        if uid in rows:
            raise PunctkitError(f"{list_file}:{i}: {name} has the id '{uid}' of {Path(rows[uid]).name}")
        rows[uid] = str(path)
    return [f"{uid} {rows[uid]}" for uid in sorted(rows)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    a_lists = sub.add_parser("lists", help="write the valid and training lists")
    a_lists.add_argument("talks", type=Path, help="the folder of talk files ($TED/talks)")
    a_lists.add_argument("out", type=Path, help="the folder for the lists (local/lists)")
    a_lists.add_argument("--seed", type=int, default=1)
    a_lists.add_argument("--valid-words", type=int, default=100_000)
    a_scp = sub.add_parser("scp", help="print a list's `id path` lines for punctkit prepare --file-list")
    a_scp.add_argument("list", type=Path)
    a_scp.add_argument("talks", type=Path)
    a_scp.add_argument("--max-talks", type=int, default=0, help="only the first N talks (0: all)")
    a = ap.parse_args()
    if (a.max_talks if a.cmd == "scp" else a.valid_words) < 0:
        ap.error("--max-talks and --valid-words must be 0 or more")
    try:
        if a.cmd == "lists":
            for name, files in make_lists(a.talks, a.seed, a.valid_words).items():
                write_lines(a.out / f"{name}.txt", files)
                print(f"{a.out / name}.txt: {len(files)} talks", file=sys.stderr)
        else:
            print("\n".join(scp_lines(a.list, a.talks, a.max_talks)))
    except PunctkitError as e:
        print(f"talks.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
