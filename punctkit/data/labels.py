"""Label inventories (4-class, 6-class, case-aware, true-case) and the mark substitution rules.

A label names the punctuation that follows a word: O (none), COMMA, PERIOD, ...
Case-aware inventories prefix the case class of the word itself:
- `case4`/`case6` (Faber 2020 §4.2.1): `L_O`, `U_COMMA`: L = lower-case word, U = capitalised word;
- `truecase4`/`truecase6`: `L_O`, `C_PERIOD`, `U_O`, `M_COMMA`, one of four classes (`case_class`):
  L lower, C Capitalized (first letter upper, the rest lower: "The", "I"), U UPPER (two or more
  letters, all upper: "NASA", "U.S."), M Mixed (any other form: "iPhone", "McDonald"), shown in the
  exact form of a lexicon built from the training text (`CaseLexicon`), else Capitalized.
The case class of a case-aware label is read by `case_of`; what it means by `LabelSet.case_style`.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

from punctkit.data.contractions import split_contraction
from punctkit.files import PunctkitError, read_yaml_mapping

O = "O"
# Every mark punctkit knows, label name -> the text it stands for.
MARK_TEXT: dict[str, str] = {
    "COMMA": ",",
    "PERIOD": ".",
    "QUESTION": "?",
    "EXCLAMATION": "!",
    "DOTS": "...",
    "SEMICOLON": ";",
    "COLON": ":",
    "DASH": "-",
}
TEXT_MARK: dict[str, str] = {v: k for k, v in MARK_TEXT.items()}
# Marks that end a sentence (the next word starts with a capital).
SENTENCE_END = frozenset({"PERIOD", "QUESTION", "EXCLAMATION", "DOTS"})
CASES = ("L", "U")  # Faber's case-aware inventories (case4, case6): lower, capitalised
TRUE_CASES = ("L", "C", "U", "M")  # true-case inventories: lower, Capitalized, UPPER, Mixed
CASE_LETTERS = frozenset(CASES + TRUE_CASES)
# How each class of an inventory shows a word: lower, capital (first letter), upper, mixed (lexicon form)
CASE_STYLES = {CASES: {"L": "lower", "U": "capital"},
               TRUE_CASES: {"L": "lower", "C": "capital", "U": "upper", "M": "mixed"}}


@dataclass(frozen=True)
class LabelSet:
    """An ordered label inventory; index 0 is always the no-mark label."""

    name: str
    marks: tuple[str, ...]
    case_aware: bool = False
    cases: tuple[str, ...] = ()  # the case classes of a case-aware inventory (CASES unless given)
    labels: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        if self.case_aware and not self.cases:
            object.__setattr__(self, "cases", CASES)
        base = (O,) + self.marks
        labels = tuple(f"{c}_{m}" for m in base for c in self.cases) if self.case_aware else base
        object.__setattr__(self, "labels", labels)
        object.__setattr__(self, "_index", {lab: i for i, lab in enumerate(labels)})

    @property
    def true_case(self) -> bool:
        """Whether labels carry the four true-case classes (words keep their exact form in data)."""
        return self.cases == TRUE_CASES

    def case_style(self, case: str | None) -> str | None:
        """What case class `case` does to a word: lower, capital, upper, mixed (None: not case-aware)."""
        return CASE_STYLES[self.cases].get(case or "") if self.case_aware else None

    def __len__(self) -> int:
        return len(self.labels)

    def __contains__(self, label: str) -> bool:
        return label in self._index  # type: ignore[attr-defined]

    def index(self, label: str) -> int:
        """Index of `label`; KeyError if it is not in the inventory."""
        return self._index[label]  # type: ignore[attr-defined]

    def make(self, mark: str, capitalised: bool = False) -> str:
        """The label for a word followed by `mark` (O for none); `capitalised`: C (true case) or U."""
        if not self.case_aware:
            return mark
        return f"{('C' if self.true_case else 'U') if capitalised else 'L'}_{mark}"

    def label_for(self, word: str, mark: str) -> str:
        """The label of `word` (its case class read from its letters) followed by `mark`."""
        if not self.case_aware:
            return mark
        if self.true_case:
            return f"{case_class(word)}_{mark}"
        return self.make(mark, word[:1].isupper())

    def relabel(self, label: str, mark: str) -> str:
        """`label` with its mark replaced by `mark`, its case class kept."""
        case = case_of(label)
        return f"{case}_{mark}" if case and self.case_aware else self.make(mark)


def mark_of(label: str) -> str:
    """The punctuation part of a label: `U_COMMA` -> `COMMA`, `PERIOD` -> `PERIOD`."""
    if len(label) > 2 and label[1] == "_" and label[0] in CASE_LETTERS:
        return label[2:]
    return label


def case_of(label: str) -> str | None:
    """The case part of a case-aware label (`L`, `U`, `C`, `M`), else None."""
    if len(label) > 2 and label[1] == "_" and label[0] in CASE_LETTERS:
        return label[0]
    return None


# ---------------------------------------------------------------- true case

def case_class(word: str) -> str:
    """The true-case class of a word from its letters: L (no upper-case letter), C (the first
    letter upper, every other lower: "The", "I", "A"), U (two or more letters, all upper: "NASA",
    "U.S.", "TV"), M (any other form: "iPhone", "McDonald", "YouTube")."""
    letters = [c for c in word if c.isalpha()]
    if not any(c.isupper() for c in letters):
        return "L"
    if letters[0].isupper() and not any(c.isupper() for c in letters[1:]):
        return "C"
    if len(letters) >= 2 and not any(c.islower() for c in letters):
        return "U"
    return "M"


def capitalise(word: str) -> str:
    """`word` with its first letter upper-cased (a leading quote or digit kept: `'em` -> `'Em`, `5g` -> `5G`)."""
    for i, c in enumerate(word):
        if c.isalpha():
            return word[:i] + c.upper() + word[i + 1:]
    return word


class CaseLexicon:
    """The exact forms of Mixed-case words (class M), keyed by the lower-cased word: "iphone" ->
    "iPhone". Built from training text (the most frequent Mixed form of each word; ties: the
    first seen), saved as `lower<TAB>form` lines; a word it lacks is shown Capitalized."""

    FILE = "case_lexicon.txt"  # its name in a frontend directory (and so in a package)

    def __init__(self, forms: Mapping[str, str] | None = None) -> None:
        self.forms = dict(forms or {})

    def __len__(self) -> int:
        return len(self.forms)

    @classmethod
    def build(cls, words: Iterable[str], min_count: int = 1) -> "CaseLexicon":
        """The lexicon of the Mixed-case words among `words` seen at least `min_count` times."""
        counts: Counter[str] = Counter(w for w in words if case_class(w) == "M")
        best: dict[str, tuple[int, str]] = {}
        for form, n in counts.items():  # Counter keeps first-seen order: ties go to the first form
            key = form.lower()
            if n >= min_count and n > best.get(key, (0, ""))[0]:
                best[key] = (n, form)
        return cls({k: f for k, (_, f) in sorted(best.items())})

    def form(self, word: str) -> str:
        """The Mixed form of `word`, or `word` Capitalized when the lexicon lacks it."""
        found = self.forms.get(word.lower())
        return found if found is not None else capitalise(word.lower())

    def lines(self) -> list[str]:
        return [f"{k}\t{v}" for k, v in self.forms.items()]

    @classmethod
    def parse(cls, lines: Iterable[str], where: str = "case lexicon") -> "CaseLexicon":
        """Read `lower<TAB>form` lines; a malformed line is a one-line error naming it."""
        forms: dict[str, str] = {}
        for i, line in enumerate(lines, 1):
            if not line.strip():
                continue
            key, tab, form = line.partition("\t")
            if not tab or not key or form.lower() != key or "\t" in form or key != key.strip():
                raise PunctkitError(f"{where}:{i}: expected 'word<TAB>Form' (the form lower-cased is the word)")
            forms[key] = form
        return cls(forms)


# Initials: single letters joined by periods (`u.s.`, `j.p.`, `i.e.`) or by `&` (`q&a`, `m&a`, `p&l`, `r&d`)
INITIALISM = re.compile(r"[^\W\d_](?:\.[^\W\d_])+\.?|[^\W\d_]{1,3}(?:&[^\W\d_])+")


def apply_case(word: str, style: str | None, lexicon: CaseLexicon | None = None, start: bool = False) -> str:
    """`word` in the case that a class's style asks for (None: unchanged). The style applies to the
    word's letters only; `mixed` takes the lexicon's form (Capitalized without one), shown at a sentence
    start (`start`) as `sentence_start_case` shows it (`sub-Saharan` -> `Sub-Saharan`; `iPhone` stays). Initials
    (`INITIALISM`) are a class of their own: shown with a capital, every letter is one (`J.P.`, not
    `J.p.`), and letters joined by `&` are never lower case (`Q&A`, `M&A`); `i.e.` in lower case stays. A word with a
    contraction that the training text splits off (`tv's`, `mcdonald's`) is cased on its stem, the
    contraction lower case: `TV's`, `McDonald's`, as the labels of `TV 's` and `McDonald 's` show them. Words of
    letters and digits are cased as words are (`q3` -> `Q3`, `5g` -> `5G`, `covid-19` -> `COVID-19`), and a false
    start by its letters, its `-` kept (`so-` -> `So-`)."""
    if style is None:
        return word
    if word.endswith("-") and len(word) > 1:  # a false start (`so-`, `th-`): cased by its letters, the `-` kept
        return apply_case(word[:-1], style, lexicon, start) + "-"
    stem, *rest = split_contraction(word)
    if rest:
        return apply_case(stem, style, lexicon, start) + rest[0].lower()
    if INITIALISM.fullmatch(word) and ("&" in word or style != "lower"):
        return word.upper()  # initials: `J.P.`, `U.S.`, `Q&A` (a class, not a word list; `i.e.` stays lower)
    if style == "lower":
        return word.lower()
    if style == "capital":
        return capitalise(word.lower())
    if style == "upper":
        return word.upper()
    form = (lexicon or CaseLexicon()).form(word)
    return sentence_start_case(form) if start else form


def starts_with_letter(word: str) -> bool:
    """Whether the first letter or digit of `word` is a letter (`well`, `'em`, `q3`, `so-`), the one whose case
    shows a sentence start; a word that begins with a digit (`1st`, `5G`, `3D`, `2-year-old`) shows none."""
    first = next((c for c in word if c.isalnum()), "")
    return first.isalpha()


def sentence_start_case(word: str) -> str:
    """`word` as it begins a sentence: its first letter upper case (`sub-Saharan` -> `Sub-Saharan`,
    `ex-US` -> `Ex-US`, `well` -> `Well`, `so-` -> `So-`), except where its lower-case first letters run straight
    into a capital, a name written so (`iPhone`, `eBay`, `fMRI` stay): as the training text writes both; a word
    that begins with a digit (`1st`, `5g`: `starts_with_letter`) stays as it is."""
    if not starts_with_letter(word):
        return word
    i = next((k for k, c in enumerate(word) if c.isalpha()), len(word))
    j = i
    while j < len(word) and word[j].islower():
        j += 1
    return word if i < j < len(word) and word[j].isupper() else capitalise(word)


def cased_words(words: list[str], labels: list[str], inventory: LabelSet,
                lexicon: CaseLexicon | None = None, start: bool = True) -> list[str]:
    """Each word in the case its true-case label shows (what `decode` writes, so that exact-form case
    scoring compares what users see); other inventories leave the words as they are. `start`: the
    first word begins a sentence (the next ones do after a sentence-final mark)."""
    if not inventory.true_case:
        return list(words)
    out = []
    for w, lab in zip(words, labels):
        out.append(apply_case(w, inventory.case_style(case_of(lab)), lexicon, start))
        start = mark_of(lab) in SENTENCE_END
    return out


INVENTORIES: dict[str, LabelSet] = {
    "4class": LabelSet("4class", ("COMMA", "PERIOD", "QUESTION")),
    "6class": LabelSet("6class", ("COMMA", "PERIOD", "QUESTION", "EXCLAMATION", "DOTS")),
    "case4": LabelSet("case4", ("COMMA", "PERIOD", "QUESTION"), case_aware=True),
    "case6": LabelSet("case6", ("COMMA", "PERIOD", "QUESTION", "EXCLAMATION", "DOTS"), case_aware=True),
    "truecase4": LabelSet("truecase4", ("COMMA", "PERIOD", "QUESTION"), case_aware=True, cases=TRUE_CASES),
    "truecase6": LabelSet("truecase6", ("COMMA", "PERIOD", "QUESTION", "EXCLAMATION", "DOTS"),
                          case_aware=True, cases=TRUE_CASES),
}


def get_inventory(name: str) -> LabelSet:
    """Look up a label inventory by name, with a one-line error listing the known ones."""
    try:
        return INVENTORIES[name]
    except KeyError:
        raise PunctkitError(f"unknown label inventory '{name}' (known: {', '.join(INVENTORIES)})") from None


def inventory_for(labels: set[str]) -> LabelSet:
    """The smallest known inventory that holds every label in `labels`."""
    for inv in INVENTORIES.values():
        if labels <= set(inv.labels):
            return inv
    known = {lab for inv in INVENTORIES.values() for lab in inv.labels}
    unknown = sorted(labels - known)
    raise PunctkitError(f"labels fit no known inventory: {', '.join(unknown[:5])}")


# Faber 2020, table 4.4: marks that are not predicted but are close to COMMA or PERIOD.
FABER_RULES: dict[str, str | None] = {
    ",": "COMMA", ".": "PERIOD", "?": "QUESTION",
    "!": "PERIOD", ";": "PERIOD", ":": "COMMA", "-": "COMMA",
    "...": "PERIOD",  # three dots read as periods; Faber keeps the first of several marks
}


@dataclass(frozen=True)
class Substitution:
    """Raw mark text -> label mark (or None: dropped). Marks absent from the table are dropped."""

    table: dict[str, str | None]

    def apply(self, mark_text: str, inventory: LabelSet) -> str | None:
        """The label mark for a raw mark, or None when the mark is dropped."""
        target = self.table.get(mark_text)
        if target is None and mark_text not in self.table:
            direct = TEXT_MARK.get(mark_text)  # a mark the inventory predicts itself
            target = direct if direct in inventory.marks else None
        if target is not None and target not in inventory.marks:
            return None
        return target


def default_substitution(inventory: LabelSet) -> Substitution:
    """Faber's table for 4-class inventories; 6-class keeps `!` and `...` as their own classes."""
    table = dict(FABER_RULES)
    if "EXCLAMATION" in inventory.marks:
        table["!"] = "EXCLAMATION"
    if "DOTS" in inventory.marks:
        table["..."] = "DOTS"
    return Substitution(table)


def load_substitution(path: str | Path, inventory: LabelSet) -> Substitution:
    """Read rules from a YAML mapping `{"!": PERIOD, ";": PERIOD, "(": null}`."""
    raw = read_yaml_mapping(path, "substitution rules", "a mapping of mark -> label")
    table: dict[str, str | None] = {}
    for k, v in raw.items():
        if v is not None and v not in inventory.marks:
            raise PunctkitError(f"{path}: rule '{k}: {v}' names a label not in inventory {inventory.name}")
        table[str(k)] = v
    return Substitution(table)
