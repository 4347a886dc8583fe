"""Label inventories (4-class, 6-class, case-aware) and the mark substitution rules.

A label names the punctuation that follows a word: O (none), COMMA, PERIOD, ...
Case-aware inventories prefix the case of the word itself: `L_O`, `U_COMMA`, ...
(Faber 2020 §4.2.1: L = lower-case word, U = capitalised word).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

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
CASES = ("L", "U")


@dataclass(frozen=True)
class LabelSet:
    """An ordered label inventory; index 0 is always the no-mark label."""

    name: str
    marks: tuple[str, ...]
    case_aware: bool = False
    labels: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        base = (O,) + self.marks
        labels = tuple(f"{c}_{m}" for m in base for c in CASES) if self.case_aware else base
        object.__setattr__(self, "labels", labels)
        object.__setattr__(self, "_index", {lab: i for i, lab in enumerate(labels)})

    def __len__(self) -> int:
        return len(self.labels)

    def __contains__(self, label: str) -> bool:
        return label in self._index  # type: ignore[attr-defined]

    def index(self, label: str) -> int:
        """Index of `label`; KeyError if it is not in the inventory."""
        return self._index[label]  # type: ignore[attr-defined]

    def make(self, mark: str, capitalised: bool = False) -> str:
        """The label for a word followed by `mark` (O for none)."""
        return f"{'U' if capitalised else 'L'}_{mark}" if self.case_aware else mark


def mark_of(label: str) -> str:
    """The punctuation part of a label: `U_COMMA` -> `COMMA`, `PERIOD` -> `PERIOD`."""
    if len(label) > 2 and label[1] == "_" and label[0] in CASES:
        return label[2:]
    return label


def case_of(label: str) -> str | None:
    """The case part of a case-aware label (`L`/`U`), else None."""
    if len(label) > 2 and label[1] == "_" and label[0] in CASES:
        return label[0]
    return None


INVENTORIES: dict[str, LabelSet] = {
    "4class": LabelSet("4class", ("COMMA", "PERIOD", "QUESTION")),
    "6class": LabelSet("6class", ("COMMA", "PERIOD", "QUESTION", "EXCLAMATION", "DOTS")),
    "case4": LabelSet("case4", ("COMMA", "PERIOD", "QUESTION"), case_aware=True),
    "case6": LabelSet("case6", ("COMMA", "PERIOD", "QUESTION", "EXCLAMATION", "DOTS"), case_aware=True),
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
    unknown = sorted(labels - set(INVENTORIES["case6"].labels) - set(INVENTORIES["6class"].labels))
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
