"""Punctuated text -> words and the mark after each word, and back.

Training data (`tokens`, `segment`): marks are separated from words, but
word-internal punctuation stays: `don't`, `u.s.`, `3.5`, `1,000`, `e-mail`, `dr.`.
IWSLT-style split contractions (`do n't`, `i 'm`) are words too, and
`split_contraction` makes them from whole words as IWSLT's files have them
(`segment(..., split_contractions=True)`, `prepare --split-contractions`). Quotes,
brackets and other symbols are dropped.

`punctkit punctuate` (`read_passage` here; its output shown by punctkit/infer/render.py) never
changes a word: see "pass-through text" below.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from sys import intern
from typing import Iterable

from punctkit.data.contractions import SPLIT_CONTRACTIONS, split_contraction  # noqa: F401 (re-exported)
from punctkit.data.labels import (
    MARK_TEXT,
    SENTENCE_END,
    LabelSet,
    O,
    Substitution,
    capitalise,
    case_of,
    mark_of,
)


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
# Titles before a name (lower-case keys): their dot ends no sentence (`Mr. Smith`), and no subtitle cue ends on one.
TITLES = frozenset("mr. mrs. ms. mx. dr. prof. rev. hon. sen. rep. gov. gen. col. capt. lt. sgt. messrs.".split())


def is_title(shown: str) -> bool:
    """Whether a word as shown (leading quotes and brackets allowed) is a title with its dot (`Mr.`, `(Dr.`):
    `TITLES`."""
    return shown.lstrip(OPENERS).lower() in TITLES


_TOKEN = re.compile(
    r"""
    (?P<num>\d+(?:[.,:/]\d+)+)                      # 3.5  1,000  10:30  9/11
  | (?P<clitic>(?<![\w'’])['’](?i:s|re|ve|ll|d|m|t|em)\b)  # 's 're 'S ... (split contractions)
  | (?P<word>\w+(?:['’.\-&]\w+)*)                   # don't  u.s  e-mail  n't  AT&T  q&a
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


def iwslt_tokens(words: Iterable[str]) -> bool:
    """Whether text's words are IWSLT's tokens: its contractions split off (`n't`, `'s`, `'m`, ... as
    words of their own) at least as often as left whole (`don't`)."""
    split = whole = 0
    for w in words:
        if w.lower().replace("’", "'") in SPLIT_CONTRACTIONS:
            split += 1
        elif len(split_contraction(w)) > 1:
            whole += 1
    return split > 0 and split >= whole


def split_tokens(toks: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """`tokens`' output with each word's contraction split off (`split_contraction`)."""
    return [(kind, piece) for kind, tok in toks
            for piece in (split_contraction(tok) if kind == "w" else (tok,))]


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


def segment(text: str, inventory: LabelSet, rules: Substitution, lowercase: bool = False,
            split_contractions: bool = False) -> Segmented:
    """Words and the label of each (first kept mark after a word wins; case from the word);
    `split_contractions`: IWSLT's tokens (`do n't`: `split_contraction`)."""
    toks = tokens(text)
    return label_tokens(split_tokens(toks) if split_contractions else toks, inventory, rules, lowercase)


def label_tokens(toks: Iterable[tuple[str, str]], inventory: LabelSet, rules: Substitution,
                 lowercase: bool = False) -> Segmented:
    """`segment` of tokens (`tokens`' kinds): each word labelled with the first kept mark after it
    and its case; tokens of several lines make one stream (a line's first marks end the line before)."""
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

    for kind, tok in toks:
        if kind == "w":
            close()
            seg.words.append(tok)
            seg.marks.append(O)
        elif kind == "m":
            pending.extend(list(tok) if tok[0] in "?!" else [tok])
        else:
            seg.dropped_symbols += 1
    close()
    labels = [intern(inventory.label_for(w, mk)) for w, mk in zip(seg.words, seg.marks)]
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
            w = capitalise(w)
        elif case == "L":
            w = w.lower()
        elif capitalize and ((start and not glue) or w.lower() == "i" or w.lower()[:2] == "i'"):
            w = capitalise(w)
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



# ---------------------------------------------------------------- pass-through text (punctuate)
#
# `punctkit punctuate` writes back the words it was given. Its input is split on
# white space other than the spaces that hold a word together (`split_words`: no-break
# spaces, `10\u00a0km`, and the ideographic space); a token made of marks only (`,` `...` `--`) gives its mark to the
# token before; any other token is a word, written back as it came: leading
# quotes/brackets, the word itself, then closing quotes/brackets, with only the
# marks at its end (`,.?!;:…`) replaced by the label's. The model reads one word
# per token: the word `segment` finds in it (`hello,"` -> `hello`, `$5` -> `5`),
# or, when it finds none or several (a URL, an e-mail address, an emoji), the
# token itself lower-cased, which a word vocabulary reads as `<unk>`. A token that is
# not a word (`passes_through`: a recognizer's tag, a dash between words) is given to no
# model and takes no label: it stays in its place (`NonWord`; docs/formats.md, "Tokens
# that are not words").

# Spaces that hold a word together: no-break (U+00A0; U+2007 figure space; U+202F narrow no-break, as
# in `100\u202f%`) and the ideographic space U+3000. Every other white space (str.split's) separates
# words; a token holding one of these is one word, given back as it came.
JOINING_SPACES = "\u00a0\u2007\u202f\u3000"
_SEPARATOR = re.compile(f"[^\\S{JOINING_SPACES}]+")
_EDGES = re.compile(f"^[^\\S{JOINING_SPACES}]+|[^\\S{JOINING_SPACES}]+$")
_LEAD = re.compile(f"^[^\\S{JOINING_SPACES}]+")
_JOINING = re.compile(f"[{JOINING_SPACES}]")


def split_words(text: str, maxsplit: int = -1) -> list[str]:
    """The input words of `text`: split as `str.split()` splits, but never at a space that holds a word
    together (JOINING_SPACES: `10\u00a0km` is one word); with `maxsplit`, at most that many splits (the
    rest as it is, as str.split gives it); a token of such spaces only is no word. The one splitter of
    punctuate's readers."""
    if _JOINING.search(text) is None:
        return text.split(None, maxsplit)
    text = _EDGES.sub("", text) if maxsplit < 0 else _LEAD.sub("", text)
    if not text:
        return []
    if maxsplit == 0:
        return [text]
    out = _SEPARATOR.split(text, maxsplit=max(maxsplit, 0))  # re: 0 splits everywhere
    if maxsplit < 0:
        return [t for t in out if not t.isspace()]
    return out[:-1] if not out[-1] else out  # nothing after the last split: no word


def strip_space(text: str) -> str:
    """`text` without the separating white space at its ends (`str.strip()`, keeping JOINING_SPACES; but
    white space only is nothing)."""
    return text.strip() if _JOINING.search(text) is None or text.isspace() else _EDGES.sub("", text)


OPENERS = "\"'“‘„«‹([{¿¡"
CLOSERS = "\"'”’»›)]}"
TRAILING_MARKS = ",.?!;:…"
# Letters with inner periods (`ph.d`, `u.s.a`): the period after them is theirs too.
_DOTTED = re.compile(r"[^\W\d_]{1,3}(?:\.[^\W\d_]{1,3})+")
# A word whose case punctuate may change (docs/formats.md, "Case"):
# - letters, with inner ' . - & / (`don't`, `u.s.`, `e-mail`, `'s`, `q&a`, `and/or`: `And/or` where it begins a
#   sentence);
# - letters and digits, joined by `-`, with a letter before the first `-` (`q3`, `5g`, `mp3s`, `covid-19`,
#   `covid-19's`, `1st`; never `2-year-old`, `3.5mm`, `www.a.org/3`: numbers, addresses and paths pass through);
# - either, ending in the `-` of a false start (`so-`, `th-`, `it's-`, `q3-`): cased by its letters, the `-` kept.
_RECASABLE = re.compile(r"(?:['’]?[^\W\d_]+(?:['’.\-&/][^\W\d_]+)*\.?"
                        r"|(?=[^\W_]*[^\W\d_])[^\W_]+(?:-[^\W_]+)*(?:['’][^\W\d_]+)?)-?")


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
        """Whether the core is a word whose case may change (`_RECASABLE`: letters, letters and digits, a false
        start); never URLs, numbers, symbols."""
        return _RECASABLE.fullmatch(self.core) is not None


def recasable(token: str) -> bool:
    """Whether punctuate may change a whitespace-free token's case: its core (what is left without
    leading and closing marks) is words (`_RECASABLE`: `well`, `q3`, `so-`); URLs, numbers, symbols pass through
    (`/seg`, `@user`)."""
    return written(token, model_word(token)).recasable


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


# Tokens that are not words, the one rule of every reader (docs/formats.md, "Tokens that are not words"):
# - a recognizer's or transcriber's tag: one token wholly in angle brackets (`<unk>`, `<sil>`, `<s>`, `</s>`,
#   `<inaudible>`, `<laugh>`), in square brackets (`[noise]`, `[laughter]`, `[NOISE]`, `[Music]`) or between
#   `++` (`++UM++`, `++NOISE++`), holding a letter (`[1]` and `<3` are no tags);
# - a dash standing alone (`-`, `--`, `—`, `–`): it belongs to no word, and no label can write it back.
NON_SPEECH = re.compile(r"<[^\s<>]*[^\W\d][^\s<>]*>|\[[^\s\[\]]*[^\W\d][^\s\[\]]*\]|\+\+[^\s+]*[^\W\d][^\s+]*\+\+")
DASHES = re.compile(r"[-\u2010-\u2015]+")


def non_speech(token: str) -> bool:
    """Whether a whitespace-free token is a recognizer's or transcriber's tag (NON_SPEECH: `<unk>`, `[noise]`,
    `++UM++`), no speech."""
    return NON_SPEECH.fullmatch(token) is not None


def passes_through(token: str) -> bool:
    """Whether a whitespace-free token is not a word but passes through punctuate in its place: a tag
    (`non_speech`) or a lone dash (`-`, `--`, `—`). The model never reads it, it takes no label and
    the words around it are labelled as if it were not there."""
    return non_speech(token) or DASHES.fullmatch(token) is not None


@dataclass(frozen=True)
class NonWord:
    """A token that is not a word (`passes_through`), where it stood: after the unit's first `at` words,
    with the input's record of it (a CTM line's fields, a JSON item; None for text)."""

    at: int
    token: str
    record: object = None


@dataclass
class Passage:
    """Words of a text for the model, the input mark (label mark) after each, how each was written, and
    the tokens that are not words (`NonWord`s, in order)."""

    words: list[str]
    marks: list[str]
    written: list[Written]
    tags: list[NonWord] = field(default_factory=list)


def mark_after(raw: str, inventory: LabelSet, rules: Substitution) -> str:
    """The label mark (O for none) that the mark text `raw` gives the word before it."""
    if not raw.strip():
        return O
    seg = segment("x " + raw, inventory, rules)
    return mark_of(seg.marks[0]) if seg.marks else O


def read_passage(toks: list[str], inventory: LabelSet, rules: Substitution) -> Passage:
    """The words of whitespace-free tokens in order (mark-only tokens mark the word before;
    before any word they are dropped); tokens that are not words (`passes_through`) in `tags`."""
    out = Passage([], [], [])
    raw: list[str] = []  # the mark text after the last word

    def close() -> None:
        if out.words:
            out.marks[-1] = mark_after(" ".join(raw), inventory, rules)
        raw.clear()

    for tok in toks:
        if not tok:
            continue
        if passes_through(tok):
            out.tags.append(NonWord(len(out.words), tok))
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


def unmarked(w: Written, shown: str) -> str:
    """`w` as the input gave it, without the marks at its end (an output gives its mark elsewhere: the
    label column of twocol, its own token), its core in the case `shown` (`Renderer.show`'s text of
    `w`) shows it in: lead, core, closing quotes and brackets (`"Hello"` for `"hello,"` shown
    `"Hello."`); anything else as it came."""
    tail = w.close[w.at:]
    if not (shown.startswith(w.lead) and shown.endswith(tail)) or len(shown) < len(w.lead) + len(tail):
        return as_written(w)
    mid = shown[len(w.lead):len(shown) - len(tail)]  # the core as shown + close[:at] + the mark's text
    fold = w.core.casefold()
    for k in dict.fromkeys((len(w.core), *range(len(mid), -1, -1))):  # the core's own length first
        core, rest = mid[:k], mid[k:]
        if (core.casefold() == fold and rest.startswith(w.close[:w.at])
                and all(c in TRAILING_MARKS or c == "-" for c in rest[w.at:])):
            return w.lead + core + w.close
    return as_written(w)


def shown_mark(w: Written, mark: str, keep: bool) -> str:
    """The text of the mark after `w`: the input's own when kept, never doubling a word's final period."""
    if mark == O:
        return ""
    if keep and w.marks:
        return w.marks
    text = MARK_TEXT[mark]
    if w.core.endswith(".") and not w.close[:w.at] and text.startswith("."):
        return text[1:]  # `u.s.` + PERIOD -> `u.s.`; `(u.s.)` + PERIOD -> `(u.s.).`
    return text


def column_mark(w: Written, shown: str, label: str) -> str:
    """The text of `label`'s mark after `w` where an output holds it in a column of its own (NLP's
    `punctuation`): the input's own mark text where `shown` (`Renderer.show`'s text of `w`) kept it (`?!`),
    else the mark's whole text, also where the word's own period stands for it in text (`U.S.` + PERIOD:
    `.`, which `shown_mark` leaves out of `U.S.`)."""
    mk = mark_of(label)
    if mk == O:
        return ""
    tail = w.close[w.at:]
    own = shown_mark(w, mk, False)
    if w.marks and w.marks != own and shown.endswith(w.marks + tail) and not (own and shown.endswith(own + tail)):
        return w.marks
    return MARK_TEXT[mk]


def as_written(w: Written) -> str:
    """`w` as the input gave it, without the marks at its end (`unmarked` with its own case)."""
    return w.lead + w.core + w.close
