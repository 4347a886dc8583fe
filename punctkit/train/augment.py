"""ASR-robustness augmentation (after xashru/punctuation-restoration): random substitution,
insertion and deletion of words in the training windows, at a rate per operation.

`train.augment: {substitute: 0.05, insert: 0.05, delete: 0.05, token: unk}`. For each word
of a training window, one draw decides (the rates must sum to at most 1):

- substitute (rate `substitute`): the word's token(s) become `token` -- `unk` (the
  frontend's unknown token, xashru's default `sub_style`) or `random` (a random
  vocabulary id other than padding); the word keeps its label;
- insert (rate `insert`): the word stays and one `token` is inserted after it, with
  the no-mark label (index 0: O / L_O) and no teacher row (distillation);
- delete (rate `delete`): the word and its label are dropped, as xashru does (its mark
  is not moved to the previous word: an ASR deletion loses the word's evidence too);
- else the word is kept as it is.

Unlike xashru (per sub-word piece, in the fixed encoded sequence) the draw is per word,
so rates count words and labels stay one per word; a substituted or inserted word is
a single token. Validation and decoding never see it. The draws are seeded by
(`train.seed`, epoch, window), so a resumed run augments as an uninterrupted one.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from punctkit.data.streams import IGNORE
from punctkit.files import PunctkitError, finite_number

KEEP, SUBSTITUTE, INSERT = 0, 1, 2
TOKENS = ("unk", "random")
PLACEHOLDERS = ("a", "the", ",", ".", "x", "i")  # a word one piece long, whose piece is then replaced


@dataclass(frozen=True)
class AugmentOptions:
    """The `train.augment:` section."""

    substitute: float = 0.0
    insert: float = 0.0
    delete: float = 0.0
    token: str = "unk"

    @classmethod
    def from_section(cls, section: dict[str, Any] | None) -> "AugmentOptions | None":
        """The checked options; None when every rate is 0 (off)."""
        section = dict(section or {})
        known = ("substitute", "insert", "delete", "token")
        bad = [k for k in section if k not in known]
        if bad:
            raise PunctkitError(f"train.augment: unknown option(s) {', '.join(bad)} (known: {', '.join(known)})")
        opts = cls(**{k: finite_number(v, "train.augment", k) if k != "token" else str(v) for k, v in section.items()})
        rates = (opts.substitute, opts.insert, opts.delete)
        if any(r < 0 for r in rates) or sum(rates) > 1:
            raise PunctkitError(f"train.augment: rates must be >= 0 and sum to at most 1, got {rates}")
        if opts.token not in TOKENS:
            raise PunctkitError(f"train.augment.token must be one of {', '.join(TOKENS)}, not '{opts.token}'")
        return opts if sum(rates) > 0 else None


def plan(n_words: int, opts: AugmentOptions, rng: np.random.Generator) -> list[tuple[int, int]]:
    """The augmented window as (source word index, KEEP | SUBSTITUTE | INSERT) steps; an
    inserted step has source -1. At least one word is kept."""
    steps: list[tuple[int, int]] = []
    a, b, c = opts.substitute, opts.substitute + opts.insert, opts.substitute + opts.insert + opts.delete
    for i, r in enumerate(rng.random(n_words)):
        if r < a:
            steps.append((i, SUBSTITUTE))
        elif r < b:
            steps += [(i, KEEP), (-1, INSERT)]
        elif r >= c:
            steps.append((i, KEEP))
    if not steps and n_words:
        steps.append((0, KEEP))
    return steps


def one_piece_word(frontend: Any) -> str:
    """A word the frontend encodes as a single token (stands in for a substituted/inserted token)."""
    for w in PLACEHOLDERS:
        if len(frontend.word_ids(w)) == 1:
            return w
    raise PunctkitError(f"train.augment: the '{frontend.kind}' frontend encodes none of "
                        f"{', '.join(PLACEHOLDERS)} as one token")


class Augmenter:
    """`WindowDataset`'s `augment` hook: (frontend, words, labels, soft rows, key) ->
    (token ids, word_pos, labels, soft rows) of the augmented window."""

    def __init__(self, opts: AugmentOptions, seed: int):
        self.opts, self.seed = opts, seed

    def noise_id(self, frontend: Any, rng: np.random.Generator) -> int:
        """The token that replaces or is inserted: unknown, or a random non-padding id."""
        if self.opts.token == "unk":
            return int(frontend.unk_id)
        while True:
            t = int(rng.integers(frontend.vocab_size))
            if t != frontend.pad_id:
                return t

    def __call__(self, frontend: Any, words: list[str], labels: list[int], soft: np.ndarray | None,
                 key: tuple[int, ...]) -> tuple[list[int], list[int], list[int], np.ndarray | None]:
        rng = np.random.default_rng([self.seed, *key])
        steps = plan(len(words), self.opts, rng)
        stand_in = one_piece_word(frontend)
        ids, word_pos = frontend.encode([words[i] if k == KEEP else stand_in for i, k in steps])
        for (_, k), p in zip(steps, word_pos):
            if k != KEEP:
                ids[p] = self.noise_id(frontend, rng)
        new_labels = [labels[i] if k != INSERT else 0 for i, k in steps]
        new_soft = None
        if soft is not None:
            blank = np.full((1, soft.shape[1]), IGNORE, dtype=soft.dtype)
            new_soft = np.concatenate([soft[i:i + 1] if k != INSERT else blank for i, k in steps])
        return ids, word_pos, new_labels, new_soft
