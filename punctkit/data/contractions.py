"""The contractions IWSLT's files split off their word (PTB style, as in dev2012 and test2011:
`do n't`, `ca n't`, `wo n't`, `it 's`, `i 'm`, `they 're`, `i 'll`); `'ve` and `'d` stay on it
there (`we've`, `i'd`, `he'd`), and so they do here. One rule for the tokenizer (training text,
users' words for a model trained on such tokens) and for casing (a case class is the stem's:
`TV's` is `TV` + `'s`)."""
from __future__ import annotations

SPLIT_CONTRACTIONS = ("n't", "'s", "'re", "'m", "'ll")
# Every clitic English writes a contraction with, split off or not: `won't` and `wo n't`, `we've` and `we 've`
# are the same words to the scorer's aligner (text/edit_align.py).
CLITICS = (*SPLIT_CONTRACTIONS, "'ve", "'d")


def split_contraction(word: str, clitics: tuple[str, ...] = SPLIT_CONTRACTIONS) -> list[str]:
    """`word` as IWSLT's tokens, its case kept: a final contraction of SPLIT_CONTRACTIONS split off
    (`don't` -> `do n't`, `can't` -> `ca n't`, `won't` -> `wo n't`, `TV's` -> `TV 's`,
    `McDonald's` -> `McDonald 's`); any other word whole (`we've`, `o'clock`, `n't`, `'s`).
    With `clitics=CLITICS`, `'ve` and `'d` too (`we've` -> `we 've`)."""
    if "'" not in word and "’" not in word:  # most words: nothing to split (called per word shown)
        return [word]
    low = word.lower().replace("’", "'")
    for c in clitics:
        if low.endswith(c) and len(low) > len(c):
            return [word[:-len(c)], word[-len(c):]]
    return [word]
