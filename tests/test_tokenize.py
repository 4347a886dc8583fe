from punctkit.data.labels import INVENTORIES, default_substitution
from punctkit.data.tokenize import join_marked, segment, tokens

INV4 = INVENTORIES["4class"]
RULES4 = default_substitution(INV4)


def seg(text, inv=INV4, lowercase=False):
    s = segment(text, inv, default_substitution(inv), lowercase)
    return list(zip(s.words, s.marks)), s


def test_word_internal_punctuation_is_kept():
    words = [t for k, t in tokens("I don't know: the U.S. costs 3.5, 1,000 e-mail dr. who 10:30 9/11")
             if k == "w"]
    assert words == ["I", "don't", "know", "the", "U.S.", "costs", "3.5", "1,000", "e-mail", "dr.", "who", "10:30", "9/11"]


def test_split_contractions_are_words():
    pairs, _ = seg("so , i 'm sure we do n't .")
    assert pairs == [("so", "COMMA"), ("i", "O"), ("'m", "O"), ("sure", "O"), ("we", "O"),
                     ("do", "O"), ("n't", "PERIOD")]


def test_quotes_and_brackets_dropped_and_counted():
    pairs, s = seg('He said "yes" (twice).')
    assert pairs == [("He", "O"), ("said", "O"), ("yes", "O"), ("twice", "PERIOD")]
    assert s.dropped_symbols == 4


def test_first_mark_wins_and_dots():
    pairs, s = seg("what?! well... fine")
    assert pairs == [("what", "QUESTION"), ("well", "PERIOD"), ("fine", "O")]
    assert s.dropped_marks == 1  # the "!" after "?"


def test_faber_substitution():
    pairs, _ = seg("stop! wait; here: there - now")
    assert [m for _, m in pairs] == ["PERIOD", "PERIOD", "COMMA", "COMMA", "O"]


def test_six_class_keeps_exclamation_and_dots():
    pairs, _ = seg("stop! wait... go", INVENTORIES["6class"])
    assert [m for _, m in pairs] == ["EXCLAMATION", "DOTS", "O"]


def test_marks_before_first_word_dropped():
    pairs, s = seg("... , hello world")
    assert pairs == [("hello", "O"), ("world", "O")]
    assert s.dropped_marks == 2


def test_abbreviation_period_belongs_to_word_only_when_known():
    pairs, _ = seg("Dr. Smith came. Then the U.S. went.")
    assert pairs[0] == ("Dr.", "O") and pairs[2] == ("came", "PERIOD")
    assert ("U.S.", "O") in pairs and pairs[-1] == ("went", "PERIOD")


def test_case_aware_labels_and_lowercasing():
    pairs, _ = seg("Hello, my name is Ann. Bye", INVENTORIES["case4"])
    assert pairs == [("hello", "U_COMMA"), ("my", "L_O"), ("name", "L_O"), ("is", "L_O"),
                     ("ann", "U_PERIOD"), ("bye", "U_O")]
    assert join_marked([w for w, _ in pairs], [m for _, m in pairs]) == "Hello, my name is Ann. Bye"


def test_lowercase_option():
    pairs, _ = seg("Hello World.", lowercase=True)
    assert pairs == [("hello", "O"), ("world", "PERIOD")]
