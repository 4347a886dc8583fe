"""The end of a stream ends a sentence (punctkit/decode/stream_end.py): the last word's label takes
the sentence-final mark its distribution ranks highest when the model gave it none."""
from __future__ import annotations

import numpy as np
import pytest

from punctkit.data.labels import LabelSet, get_inventory
from punctkit.decode.stream_end import close_ids, close_stream, closing_label


def _row(inv, mass: dict[str, float]) -> np.ndarray:
    row = np.array([mass.get(lab, 0.0) for lab in inv.labels])
    return row / row.sum()


def test_the_final_mark_of_most_mass_replaces_none_or_a_comma():
    inv = get_inventory("4class")
    row = _row(inv, {"O": 0.5, "COMMA": 0.2, "PERIOD": 0.1, "QUESTION": 0.2})
    assert closing_label("O", row, inv) == "QUESTION"
    assert closing_label("COMMA", row, inv) == "QUESTION"
    assert closing_label("PERIOD", row, inv) == "PERIOD"  # a final mark stays, whatever the row
    tie = _row(inv, {"O": 0.6, "PERIOD": 0.2, "QUESTION": 0.2})
    assert closing_label("O", tie, inv) == "PERIOD"  # a tie: the inventory's first


@pytest.mark.parametrize("name", ["truecase4", "truecase6", "case4"])
def test_case_aware_labels_keep_their_case_and_sum_the_mark_over_cases(name):
    inv = get_inventory(name)
    # PERIOD is the likeliest mark in sum over the case classes, though QUESTION has the likeliest label
    mass = {inv.labels[0]: 0.3}
    periods = [lab for lab in inv.labels if lab.endswith("_PERIOD")]
    questions = [lab for lab in inv.labels if lab.endswith("_QUESTION")]
    mass.update({lab: 0.3 / len(periods) for lab in periods})
    mass[questions[0]] = 0.25
    row = _row(inv, mass)
    upper = "U_O" if "U_O" in inv.labels else inv.labels[-1].split("_")[0] + "_O"
    assert closing_label(upper, row, inv) == upper.split("_")[0] + "_PERIOD"


def test_only_the_last_word_and_not_a_fixed_mark():
    inv = get_inventory("4class")
    rows = np.stack([_row(inv, {"O": 0.7, "PERIOD": 0.3})] * 3)
    assert close_stream(["O", "O", "O"], rows, inv) == ["O", "O", "PERIOD"]
    assert close_stream(["O", "O", "COMMA"], rows, inv, fixed=[None, None, "COMMA"]) == ["O", "O", "COMMA"]
    assert close_stream([], rows[:0], inv) == []
    ids = [inv.index("O")] * 3  # the label ids of decode and training's validation, closed alike
    assert close_ids(ids, rows, inv) == [inv.index(lab) for lab in close_stream(["O"] * 3, rows, inv)]
    assert close_ids([], rows[:0], inv) == []
    commas = LabelSet("commas", ("COMMA",))  # an inventory without a sentence-final mark: nothing to add
    assert close_stream(["O"], np.array([[0.9, 0.1]]), commas) == ["O"]
