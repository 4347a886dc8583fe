"""Marks and case decided together (decode/joint.py), on every path that labels: the rule that a
sentence end is followed by an upper-case first letter, capitals inside sentences only where the
training text has them, and the same labels whole, in segments and streamed."""
from __future__ import annotations

import json

import numpy as np
import pytest

from label_util import words_labels
from punctkit.data.case_prior import CasePrior
from punctkit.data.labels import SENTENCE_END, CaseLexicon, case_of, get_inventory, mark_of
from punctkit.decode.joint import JointDecision
from punctkit.infer.stream import PunctStream

INV = get_inventory("truecase4")


def row(**probs: float) -> np.ndarray:
    """A distribution over truecase4 labels with the given labels' probabilities (the rest shared out)."""
    r = np.full(len(INV.labels), 0.0)
    for lab, p in probs.items():
        r[INV.index(lab)] = p
    rest = 1 - r.sum()
    r[r == 0] = rest / (r == 0).sum()
    return r


def labels(ids: list[int]) -> list[str]:
    return [INV.labels[i] for i in ids]


def test_a_sentence_end_is_never_followed_by_a_lower_case_word():
    # "new york. and i": arg-max gives york PERIOD, and lower case
    rows = np.stack([row(C_O=0.9), row(C_PERIOD=0.5, C_O=0.4), row(L_O=0.95), row(C_O=0.9)])
    jd = JointDecision(INV)
    got = labels(jd.decide(rows, ["new", "york", "and", "i"], opens=True))
    assert not any(mark_of(a) in SENTENCE_END and case_of(b) == "L" for a, b in zip(got, got[1:]))
    # with the next word's evidence weighed, the period gives way ("New York and I")
    assert got[1] == "C_O" and got[2] == "L_O"
    # without the look-ahead the period stays and the next word takes a capital
    got0 = labels(JointDecision(INV, lookahead=0).decide(rows, ["new", "york", "and", "i"], opens=True))
    assert got0[1] == "C_PERIOD" and got0[2][0] in "CU"


def test_capitals_inside_sentences_need_the_training_texts_support():
    prior = CasePrior({"thanks": (1, 100), "jane": (50, 50)})
    rows = np.stack([row(C_COMMA=0.9), row(C_O=0.8, L_O=0.15), row(L_O=0.9)])
    got = labels(JointDecision(INV, prior=prior).decide(rows, ["jane", "thanks", "for"], opens=True))
    assert got[0] == "C_COMMA" and got[1] == "L_O"  # "Jane, thanks", never "Jane, Thanks"
    # a name keeps its capital after a comma
    rows = np.stack([row(C_COMMA=0.9), row(C_O=0.9)])
    assert labels(JointDecision(INV, prior=prior).decide(rows, ["thanks", "jane"], opens=True)) == ["C_COMMA", "C_O"]
    # a word the prior has not seen inside sentences: the model decides
    rows = np.stack([row(L_COMMA=0.9), row(C_O=0.9)])
    assert labels(JointDecision(INV, prior=prior).decide(rows, ["and", "zanzibar"]))[1] == "C_O"


def test_a_weighed_capital_rule_keeps_a_confident_capital_and_refuses_a_hesitant_one():
    """`capital_weight` (rule 2 as a cost, weight x log share): a capital the threshold refuses (share
    below 0.1) stays where the model is sure of it, and goes where it hesitates."""
    prior = CasePrior({"mars": (5, 95), "thanks": (1, 99)})  # capitals inside sentences: 5 % and 1 %
    sure = np.stack([row(L_O=0.9), row(C_O=0.95, L_O=0.04)])
    hesitant = np.stack([row(L_O=0.9), row(C_O=0.6, L_O=0.35)])
    weighed, threshold = JointDecision(INV, prior=prior, weight=0.4), JointDecision(INV, prior=prior)
    assert labels(threshold.decide(sure, ["on", "mars"]))[1] == "L_O"  # 5 % < 0.1: refused outright
    assert labels(weighed.decide(sure, ["on", "mars"]))[1] == "C_O"    # 0.95 x 0.05^0.4 > 0.04
    assert labels(weighed.decide(hesitant, ["so", "thanks"]))[1] == "L_O"  # 0.6 x 0.01^0.4 < 0.35
    # the engine builds its decision from the decode options
    from punctkit import load_model

    accurate = load_model("accurate", threads=1)
    joint = accurate.decision.joint
    assert (joint.weight, joint.threshold) == (accurate.options.capital_weight, accurate.options.capital_threshold)


def test_a_word_whose_own_form_starts_lower_case_keeps_it_after_a_period():
    lexicon = CaseLexicon({"iphone": "iPhone"})
    rows = np.stack([row(L_PERIOD=0.9), row(L_O=0.6, M_O=0.3)])
    got = labels(JointDecision(INV, lexicon=lexicon, lookahead=0).decide(rows, ["it", "iphone"]))
    assert got == ["L_PERIOD", "M_O"]
    # words without letters take any class
    rows = np.stack([row(L_PERIOD=0.9), row(L_O=0.9)])
    assert labels(JointDecision(INV).decide(rows, ["it", "2020"]))[1] == "L_O"


def test_fixed_marks_are_kept_and_inventories_without_case_are_their_arg_max():
    rows = np.stack([row(L_PERIOD=0.9), row(L_O=0.9)])
    got = labels(JointDecision(INV).decide(rows, ["so", "and"], forced=["COMMA", None]))
    assert got == ["L_COMMA", "L_O"]
    inv4 = get_inventory("4class")
    r = np.array([[0.1, 0.2, 0.6, 0.1], [0.7, 0.1, 0.1, 0.1]])
    assert JointDecision(inv4).decide(r, ["a", "b"]) == [2, 0]
    assert JointDecision(INV, enabled=False).decide(rows, ["so", "and"], best=[3, 1]) == [3, 1]


@pytest.mark.parametrize("seed", range(5))
def test_segments_label_as_the_whole_stream(seed):
    """Left to right, each word given the label before it and the row after it: a stream cut anywhere,
    each segment given the last label before it and the next word's row, labels as the whole."""
    rng = np.random.default_rng(seed)
    n = 300
    rows = rng.dirichlet(np.full(len(INV.labels), 0.3), size=n)
    vocab = ["and", "thanks", "jane", "nasa", "iphone", "2020", "the", "so"]
    words = [vocab[k] for k in rng.integers(0, len(vocab), n)]
    jd = JointDecision(INV, CaseLexicon({"iphone": "iPhone"}),
                       CasePrior({"thanks": (1, 50), "jane": (40, 40), "the": (0, 300)}))
    whole = jd.decide(rows, words, opens=True)
    cuts = sorted(set(rng.integers(1, n, 6).tolist())) + [n]
    parts: list[int] = []
    a = 0
    for b in cuts:
        parts += jd.decide(rows[a:b], words[a:b], prev=parts[-1] if parts else None, opens=a == 0,
                           next_row=rows[b] if b < n else None, next_word=words[b] if b < n else None)
        a = b
    assert parts == whole
    got = labels(whole)
    assert got[0][0] in "CUM"
    assert not any(mark_of(x) in SENTENCE_END and case_of(y) == "L" and any(c.isalpha() for c in w)
                   for x, y, w in zip(got, got[1:], words[1:]))


# ---------------------------------------------------------------- the shipped model, every path

@pytest.fixture(scope="module")
def words(iwslt_module):
    lines = (iwslt_module / "test2011").read_text(encoding="utf-8").splitlines()
    return [ln.split("\t")[0].lower() for ln in lines if ln.strip()][:1500]


@pytest.fixture(scope="module")
def iwslt_module():
    from tests.conftest import IWSLT

    if not (IWSLT / "test2011").is_file():
        pytest.skip(f"IWSLT reference data not found at {IWSLT}")
    return IWSLT


@pytest.fixture(scope="module")
def fast():
    from punctkit import load_model

    return load_model("fast", threads=1)


def contradictions(words: list[str], labs: list[str]) -> int:
    return sum(mark_of(a) in SENTENCE_END and case_of(b) == "L" and any(c.isalpha() for c in w)
               for a, b, w in zip(labs, labs[1:], words[1:]))


def test_no_path_writes_a_lower_case_word_after_a_sentence_end(fast, words, tmp_path):
    from punctkit.data.datadir import read_data_dir, write_data_dir
    from punctkit.data.formats import Utterance
    from punctkit.data.labels import get_inventory as inv_of
    from punctkit.decode_data import decode_dir

    offline = words_labels(fast, words)
    assert contradictions(words, offline) == 0
    # in segments of bounded memory (chunks of 200 words), the same labels
    fast.chunk_words = 200
    try:
        assert words_labels(fast, words) == offline
    finally:
        fast.chunk_words = 10000
    # streamed: unlimited look-ahead labels as offline; a bounded one holds the rule too
    for lookahead in (None, 3, 0):
        s = PunctStream(fast, lookahead)
        got = [lab for k in range(0, len(words), 7) for _, lab, _ in s.feed(words[k:k + 7])] + \
            [lab for _, lab, _ in s.finish()]
        assert len(got) == len(words)
        assert contradictions(words, got) == 0, lookahead
        if lookahead is None:
            assert got == offline
    # decode (a data directory, as the recipes score it)
    dd = tmp_path / "data"
    write_data_dir(dd, [Utterance("talk-000001", words[:700], ["L_O"] * 700),
                        Utterance("talk-000002", words[700:], ["L_O"] * (len(words) - 700))],
                   inv_of("truecase4"), {"talk-000001": "talk", "talk-000002": "talk"})
    decode_dir("fast", dd, tmp_path / "hyp")
    hyp = read_data_dir(tmp_path / "hyp")
    assert [lab for u in hyp.utterances for lab in u.labels] == offline
    # readable text: no sentence end followed by a lower-case first letter
    text = fast.punctuate(" ".join(words))
    toks = text.split()
    assert not any(a[-1] in ".?!" and b[:1].islower() for a, b in zip(toks, toks[1:]))


def test_the_joint_decision_halves_capitals_inside_sentences_on_test2011(fast, words):
    """test2011 read as the shipped model's users give it: capitals after a comma or no mark on words
    the training text writes in lower case there, with the joint decision and without."""

    joint = words_labels(fast, words)
    prior = fast.frontend.case_prior
    assert prior is not None and len(prior) > 10000

    def caps_inside(labs: list[str]) -> int:
        return sum(case_of(b) == "C" and mark_of(a) not in SENTENCE_END and (prior.capital_share(w) or 1) < 0.1
                   for a, b, w in zip(labs, labs[1:], words[1:]))

    from punctkit import load_model

    plain = load_model("fast", threads=1).with_options(joint=False)
    argmax = words_labels(plain, words)
    assert contradictions(words, argmax) > 0  # the model alone contradicts itself
    assert caps_inside(joint) == 0 and caps_inside(argmax) > 0


def test_a_malformed_case_prior_is_one_line(tmp_path):
    from punctkit.files import PunctkitError

    good = tmp_path / "case_prior.txt"
    good.write_text("thanks\t1\t100\njane\t50\t50\n")
    assert CasePrior.read(good).capital_share("Thanks") == 0.01
    for bad, why in (("thanks\t1\n", "case_prior.txt:1: expected"), ("x\ty\tz\n", "case_prior.txt:1: expected"),
                     ("a\t1\t2\nb\t0\t0\textra\n", "case_prior.txt:2: expected")):
        good.write_text(bad)
        with pytest.raises(PunctkitError, match=why):
            CasePrior.read(good)
    with pytest.raises(PunctkitError, match=r"prior:1: expected"):  # the strict reader of other sources
        CasePrior.parse(["thanks\t101\t100"], "prior")
    good.write_bytes(b"caf\xe9\t1\t2\n")
    with pytest.raises(PunctkitError, match="not UTF-8"):
        CasePrior.read(good)


def test_a_sorted_prior_file_is_looked_up_as_the_parsed_one(tmp_path):
    """A package's prior is read by bisection over its sorted lines (start-up: no dict built); every word,
    and words it lacks, get the shares that the strict reader gives, and an unsorted file still reads."""
    import zipfile

    from punctkit.pretrained import shipped_path

    with zipfile.ZipFile(shipped_path("fast")) as z:
        text = z.read("frontend/case_prior.txt").decode("utf-8")
    path = tmp_path / "case_prior.txt"
    path.write_text(text, encoding="utf-8")
    fast, strict = CasePrior.read(path), CasePrior.parse(text.split("\n"))
    words = list(strict.counts)
    assert len(fast) == len(strict) > 10_000 and fast._counts is None  # the bisection path was taken
    for w in words[::7] + [w.upper() for w in words[::501]] + ["", "zzzzqx", "Thanks", words[-1] + "a"]:
        assert fast.capital_share(w) == strict.capital_share(w), w
    assert fast.lines() == strict.lines()
    lines = text.splitlines()
    path.write_text("\n".join(lines[1:] + lines[:1]) + "\n", encoding="utf-8")  # out of order
    assert CasePrior.read(path).capital_share(words[0]) == strict.capital_share(words[0])


def test_the_scores_contradiction_count_skips_tokens_that_pass_through(tmp_path):
    """`punctkit score` counts a lower-case word after a sentence end only where punctuate could have
    re-cased it: `2-year-olds` (a number-led token) passes through as written, `then` does not."""
    from tests.punct_util import cli

    (tmp_path / "ref.txt").write_text("Yes. 2-year-olds came. Then we left.\n")
    (tmp_path / "hyp.txt").write_text("Yes. 2-year-olds came. then we left.\n")
    r = cli("score", tmp_path / "ref.txt", tmp_path / "hyp.txt", "--json")
    assert json.loads(r.stdout)["case"]["contradictions"] == {"after_end": 1, "lower_after_end": 1, "capital_inside": 0}
