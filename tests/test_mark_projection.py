"""Reference marks projected onto recognized words (punctkit.mark_projection), as the IWSLT ASR sets were made."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from punctkit.data.labels import O, get_inventory, mark_of
from punctkit.mark_projection import project_marks

FOUR = get_inventory("4class")


def test_substitution_insertion_deletion_exact_labels() -> None:
    ref = "well i think it is true what about them".split()
    labels = "COMMA O O O O PERIOD O O QUESTION".split()
    hyp = "well uh i sink it is what about them".split()
    p = project_marks(ref, labels, hyp, FOUR)
    # uh: inserted -> O; sink: substituted for think -> think's O; true deleted -> its PERIOD on `is`
    assert p.labels == "COMMA O O O O PERIOD O O QUESTION".split()
    assert (p.substitutions, p.deletions, p.insertions, p.ref_words) == (1, 1, 1, 9)
    assert round(p.wer, 2) == 33.33 and (p.marks, p.not_projected) == (3, 0)


def test_marks_that_cannot_be_projected() -> None:
    # a deleted first word has no recognized word before it; a deleted word's mark replaces the one before
    p = project_marks(["yes", "so", "it", "ends"], ["COMMA", "O", "COMMA", "PERIOD"], ["so", "it"], FOUR)
    assert p.labels == ["O", "PERIOD"]  # `it`'s COMMA is replaced by the PERIOD of the deleted `ends`
    assert (p.deletions, p.marks, p.not_projected) == (2, 3, 2)


def test_case_labels_and_no_labels() -> None:
    case4 = get_inventory("case4")
    p = project_marks(["Hello", "big", "World", "again"], ["U_O", "L_O", "U_COMMA", "L_PERIOD"],
                      ["hello", "uh", "big", "world"], case4)
    assert p.labels == ["U_O", "L_O", "L_O", "U_PERIOD"]  # inserted `uh` is L_O; `again`'s PERIOD keeps World's case
    assert p.not_projected == 1  # World's COMMA
    p = project_marks(["a", "b"], None, ["a", "c", "b"])
    assert p.labels == [] and (p.insertions, p.errors) == (1, 1)


def edit_distance(a: list[str], b: list[str]) -> int:
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (x != y))
    return row[-1]


words = st.lists(st.sampled_from("a b c d e".split()), max_size=12)


@settings(max_examples=200, deadline=None)
@given(ref=words, hyp=words, data=st.data())
def test_projection_properties(ref: list[str], hyp: list[str], data: st.DataObject) -> None:
    labels = data.draw(st.lists(st.sampled_from(FOUR.labels), min_size=len(ref), max_size=len(ref)))
    p = project_marks(ref, labels, hyp, FOUR)
    assert len(p.labels) == len(hyp) and all(lab in FOUR for lab in p.labels)
    assert p.errors == edit_distance(ref, hyp) and p.ref_words == len(ref)
    # every reference mark lands on exactly one recognized word or is counted as not projected
    assert sum(mark_of(lab) != O for lab in p.labels) == p.marks - p.not_projected
    same = project_marks(ref, labels, ref, FOUR)
    assert same.labels == labels and same.errors == 0 and same.not_projected == 0
