"""Punctuated text -> words and the mark after each word, and back.

Training data (`tokens`, `segment`): marks are separated from words, but
word-internal punctuation stays: `don't`, `u.s.`, `3.5`, `1,000`, `e-mail`, `dr.`.
IWSLT-style split contractions (`do n't`, `i 'm`) are words too. Quotes,
brackets and other symbols are dropped.

`punctkit punctuate` (`read_passage`, `show_tokens`) never changes a word: see
"pass-through text" below.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from punctkit.data.labels import O, MARK_TEXT, SENTENCE_END, LabelSet, Substitution, case_of, mark_of


def model_lowercase(inventory: LabelSet) -> bool:
    """Whether readers lower-case the words of text read into `inventory`: case4/case6 data holds
    lower-cased words (the case is in the labels); true-case data keeps each word's exact form (its
    Mixed forms make the case lexicon, and exact-form case scoring compares them), and the model
    reads it lower-cased through its frontend."""
    return inventory.case_aware and not inventory.true_case

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
    labels = [inventory.label_for(w, mk) for w, mk in zip(seg.words, seg.marks)]
    words = [w.lower() for w in seg.words] if lowercase or model_lowercase(inventory) else seg.words
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



# ---------------------------------------------------------------- pass-through text (punctuate)
#
# `punctkit punctuate` writes back the words it was given. Its input is split on
# whitespace; a token made of marks only (`,` `...` `--`) gives its mark to the
# token before; any other token is a word, written back as it came: leading
# quotes/brackets, the word itself, then closing quotes/brackets, with only the
# marks at its end (`,.?!;:…`) replaced by the label's. The model reads one word
# per token: the word `segment` finds in it (`hello,"` -> `hello`, `$5` -> `5`),
# or, when it finds none or several (a URL, an e-mail address, an emoji), the
# token itself lower-cased, which a word vocabulary reads as `<unk>`.

OPENERS = "\"'“‘„«‹([{¿¡"
CLOSERS = "\"'”’»›)]}"
TRAILING_MARKS = ",.?!;:…"
# Letters with inner periods (`ph.d`, `u.s.a`): the period after them is theirs too.
_DOTTED = re.compile(r"[^\W\d_]{1,3}(?:\.[^\W\d_]{1,3})+")
# A word whose case punctuate may change: letters, with inner ' . - (`don't`, `u.s.`, `e-mail`, `'s`).
_RECASABLE = re.compile(r"['’]?[^\W\d_]+(?:['’.\-][^\W\d_]+)*\.?")


@dataclass(frozen=True)
class Written:
    """One input word as written: `lead` + `core` + `close`; the output mark goes at `close[:at]`.

    `marks` is the mark text the input had there (removed from `close`).
    """

    lead: str
    core: str
    close: str = ""
    at: int = 0
    marks: str = ""

    @property
    def recasable(self) -> bool:
        """Whether the core is alphabetic words (its case may change); never URLs, numbers, symbols."""
        return _RECASABLE.fullmatch(self.core) is not None


def is_mark_token(token: str) -> bool:
    """Whether a whitespace-free token is punctuation only (`,` `...` `?!` `--` `—`)."""
    if any(c.isalnum() for c in token):
        return False
    toks = tokens(f" {token} ")
    return bool(toks) and all(kind == "m" for kind, _ in toks)


def model_word(token: str) -> str:
    """The word the model reads for one input token: `segment`'s single word, lower-cased
    (as in training data), or else the token lower-cased (unknown to a word vocabulary)."""
    words = [w for kind, w in tokens(token) if kind == "w"]
    return words[0].lower() if len(words) == 1 else token.lower().replace("’", "'")


def written(token: str, word: str) -> Written:
    """Split a word token into lead, core and close; trailing marks are taken out of close,
    except a period that belongs to the word (`u.s.`, `dr.`: `word` ends with it; `ph.d.`)."""
    end = len(token)
    while end > 0 and (token[end - 1] in CLOSERS or token[end - 1] in TRAILING_MARKS):
        end -= 1
    start = 0
    if not word.startswith("'"):  # `'s`, `'re`: the apostrophe is the word's
        while start < end and token[start] in OPENERS:
            start += 1
    if start >= end:  # symbols only (`"`, `:)`): all of it is the word
        return Written("", token)
    tail = token[end:]
    if tail.startswith(".") and (word.endswith(".") or _DOTTED.fullmatch(token[start:end])):
        end, tail = end + 1, tail[1:]
    kept = "".join(c for c in tail if c not in TRAILING_MARKS)
    marks = "".join(c for c in tail if c in TRAILING_MARKS)
    at = next((i for i, c in enumerate(tail) if c in TRAILING_MARKS), len(tail))
    return Written(token[:start], token[start:end], kept, at, marks)


@dataclass
class Passage:
    """Words of a text for the model, the input mark (label mark) after each, and how each was written."""

    words: list[str]
    marks: list[str]
    written: list[Written]


def mark_after(raw: str, inventory: LabelSet, rules: Substitution) -> str:
    """The label mark (O for none) that the mark text `raw` gives the word before it."""
    if not raw.strip():
        return O
    seg = segment("x " + raw, inventory, rules)
    return mark_of(seg.marks[0]) if seg.marks else O


def read_passage(toks: list[str], inventory: LabelSet, rules: Substitution) -> Passage:
    """The words of whitespace-free tokens in order (mark-only tokens mark the word before;
    before any word they are dropped)."""
    out = Passage([], [], [])
    raw: list[str] = []  # the mark text after the last word

    def close() -> None:
        if out.words:
            out.marks[-1] = mark_after(" ".join(raw), inventory, rules)
        raw.clear()

    for tok in toks:
        if not tok:
            continue
        if is_mark_token(tok):
            raw.append(tok)
            continue
        close()
        word = model_word(tok)
        w = written(tok, word)
        out.words.append(word)
        out.marks.append(O)
        out.written.append(w)
        raw.append(w.marks)
    close()
    return out


def _shown_mark(w: Written, mark: str, keep: bool) -> str:
    """The text of the mark after `w`: the input's own when kept, never doubling a word's final period."""
    if mark == O:
        return ""
    if keep and w.marks:
        return w.marks
    text = MARK_TEXT[mark]
    if w.core.endswith(".") and not w.close[:w.at] and text.startswith("."):
        return text[1:]  # `u.s.` + PERIOD -> `u.s.`; `(u.s.)` + PERIOD -> `(u.s.).`
    return text


def show_tokens(written_words: list[Written], labels: list[str], capitalize: bool = True,
                sentence_start: bool = True, kept: list[str] | None = None) -> list[str]:
    """Each word as written, with the label's mark in place of its input marks.

    Case changes only for recasable words (`Written.recasable`), as in `display_words`:
    lower-cased, then capitalised by a case-aware label's U, else (with `capitalize`) at a
    sentence start and for the pronoun `I`. `kept`: the input marks given to the model as
    fixed (--keep-input-marks); a word whose kept mark was its own is shown with its own text.
    """
    if len(written_words) != len(labels):  # a word without its label would vanish from the output
        raise ValueError(f"{len(written_words)} words, {len(labels)} labels")
    out: list[str] = []
    start = sentence_start
    for k, (w, lab) in enumerate(zip(written_words, labels)):
        mk, case = mark_of(lab), case_of(lab)
        core = w.core
        if w.recasable:
            core = core.lower()
            low = core.replace("’", "'")
            if case == "U" or (case is None and capitalize and (start or low == "i" or low[:2] == "i'")):
                core = _capitalise(core)
            if core.casefold() != w.core.casefold():  # `ı` -> `I` would be another word
                core = w.core
        keep = kept is not None and kept[k] != O and kept[k] == mk
        mark = _shown_mark(w, mk, keep)
        out.append(w.lead + core + w.close[:w.at] + mark + w.close[w.at:])
        if mk != O:
            start = mk in SENTENCE_END
        elif any(c.isalnum() for c in w.core):  # a lone quote or emoji does not begin the sentence
            start = False
    return out


def punctuated_text(written_words: list[Written], labels: list[str], capitalize: bool = True,
                    sentence_start: bool = True, kept: list[str] | None = None) -> str:
    """The words as written, each with its label's mark and case, one space apart (`show_tokens`)."""
    return " ".join(show_tokens(written_words, labels, capitalize, sentence_start, kept))
