"""The generated corpus behind tests/fixtures/legacy (files written by an older punctkit).

The text is made here from a tiny grammar (no third-party text is committed); the same
seed gives the same words, so a test can rebuild the data a legacy model was trained on.
"""
from __future__ import annotations

import random
from pathlib import Path

LEGACY = Path(__file__).resolve().parent / "fixtures" / "legacy"

SUBJECTS = ["the cat", "a dog", "my friend", "the teacher", "our neighbour", "this student", "the old man",
            "a small child", "her brother", "the doctor"]
VERBS = {"sees": "see", "likes": "like", "finds": "find", "helps": "help", "calls": "call", "visits": "visit",
         "knows": "know", "follows": "follow", "meets": "meet", "watches": "watch"}
OBJECTS = ["the house", "a garden", "the river", "an apple", "the market", "a letter", "the station",
           "a bicycle", "the window", "a song"]
TAILS = ["today", "in the morning", "every day", "at night", "with care", "again"]
STARTS = ["well", "so", "yes", "now", "then"]
QUESTION = ["does", "did", "can", "will"]


def sentence(rng: random.Random) -> list[tuple[str, str]]:
    """One sentence as (word, label) pairs (labels of the 4class inventory)."""
    words: list[tuple[str, str]] = []
    if rng.random() < 0.3:
        words.append((rng.choice(STARTS), "COMMA"))
    subj, obj = rng.choice(SUBJECTS).split(), rng.choice(OBJECTS).split()
    if rng.random() < 0.25:
        body = [rng.choice(QUESTION)] + subj + [VERBS[rng.choice(list(VERBS))]] + obj
        end = "QUESTION"
    else:
        body = subj + [rng.choice(list(VERBS))] + obj
        if rng.random() < 0.4:
            body += rng.choice(TAILS).split()
        if rng.random() < 0.3:  # a second clause after a comma
            words += [(w, "O") for w in body[:-1]] + [(body[-1], "COMMA")]
            body = ["and"] + rng.choice(SUBJECTS).split() + [rng.choice(list(VERBS))] + rng.choice(OBJECTS).split()
        end = "PERIOD"
    words += [(w, "O") for w in body[:-1]] + [(body[-1], end)]
    return words


def write_corpus(path: Path, n_words: int, seed: int) -> Path:
    """About `n_words` words of generated sentences in the two-column `word<TAB>LABEL` format."""
    rng = random.Random(seed)
    lines: list[str] = []
    while len(lines) < n_words:
        lines += [f"{w}\t{lab}" for w, lab in sentence(rng)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def prepare_data(d: Path) -> tuple[Path, Path]:
    """d/train and d/valid: the data dirs the legacy models were trained on (make_legacy.py)."""
    from punctkit.data.prepare import prepare

    prepare([write_corpus(d / "train.twocol", 3000, seed=1)], d / "train", block_len=100)
    prepare([write_corpus(d / "valid.twocol", 500, seed=3)], d / "valid", block_len=100)
    return d / "train", d / "valid"
