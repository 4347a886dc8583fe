"""Punctuated text -> words and the mark after each word, and back.

Marks are separated from words, but word-internal punctuation stays: `don't`,
`u.s.`, `3.5`, `1,000`, `e-mail`, `dr.`. IWSLT-style split contractions
(`do n't`, `i 'm`) are words too. Quotes, brackets and other symbols are dropped.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from punctkit.data.labels import O, MARK_TEXT, SENTENCE_END, LabelSet, Substitution, case_of, mark_of

# Abbreviations whose final period belongs to the word (lower-case keys).
ABBREVIATIONS = frozenset(
    "dr. mr. mrs. ms. prof. st. jr. sr. vs. mt. e.g. i.e. a.m. p.m. u.s. u.k. u.n.".split()
)

_TOKEN = re.compile(
    r"""
    (?P<num>\d+(?:[.,:/]\d+)+)                      # 3.5  1,000  10:30  9/11
  | (?P<clitic>(?<![\w'’])['’](?:s|re|ve|ll|d|m|t|em)\b)  # 's 're ... (split contractions)
  | (?P<word>\w+(?:['’.\-]\w+)*)                    # don't  u.s  e-mail  n't
  | (?P<mark>\.\.\.+|…|[?!]+|[.,;:]|--+|—|–|(?<=\s)-(?=\s))
  | (?P<other>\S)                                   # quotes, brackets, symbols: dropped
    """,
    re.VERBOSE,
)
_INITIALS = re.compile(r"^(?:\w\.)+\w$")  # u.s -> u.s.


@dataclass
class Segmented:
    """Words of one text with the label mark after each, plus what was dropped."""

    words: list[str]
    marks: list[str]
    dropped_marks: int = 0  # marks removed by the rules, after another mark, or before any word
    dropped_symbols: int = 0  # quotes, brackets and other non-word symbols


def tokens(text: str) -> list[tuple[str, str]]:
    """Split text into ('w', word) and ('m', mark-text) tokens; other symbols are ('x', sym)."""
    out: list[tuple[str, str]] = []
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        tok = m.group()
        if kind in ("num", "clitic", "word"):
            tok = tok.replace("’", "'")
            end = m.end()
            if kind == "word" and text[end:end + 1] == "." and not text[end + 1:end + 2].isalnum():
                if (tok.lower() + ".") in ABBREVIATIONS or _INITIALS.match(tok):
                    tok += "."  # the period belongs to the abbreviation
            out.append(("w", tok))
        elif kind == "mark":
            out.append(("m", _normalise_mark(tok)))
        else:
            out.append(("x", tok))
    return _absorb_abbreviation_periods(out)


def _normalise_mark(tok: str) -> str:
    if tok.startswith("..") or tok == "…":
        return "..."
    if tok[0] in "?!":
        return tok  # "?!" kept whole here; split into marks by segment()
    if tok in ("—", "–") or tok.startswith("--"):
        return "-"
    return tok


def _absorb_abbreviation_periods(toks: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Drop the '.' mark token that immediately follows a word we extended with its period."""
    out: list[tuple[str, str]] = []
    skip = False
    for i, t in enumerate(toks):
        if skip:
            skip = False
            if t == ("m", "."):
                continue
        out.append(t)
        if t[0] == "w" and t[1].endswith(".") and i + 1 < len(toks) and toks[i + 1] == ("m", "."):
            skip = True
    return out


def segment(text: str, inventory: LabelSet, rules: Substitution, lowercase: bool = False) -> Segmented:
    """Words and the label of each (first kept mark after a word wins; case from the word)."""
    seg = Segmented([], [])
    pending: list[str] = []  # raw marks seen since the last word

    def close() -> None:
        kept = [t for t in (rules.apply(p, inventory) for p in pending) if t is not None]
        if seg.words:
            seg.marks[-1] = kept[0] if kept else O
            seg.dropped_marks += len(pending) - min(len(kept), 1)
        else:
            seg.dropped_marks += len(pending)
        pending.clear()

    for kind, tok in tokens(text):
        if kind == "w":
            close()
            seg.words.append(tok)
            seg.marks.append(O)
        elif kind == "m":
            pending.extend(list(tok) if tok[0] in "?!" else [tok])
        else:
            seg.dropped_symbols += 1
    close()
    labels = [inventory.make(mk, w[:1].isupper()) for w, mk in zip(seg.words, seg.marks)]
    words = [w.lower() for w in seg.words] if lowercase or inventory.case_aware else seg.words
    return Segmented(words, labels, seg.dropped_marks, seg.dropped_symbols)


def join_marked(words: list[str], labels: list[str]) -> str:
    """Plain punctuated text, tokens kept as they are (`do n't ,` stays split): round-trip safe.

    Case-aware labels capitalise their word (U) or lower-case it (L).
    """
    out = []
    for w, lab in zip(words, labels):
        case = case_of(lab)
        if case == "U":
            w = w[:1].upper() + w[1:]
        elif case == "L":
            w = w.lower()
        mk = mark_of(lab)
        out.append(w if mk == O else w + MARK_TEXT[mk])
    return " ".join(out)


# ---------------------------------------------------------------- readable text (detokenize)


# IWSLT-style split contractions, glued back to the word before them (`do n't` -> `don't`).
CLITICS = frozenset({"n't", "'s", "'re", "'ve", "'ll", "'d", "'m", "'em"})


def _capitalise(word: str) -> str:
    return word[:1].upper() + word[1:]


def display_words(words: list[str], labels: list[str], capitalize: bool = True,
                  sentence_start: bool = True) -> tuple[list[str], list[bool]]:
    """Each word as it is shown (cased, its mark appended) and whether it is glued to the word before.

    Case-aware labels decide the case (U: capitalised, L: lower-case); otherwise,
    with `capitalize`, the first word of each sentence (after `.?!` or `...`) and
    the pronoun `I` (`i`, `i'm`, ...) are capitalised. `sentence_start` says whether
    `words[0]` begins a sentence (False when continuing earlier text).
    """
    shown: list[str] = []
    glued: list[bool] = []
    start, prev_mark = sentence_start, None
    for w, lab in zip(words, labels):
        mk, case = mark_of(lab), case_of(lab)
        glue = prev_mark == O and w.lower() in CLITICS
        if case == "U":
            w = _capitalise(w)
        elif case == "L":
            w = w.lower()
        elif capitalize and ((start and not glue) or w.lower() == "i" or w.lower()[:2] == "i'"):
            w = _capitalise(w)
        shown.append(w if mk == O else w + MARK_TEXT[mk])
        glued.append(glue)
        if mk != O:
            start = mk in SENTENCE_END
        elif not glue:
            start = False
        prev_mark = mk
    return shown, glued


def detokenize(words: list[str], labels: list[str], capitalize: bool = True, sentence_start: bool = True) -> str:
    """Readable punctuated text: marks glued to their word with one space after, none before;
    IWSLT splits undone (`do n't` -> `don't`, `i 'm` -> `I'm`); casing as in `display_words`."""
    shown, glued = display_words(words, labels, capitalize, sentence_start)
    out: list[str] = []
    for s, g in zip(shown, glued):
        if g and out:
            out[-1] += s
        else:
            out.append(s)
    return " ".join(out)


def ends_sentence(labels: list[str], before: bool = True) -> bool:
    """Whether text ending with `labels` ends a sentence (`before`: the answer for no labels)."""
    return mark_of(labels[-1]) in SENTENCE_END if labels else before

