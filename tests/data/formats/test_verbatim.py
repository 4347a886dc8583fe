"""Verbatim speech as readers see it (issue 79, item 4): fillers (`um`, `mm-hmm`), false starts ending in
`-` (`so-`, `th-`) and repetitions are words, cased as words are (`So-` at a sentence start); words of letters
and digits are recased by their label and the case lexicon (`q3` -> `Q3`, `covid-19` -> `COVID-19`) while
numbers, addresses and paths pass through; a title's dot (`Mr.`) ends no sentence and no subtitle cue; and
`punctkit score` counts the capitals inside sentences that the reference writes in lower case ("James, Thanks").
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from punct_util import cli
from punctkit.data.case_prior import CasePrior
from punctkit.data.formats import split_text
from punctkit.data.formats.base import AsrUtterance, OutputOptions
from punctkit.data.formats.subtitles import srt_lines
from punctkit.data.labels import (
    INVENTORIES,
    CaseLexicon,
    O,
    apply_case,
    default_substitution,
    get_inventory,
    sentence_start_case,
    starts_with_letter,
)
from punctkit.data.tokenize import read_passage, recasable
from punctkit.decode.joint import JointDecision
from punctkit.infer.render import Casing, show_tokens

TC = get_inventory("truecase4")


def row(**probs: float) -> np.ndarray:
    """A distribution over truecase4 labels with the given labels' probabilities (the rest shared out)."""
    r = np.zeros(len(TC.labels))
    for lab, p in probs.items():
        r[TC.index(lab)] = p
    r[r == 0] = (1 - r.sum()) / (r == 0).sum()
    return r


def shown(text: str, labels: list[str], lexicon: CaseLexicon | None = None, inventory=TC) -> list[str]:
    """The words of `text` as punctuate shows them under `labels` (the model's inventory given)."""
    p = split_text(text, inventory, default_substitution(inventory))
    return show_tokens(p.written, labels, Casing(inventory, lexicon))


# ------------------------------------------------------------------ fillers and false starts

def test_a_false_start_or_filler_that_begins_a_sentence_takes_its_capital_by_the_joint_decision():
    """The model sees `so-` as `so` and gives it lower case; after a period (or at a stream's start) rule 1
    of the joint decision gives it a capital, and the shown word is `So-`, its `-` kept."""
    words = ["so", "so", "we", "left", "um", "th", "that's", "it"]
    text = "so- so we left um th- that's it"
    rows = np.stack([row(L_O=0.9), row(L_O=0.9), row(L_O=0.9), row(L_PERIOD=0.97), row(L_COMMA=0.7, C_COMMA=0.2),
                     row(L_O=0.9), row(L_O=0.9), row(L_PERIOD=0.9)])
    ids = JointDecision(TC).decide(rows, words, opens=True)
    labels = [TC.labels[i] for i in ids]
    assert [lab[0] for lab in labels] == ["C", "L", "L", "L", "C", "L", "L", "L"]
    assert " ".join(shown(text, labels)) == "So- so we left. Um, th- that's it."
    # the model's own capital on a false start inside a sentence, and its Upper class, keep the `-` too
    assert shown("and th- the", ["L_O", "C_O", "L_O"]) == ["and", "Th-", "the"]
    assert shown("i- i think", ["U_O", "C_O", "L_O"]) == ["I-", "I", "think"]


@pytest.mark.parametrize("text", [
    "so- so we went. uh- the plan worked.",
    "we went. mm-hmm, yeah. th- that's it.",
    "um, it's- it's fine. i- i agree. the- the numbers? so- so good.",
])
def test_false_starts_and_fillers_begin_sentences_with_a_capital_end_to_end(tmp_path, text):
    """With the input's marks kept (--keep-input-marks), every sentence begins with a capital, a false start's
    `-` kept and its letters those of the input: whatever the model predicts, `so-` never begins one."""
    (tmp_path / "in.txt").write_text(text + "\n")
    out = cli("punctuate", "--keep-input-marks", tmp_path / "in.txt").stdout.split()
    assert [w.rstrip(",.?").casefold() for w in out] == [w.rstrip(",.?").casefold() for w in text.split()]
    starts = [w for prev, w in zip(["."] + out, out) if prev[-1] in ".?"]
    assert len(starts) == text.count(".") + text.count("?") and all(w[0].isupper() for w in starts), out
    assert any(w.rstrip(",").endswith("-") for w in starts)  # `So-`, not `so-`


def test_a_false_start_is_cased_by_its_letters_in_every_path():
    assert apply_case("so-", "capital") == "So-" and apply_case("so-", "upper") == "SO-"
    assert apply_case("it's-", "capital") == "It's-"
    assert apply_case("iphone-", "mixed", CaseLexicon({"iphone": "iPhone"})) == "iPhone-"
    assert apply_case("iphone-", "mixed", CaseLexicon({"iphone": "iPhone"}), start=True) == "iPhone-"
    assert sentence_start_case("so-") == "So-" and sentence_start_case("th-") == "Th-"
    # a cased input keeps its case inside sentences; a predicted sentence start is capitalised
    assert shown("Well so- So we did it", ["C_PERIOD", "L_O", "L_O", "L_O", "L_O", "L_PERIOD"]) == \
        ["Well.", "So-", "So", "we", "did", "it."]
    # a model without case: the rule capitalises a sentence start, `-` kept
    four = INVENTORIES["4class"]
    assert shown("so- so we left", [O, O, O, "PERIOD"], inventory=four) == ["So-", "so", "we", "left."]
    for w in ("so-", "th-", "it's-", "I-", "q3-"):
        assert recasable(w), w
    for w in ("--", "-", "so--", "-so", "4-"):
        assert not recasable(w), w


# ------------------------------------------------------------------ words of letters and digits

def test_words_of_letters_and_digits_are_recased_by_their_label_and_the_lexicon():
    lex = CaseLexicon({"covid-19": "COVID-19", "iphone11": "iPhone11"})
    text = "so q3 and q4 had 5g mp3s covid-19 and iphone11 sales"
    labels = ["C_O", "U_O", "L_O", "C_O", "L_O", "C_O", "U_O", "M_O", "L_O", "M_O", "L_PERIOD"]
    assert " ".join(shown(text, labels, lex)) == "So Q3 and Q4 had 5G MP3S COVID-19 and iPhone11 sales."
    assert shown("covid-19 hit", ["U_O", "L_PERIOD"]) == ["COVID-19", "hit."]
    assert shown("covid-19's impact", ["U_O", "L_PERIOD"]) == ["COVID-19's", "impact."]
    # the label's lower case lowers them too (a cased input aside)
    assert shown("q3 covid-19", ["L_O", "L_PERIOD"]) == ["q3", "covid-19."]


def test_a_word_that_begins_with_a_digit_takes_no_sentence_start_capital():
    """`1st`, `5g` begin with a digit: a sentence start shows on no letter of theirs (`1St` would be another
    word's form), so rule 1 leaves them the model's class, and the sentence-start rule leaves them as they are;
    the model's own capital still shows (`5G`)."""
    assert not starts_with_letter("1st") and not starts_with_letter("5g") and starts_with_letter("q3")
    assert sentence_start_case("1st") == "1st" and sentence_start_case("q3") == "Q3"
    rows = np.stack([row(C_PERIOD=0.9), row(L_O=0.9), row(L_O=0.9), row(L_PERIOD=0.9), row(C_O=0.9)])
    ids = JointDecision(TC).decide(rows, ["yes", "1st", "quarter", "went", "5g"], opens=True)
    labels = [TC.labels[i] for i in ids]
    assert labels[1] == "L_O"  # after a period, and still lower case
    assert " ".join(shown("yes 1st quarter went 5g", labels)) == "Yes. 1st quarter went. 5G"
    # rule 2 lets the model's capital stand on a digit-led word (the prior counts `5G` as starting with `5`)
    prior = CasePrior({"5g": (0, 50)})
    ids = JointDecision(TC, prior=prior).decide(np.stack([row(L_O=0.9), row(C_O=0.9)]), ["the", "5g"])
    assert TC.labels[ids[1]] == "C_O"
    four = INVENTORIES["4class"]
    assert shown("1st we met. 2nd we left", [O, O, "PERIOD", O, O, "PERIOD"], inventory=four) == \
        ["1st", "we", "met.", "2nd", "we", "left."]


@pytest.mark.parametrize("token", ["1,000", "3.5", "10:30", "9/11", "2.5e-3", "-4", "US$20", "2-year-old",
                                   "3.5mm", "www.python.org/3/library", "john.smith@example.com", "h.264", "24/7"])
def test_numbers_addresses_and_paths_still_pass_through_as_written(token):
    assert not recasable(token)
    for lab in ("C_PERIOD", "U_O", "M_O", "L_O"):
        assert shown(f"so {token}", ["C_O", lab])[1].rstrip(".") == token


def test_words_pass_through_whatever_the_labels():
    """Every label of the inventory, at a sentence start or inside one: each word's letters as given, only
    their case and the marks after them changed."""
    text = "so- q3 um covid-19 mm-hmm 5g th- 1st it's- x86 h1n1 uh i-"
    p = split_text(text, TC, default_substitution(TC))
    rng = np.random.default_rng(0)
    lex = CaseLexicon({"covid-19": "COVID-19", "mm-hmm": "mm-Hmm"})
    for _ in range(40):
        labels = [TC.labels[k] for k in rng.integers(0, len(TC.labels), len(p.written))]
        got = show_tokens(p.written, labels, Casing(TC, lex))
        assert [g.rstrip(",.?").casefold() for g in got] == [w.casefold() for w in text.split()], (labels, got)


# ------------------------------------------------------------------ titles in subtitles

def whisper(path, words: list[str]) -> None:
    """A Whisper JSON transcript of `words`, half a second each."""
    ws = [{"word": f" {w}", "start": round(0.5 * k, 2), "end": round(0.5 * k + 0.4, 2)} for k, w in enumerate(words)]
    path.write_text(json.dumps({"text": "", "segments": [{"id": 0, "start": 0.0, "end": 0.5 * len(words),
                                                          "text": "", "words": ws}]}))


def cue_texts(srt: str) -> list[str]:
    """The text of each cue of an SRT file."""
    return [" ".join(block.split("\n")[2:]) for block in srt.strip().split("\n\n")]


@pytest.mark.parametrize("lead", range(6))
def test_no_cue_ends_on_a_title(tmp_path, lead):
    """`Mr. Smith` and `Dr. Jones` at every place of a line of 20 characters: the cue that would end on `Mr.`
    ends before it, whatever marks the model predicts."""
    words = (["we", "met", "with", "a", "lot", "of"][:lead]
             + "mr. smith and then dr. jones at the bank of mr. brown".split())
    whisper(tmp_path / "t.json", words)
    out = cli("punctuate", tmp_path / "t.json", "--format", "srt", "--max-line-chars", 20, "--max-cue-lines", 1).stdout
    cues = cue_texts(out)
    assert " ".join(cues).lower().replace(",", "").replace(".", "") == " ".join(words).replace(".", "")
    assert not any(c.split()[-1].rstrip(",").lower() in {"mr.", "dr."} for c in cues), cues


def test_a_titles_period_ends_no_cue_and_no_timed_sentence(tmp_path):
    """A model's PERIOD on `Mr.` (shown `Mr.`: the word's own dot stands for it) is no sentence end: the cue
    and the timed-JSON sentence go on to the name."""
    from punctkit.data.formats.subtitles import timed_json_lines
    from punctkit.infer.engine import Labelled

    inv = INVENTORIES["4class"]
    toks = ["i", "met", "mr.", "smith", "today"]
    p = read_passage(toks, inv, default_substitution(inv))
    utt = AsrUtterance("a", p.words, p.marks, p.written,
                       [{"index": k, "start_s": k * 0.5, "end_s": k * 0.5 + 0.4} for k in range(5)])
    labels = [O, O, "PERIOD", O, "PERIOD"]
    units = [Labelled(utt, labels, ["I", "met", "Mr.", "Smith", "today."], starts=True, ends=True)]
    srt = "\n".join(srt_lines(units, OutputOptions(inv, src=tmp_path / "x")))
    assert cue_texts(srt) == ["I met Mr. Smith today."]
    sents = [json.loads(s) for s in timed_json_lines(units, OutputOptions(inv, src=tmp_path / "x"))]
    assert [s["text"] for s in sents] == ["I met Mr. Smith today."]


# ------------------------------------------------------------------ capitals after a comma

def test_score_counts_capitals_after_a_comma_that_the_reference_writes_in_lower_case(tmp_path):
    (tmp_path / "ref.txt").write_text("James, thanks for coming. Madam, thank you. Well, John came.\n")
    (tmp_path / "hyp.txt").write_text("James, Thanks for coming. Madam, Thank you. Well, John came.\n")
    r = cli("score", tmp_path / "ref.txt", tmp_path / "hyp.txt", "--json")
    assert json.loads(r.stdout)["case"]["contradictions"]["capital_inside"] == 2  # `John` is a name: not counted
    report = cli("score", tmp_path / "ref.txt", tmp_path / "hyp.txt").stdout
    assert "2 words the reference writes in lower case have a capital inside a sentence" in report
    (tmp_path / "hyp.txt").write_text("James, thanks for coming. Madam, thank you. Well, John came.\n")
    r = cli("score", tmp_path / "ref.txt", tmp_path / "hyp.txt", "--json")
    assert json.loads(r.stdout)["case"]["contradictions"]["capital_inside"] == 0
