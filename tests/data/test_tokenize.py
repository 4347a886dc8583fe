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
    assert words == ["I", "don't", "know", "the", "U.S.", "costs", "3.5", "1,000", "e-mail", "dr.", "who", "10:30",
                     "9/11"]


def test_split_contractions_are_words():
    pairs, _ = seg("so , i 'm sure we do n't .")
    assert pairs == [("so", "COMMA"), ("i", "O"), ("'m", "O"), ("sure", "O"), ("we", "O"),
                     ("do", "O"), ("n't", "PERIOD")]


def test_split_contractions_in_capitals_keep_their_apostrophe():
    """A recognizer's capitals (`IT 'S`), or a clitic a true-case model capitalised (`'S`), are the
    same words: the apostrophe stays on them, as on `'s`, and nothing is dropped."""
    pairs, s = seg("IT 'S TRUE , WE 'RE HERE AND I 'M SURE THEY ’LL COME .")
    assert [w for w, _ in pairs] == ["IT", "'S", "TRUE", "WE", "'RE", "HERE", "AND", "I", "'M", "SURE", "THEY",
                                     "'LL", "COME"]
    assert s.dropped_symbols == 0 and pairs[2] == ("TRUE", "COMMA")
    # quotes around words that begin with those letters are still quotes
    assert [w for w, _ in seg("she said 'Sure' and 'mostly' so")[0]] == ["she", "said", "Sure", "and", "mostly", "so"]


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


# ---------------------------------------------------------------- IWSLT's split contractions

def test_split_contraction_whisper_style_words():
    from punctkit.data.tokenize import split_contraction

    cases = {"I'm": ["I", "'m"], "don't": ["do", "n't"], "can't": ["ca", "n't"], "won't": ["wo", "n't"],
             "TV's": ["TV", "'s"], "McDonald's": ["McDonald", "'s"], "they're": ["they", "'re"],
             "I'll": ["I", "'ll"], "DON'T": ["DO", "N'T"], "it’s": ["it", "’s"],
             # IWSLT keeps these whole (dev2012: `we've`, `i'd`), and so do we
             "we've": ["we've"], "he'd": ["he'd"], "o'clock": ["o'clock"], "n't": ["n't"], "'s": ["'s"],
             "rock'n'roll": ["rock'n'roll"], "students": ["students"]}
    for word, pieces in cases.items():
        assert split_contraction(word) == pieces, word


def test_split_pieces_each_get_a_label_mark_on_the_last():
    inv = INVENTORIES["truecase4"]
    s = segment("I'm sure we don't, and TV's McDonald's can't? We've", inv, default_substitution(inv),
                split_contractions=True)
    assert list(zip(s.words, s.marks)) == [
        ("I", "C_O"), ("'m", "L_O"), ("sure", "L_O"), ("we", "L_O"), ("do", "L_O"), ("n't", "L_COMMA"),
        ("and", "L_O"), ("TV", "U_O"), ("'s", "L_O"), ("McDonald", "M_O"), ("'s", "L_O"), ("ca", "L_O"),
        ("n't", "L_QUESTION"), ("We've", "C_O")]
    # without the option the words stay whole, as before
    assert seg("we don't.")[0] == [("we", "O"), ("don't", "PERIOD")]


def plain_runs(words, labels):
    """Maximal runs of IWSLT tokens that detokenize and tokenize as themselves: letters, digits and
    inner `'.,:/-` (or a split contraction); no mojibake, no lone symbols (`--`), no `st`+PERIOD."""
    import re

    from punctkit.data.tokenize import ABBREVIATIONS, SPLIT_CONTRACTIONS
    plain = re.compile(r"[a-z0-9]+(?:['.,:/-][a-z0-9]+)*")
    runs = [[]]
    for w, lab in zip(words, labels):
        ok = (w in SPLIT_CONTRACTIONS or plain.fullmatch(w)) and not (w + "." in ABBREVIATIONS and lab == "PERIOD")
        if ok and lab:
            runs[-1].append((w, lab))
        elif runs[-1]:
            runs.append([])
    return [r for r in runs if len(r) > 1]


def test_iwslt_files_retokenized_give_their_tokens(iwslt):
    """dev2012 and test2011 joined into readable text (`do n't` -> `don't`) and tokenized again with
    split contractions give their own tokens and labels back: all of test2011, a sample of dev2012."""
    from punctkit.data.tokenize import detokenize

    for name, step in (("test2011", 1), ("dev2012", 10)):
        rows = [ln.split("\t") for ln in (iwslt / name).read_text(encoding="utf-8").splitlines() if ln]
        runs = plain_runs([r[0] for r in rows], [r[1].strip() if len(r) > 1 else "" for r in rows])[::step]
        assert sum(len(r) for r in runs) > 10_000, name  # most of the file is such runs
        contractions = 0
        for run in runs:
            words, labels = [w for w, _ in run], [lab for _, lab in run]
            text = detokenize(words, labels, capitalize=False)
            again = segment(text, INV4, RULES4, split_contractions=True)
            assert (again.words, again.marks) == (words, labels), text
            contractions += sum(w in ("n't", "'s", "'m", "'re", "'ll") for w in words)
        assert contractions > 300, name  # the runs hold many split contractions
