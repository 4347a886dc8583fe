"""True case: the case classes (L, C, U, M), the case lexicon, a true-case model trained, packed and
run, the recognizer's case kept in every input format, and IWSLT's split contractions read whole."""
from __future__ import annotations

import html
import json
import re
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT
from label_util import words_labels
from punct_util import PK, cli, tiny_conf, train_tiny
from punctkit.data.formats import split_text
from punctkit.data.labels import (
    INITIALISM,
    CaseLexicon,
    apply_case,
    case_class,
    default_substitution,
    get_inventory,
)
from punctkit.files import PunctkitError
from punctkit.infer.render import Casing, carries_case, show_tokens

TED = ROOT.parent / "shared" / "data" / "ted" / "talks"
INV4 = get_inventory("4class")
TC = get_inventory("truecase4")


# ------------------------------------------------------------------ classes and lexicon

@pytest.mark.parametrize("word,cls", [
    ("the", "L"), ("n't", "L"), ("3.5", "L"), ("The", "C"), ("I", "C"), ("A", "C"), ("Émile", "C"),
    ("NASA", "U"), ("U.S.", "U"), ("TV", "U"), ("iPhone", "M"), ("McDonald", "M"), ("YouTube", "M"),
    ("IPhone", "M"),
])
def test_case_class(word, cls):
    assert case_class(word) == cls


def test_truecase_labels_carry_class_and_mark():
    assert TC.labels[:4] == ("L_O", "C_O", "U_O", "M_O") and len(TC.labels) == 16
    assert TC.label_for("NASA", "COMMA") == "U_COMMA" and TC.relabel("M_O", "PERIOD") == "M_PERIOD"
    assert [TC.case_style(c) for c in "LCUM"] == ["lower", "capital", "upper", "mixed"]
    assert get_inventory("case4").case_style("U") == "capital"  # Faber's U is a capital, not UPPER


def test_lexicon_keeps_the_most_frequent_mixed_form_and_falls_back_to_capitalized():
    lex = CaseLexicon.build(["iPhone", "IPhone", "iPhone", "NASA", "McDonald", "the"])
    assert lex.forms == {"iphone": "iPhone", "mcdonald": "McDonald"}  # UPPER and lower words are no Mixed form
    assert apply_case("iphone", "mixed", lex) == "iPhone" and apply_case("youtube", "mixed", lex) == "Youtube"
    assert CaseLexicon.parse(lex.lines()).forms == lex.forms


@pytest.mark.parametrize("line", ["iphone iPhone", "iphone\tSamsung", "\tx", "Iphone\tiPhone"])
def test_bad_lexicon_line_is_one_line_error(line):
    with pytest.raises(PunctkitError, match=r"^lex:1: expected 'word<TAB>Form'"):
        CaseLexicon.parse([line], "lex")


def test_true_case_text_keeps_exact_forms_and_case4_lowers(tmp_path):
    from punctkit.data.formats import read

    (tmp_path / "a.txt").write_text("The NASA team met in New York, with an iPhone.\n")
    utts, _ = read(tmp_path / "a.txt", "text", TC)
    assert utts[0].words[:2] == ["The", "NASA"] and utts[0].labels[:2] == ["C_O", "U_O"]
    assert utts[0].labels[-1] == "M_PERIOD" and utts[0].labels[-4] == "C_COMMA"
    utts4, _ = read(tmp_path / "a.txt", "text", get_inventory("case4"))
    assert utts4[0].words[1] == "nasa" and utts4[0].labels[1] == "U_O"


# ------------------------------------------------------------------ showing case (no model)

def shown(text: str, labels: list[str], casing: Casing | bool = True) -> str:
    p = split_text(text, INV4, default_substitution(INV4))
    return " ".join(show_tokens(p.written, labels, casing))


SENT = "the NASA team met in New York with an iPhone"


def test_cased_input_keeps_its_case_inside_sentences():
    """The issue's example: `the NASA team met in New York with an iPhone` keeps NASA, New York, iPhone."""
    assert shown(SENT, ["O"] * 9 + ["PERIOD"]) == "The NASA team met in New York with an iPhone."
    # lower-case input says nothing of case: the model's (here the rule's) case
    assert shown(SENT.lower(), ["O"] * 9 + ["PERIOD"]) == "The nasa team met in new york with an iphone."
    # --recase: the model's case everywhere; --no-capitalize: every word as it came
    assert shown(SENT, ["O"] * 9 + ["PERIOD"], Casing(recase=True)) == "The nasa team met in new york with an iphone."
    assert shown(SENT, ["O"] * 9 + ["PERIOD"], Casing(capitalize=False)) == SENT + "."


def test_sentence_start_capitals_follow_the_predicted_marks():
    text = "So we met. Then NASA came"
    # a new sentence start is capitalised; `Then`, capitalised only because it began the input's
    # sentence, takes the model's case once the new marks put it inside a sentence; NASA stays
    assert shown(text, ["COMMA", "O", "PERIOD", "O", "O", "PERIOD"]) == "So, we met. Then NASA came."
    assert shown(text, ["O", "O", "O", "O", "O", "PERIOD"]) == "So we met then NASA came."
    assert shown(text, ["O", "PERIOD", "O", "O", "O", "PERIOD"]) == "So we. Met then NASA came."
    # a name at the input's sentence start stays for a true-case model that says C
    tc = Casing(TC)
    p = split_text("So we met. John came", INV4, default_substitution(INV4))
    assert show_tokens(p.written, ["C_O", "L_O", "L_O", "C_O", "L_PERIOD"], tc) == \
        ["So", "we", "met", "John", "came."]


def test_kept_input_marks_keep_the_input_case():
    p = split_text("so we met. Then NASA came", INV4, default_substitution(INV4))
    out = show_tokens(p.written, ["O", "O", "PERIOD", "O", "O", "PERIOD"], True, forced=p.marks)
    assert out == ["so", "we", "met.", "Then", "NASA", "came."]


def test_true_case_labels_show_each_class():
    lex = CaseLexicon({"iphone": "iPhone"})
    p = split_text(SENT.lower() + " on youtube", INV4, default_substitution(INV4))
    labels = ["C_O", "U_O", "L_O", "L_O", "L_O", "C_O", "C_O", "L_O", "L_O", "M_O", "L_O", "M_PERIOD"]
    assert " ".join(show_tokens(p.written, labels, Casing(TC, lex))) == \
        "The NASA team met in New York with an iPhone on Youtube."


@pytest.mark.parametrize("word,start", [
    ("sub-Saharan", "Sub-Saharan"), ("ex-US", "Ex-US"), ("al-Qaeda", "Al-Qaeda"), ("non-GAAP", "Non-GAAP"),
    ("well", "Well"), ("i'm", "I'm"), ("McDonald", "McDonald"), ("NASA", "NASA"),
    ("iPhone", "iPhone"), ("eBay", "eBay"), ("fMRI", "fMRI"),  # names written so stay, as the training text has them
])
def test_a_sentence_begins_with_a_capital_unless_a_name_is_written_otherwise(word, start):
    from punctkit.data.labels import sentence_start_case

    assert sentence_start_case(word) == start


def test_a_mixed_form_that_starts_lower_case_is_capitalised_at_a_sentence_start():
    """`ex-US` is Mixed (its lexicon form starts lower case): after a period it was shown `two. ex-US`, a
    sentence begun in lower case; now `Ex-US`, in punctuate's words, in decode's, and across utterances."""
    from punctkit.data.labels import cased_words

    lex = CaseLexicon({"ex-us": "ex-US", "sub-saharan": "sub-Saharan", "iphone": "iPhone"})
    words = ["in", "twenty", "twenty", "two", "ex-us", "sales", "and", "sub-saharan", "africa", "grew", "iphone"]
    labels = ["C_O", "L_O", "L_O", "L_PERIOD", "M_O", "L_O", "L_O", "M_O", "C_O", "L_PERIOD", "M_O"]
    want = "In twenty twenty two. Ex-US sales and sub-Saharan Africa grew. iPhone"
    p = split_text(" ".join(words), INV4, default_substitution(INV4))
    assert " ".join(show_tokens(p.written, labels, Casing(TC, lex))) == want
    assert " ".join(cased_words(words, labels, TC, lex)) == want.replace(".", "")
    # an utterance that goes on a stream after a sentence end, and one that goes on inside a sentence
    assert cased_words(["ex-us", "grew"], ["M_O", "L_O"], TC, lex, start=True)[0] == "Ex-US"
    assert cased_words(["ex-us", "grew"], ["M_O", "L_O"], TC, lex, start=False)[0] == "ex-US"
    # a cased input: its own case inside sentences, a capital where the predicted marks begin one
    p = split_text("Revenue grew in 2022 ex-US sales were flat", INV4, default_substitution(INV4))
    got = show_tokens(p.written, ["C_O", "L_O", "L_O", "L_PERIOD", "M_O", "L_O", "L_O", "L_PERIOD"], Casing(TC, lex))
    assert " ".join(got) == "Revenue grew in 2022. Ex-US sales were flat."
    # words joined by a slash are words too (`it. plus/minus` was shown so): URLs and numbers stay as written
    p = split_text("put a number on it plus/minus 100 /seg 24/7", INV4, default_substitution(INV4))
    got = show_tokens(p.written, ["L_O"] * 4 + ["L_PERIOD", "C_O", "L_PERIOD", "C_PERIOD", "C_PERIOD"], Casing(TC))
    assert " ".join(got) == "put a number on it. Plus/minus 100. /seg. 24/7."
    # a cased input keeps the case it carries in them, a sentence start aside: `AC/DC`, not the label's `Ac/dc`
    p = split_text("We saw AC/DC and/or Queen", INV4, default_substitution(INV4))
    got = show_tokens(p.written, ["C_O", "L_O", "C_PERIOD", "C_O", "L_PERIOD"], Casing(TC))
    assert " ".join(got) == "We saw AC/DC. And/or Queen."


def test_the_shipped_model_begins_no_sentence_in_lower_case(tmp_path):
    """The shipped accurate model labels `ex-us` Mixed at a stream's start and after a period that ends the
    utterance before it in its stream: decode and punctuate show `Ex-US` there."""
    from punctkit.data.datadir import read_data_dir
    from punctkit.data.labels import SENTENCE_END, mark_of, sentence_start_case
    from punctkit.decode_data import decode_dir

    src = tmp_path / "src"
    src.mkdir()
    (src / "text").write_text("a1 thank you all very much for joining us today\n"
                              "a2 ex-us revenue was flat in the quarter\nb1 ex-us revenue was flat in the quarter\n")
    (src / "utt2spk").write_text("a1 a\na2 a\nb1 b\n")
    decode_dir("accurate", src, tmp_path / "hyp")
    hyp = {u.uttid: u for u in read_data_dir(tmp_path / "hyp").utterances}
    starts = []
    for stream in (["a1", "a2"], ["b1"]):
        start = True
        for u in (hyp[k] for k in stream):
            for w, lab in zip(u.words, u.labels):
                if start:
                    starts.append((w, lab))
                start = mark_of(lab) in SENTENCE_END
    assert all(sentence_start_case(w) == w for w, _ in starts), starts
    assert any(lab[0] == "M" and w == "Ex-US" for w, lab in starts), starts  # the case the fix is for
    out = subprocess.run([*PK, "punctuate", "-m", "accurate", "--keep-input-marks", "-"], capture_output=True,
                         text=True, input="revenue grew eight percent in twenty twenty two. ex-us sales were flat\n")
    assert out.returncode == 0 and "two. Ex-" in out.stdout, out.stdout + out.stderr


@pytest.mark.parametrize("word,style,shown", [
    ("tv's", "upper", "TV's"), ("fbi's", "upper", "FBI's"), ("nasa'll", "upper", "NASA'll"),
    ("mcdonald's", "mixed", "McDonald's"), ("it's", "capital", "It's"), ("i'm", "capital", "I'm"),
    ("don't", "capital", "Don't"), ("TV'S", "lower", "tv's"),
    ("o'clock", "upper", "O'CLOCK"), ("we've", "capital", "We've"),  # not split off in IWSLT's text: whole
])
def test_a_contractions_case_class_is_its_stems(word, style, shown):
    """'TV's' is 'TV' + ''s' (issue 34): a case class applies to the stem, the contraction stays lower,
    in decode's words and in punctuate's shown words alike (apply_case is the one place)."""
    from punctkit.data.labels import apply_case

    assert apply_case(word, style, CaseLexicon({"mcdonald": "McDonald"})) == shown
    assert apply_case(word, style, CaseLexicon({"mcdonald": "McDonald"})).lower() == word.lower()  # the word passes


def test_what_carries_case():
    def written(t: str):
        return split_text(t, INV4, default_substitution(INV4)).written
    assert carries_case(written("So what"))
    assert not carries_case(written("so what")) and not carries_case(written("SO WHAT"))
    assert not carries_case(written("so https://Example.com/A"))  # a URL says nothing of case


# ------------------------------------------------------------------ a true-case model end to end

@pytest.fixture(scope="module")
def tc_pkg(tmp_path_factory) -> Path:
    """A tiny true-case model: 1 epoch on about 12,000 words of TED talks, packed with ONNX."""
    if not TED.is_dir():
        pytest.skip(f"TED talks not found at {TED}")
    from punctkit.data.prepare import prepare
    from punctkit.fit import train

    d = tmp_path_factory.mktemp("tc")
    text = [html.unescape(line) for f in sorted(TED.iterdir())[:12] for line in
            f.read_text(encoding="utf-8").splitlines() if not line.startswith(("Translator:", "Reviewer:"))]
    (d / "ted.txt").write_text("\n".join(re.sub(r"\([A-Z][a-z]+\)", "", t) for t in text) + "\n")
    prepare([d / "ted.txt"], d / "train", inventory="truecase4", block_len=100)
    conf = tiny_conf({"type": "drnn_lwma", "n_layers": 1, "n_heads": 1, "d_model": 32}, epochs=1)
    train(conf, d / "train", d / "train", d / "exp", quiet=True)
    cli("pack", d / "exp", "-o", d / "tc.pkt", "--onnx")
    return d / "tc.pkt"


def test_stage3_gives_true_case_data_a_lowercasing_frontend_and_lexicon(tc_pkg):
    from punctkit.text.frontend import load_frontend

    fe = load_frontend(tc_pkg.parent / "exp" / "frontend")
    assert fe.lowercase and fe.word_ids("NASA") == fe.word_ids("nasa")
    assert not fe.split_contractions  # its text keeps `don't` whole: users' words are read whole too
    assert fe.case_lexicon is not None and len(fe.case_lexicon) > 0
    assert all(case_class(form) == "M" for form in fe.case_lexicon.forms.values())
    vocab = (tc_pkg.parent / "exp" / "frontend" / "vocab.txt").read_text(encoding="utf-8")
    assert vocab == vocab.lower()


@pytest.mark.parametrize("setting, reads_lower", [(None, True), (False, False), (True, True)])
def test_cased_4class_text_is_read_lowercased_unless_the_config_says(tmp_path, setting, reads_lower):
    """Published text prepared into 4class keeps its capitals in the data; a model that learned from
    them would meet none in IWSLT's valid or a recognizer's words, so stage 3 lower-cases unless told."""
    if not TED.is_dir():
        pytest.skip(f"TED talks not found at {TED}")
    from punctkit.config import load_config
    from punctkit.data.prepare import prepare
    from punctkit.train.inputs import prepare_inputs

    text = [line for f in sorted(TED.iterdir())[:3] for line in f.read_text(encoding="utf-8").splitlines()]
    (tmp_path / "ted.txt").write_text("\n".join(text) + "\n", encoding="utf-8")
    prepare([tmp_path / "ted.txt"], tmp_path / "train", inventory="4class", block_len=100)
    assert any(w != w.lower() for w in (tmp_path / "train" / "text").read_text(encoding="utf-8").split())
    frontend = {"kind": "word", "min_count": 1} | ({} if setting is None else {"lowercase": setting})
    conf = load_config({"frontend": frontend, "model": {"type": "drnn_lwma"}})
    said: list[str] = []
    fe = prepare_inputs(conf, tmp_path / "train", tmp_path / "inputs", log=said.append)
    vocab = (tmp_path / "inputs" / "frontend" / "vocab.txt").read_text(encoding="utf-8")
    assert fe.lowercase is reads_lower and (vocab == vocab.lower()) is reads_lower
    assert any("carries case" in line for line in said) is (setting is None)


def test_lowercase_text_is_read_as_it_is(tmp_path):
    if not (ROOT.parent / "shared" / "data" / "iwslt" / "dev2012").is_file():
        pytest.skip("IWSLT reference data not found")
    from punctkit.config import load_config
    from punctkit.data.prepare import prepare
    from punctkit.train.inputs import prepare_inputs

    prepare([ROOT.parent / "shared" / "data" / "iwslt" / "dev2012"], tmp_path / "train", block_len=100,
            lines=(1, 3000))
    said: list[str] = []
    conf = load_config({"frontend": {"kind": "word", "min_count": 1}, "model": {"type": "drnn_lwma"}})
    fe = prepare_inputs(conf, tmp_path / "train", tmp_path / "inputs", log=said.append)
    assert not fe.lowercase and not any("carries case" in line for line in said)


def test_decode_writes_words_in_the_case_their_labels_show(tc_pkg, tmp_path):
    from punctkit.data.datadir import read_data_dir
    from punctkit.decode_data import decode_dir

    exp = tc_pkg.parent / "exp"
    decode_dir(exp, tc_pkg.parent / "train", tmp_path / "hyp")
    hyp = read_data_dir(tmp_path / "hyp")
    ref = read_data_dir(tc_pkg.parent / "train")
    for h, r in zip(hyp.utterances, ref.utterances):
        assert [w.casefold() for w in h.words] == [w.casefold() for w in r.words]
        for w, lab in zip(h.words, h.labels):
            # initials shown with a capital are capitals throughout (`I.Q.` under C: labels.INITIALISM),
            # and letters joined by `&` are never lower case (`R&D` under L)
            assert case_class(w) == lab[0] or not any(c.isalpha() for c in w) or lab[0] == "M" \
                or (INITIALISM.fullmatch(w) is not None and (lab[0] in "CU" or "&" in w) and case_class(w) == "U")



@pytest.mark.parametrize("backend", ["torch", "onnx"])
def test_punctuate_writes_corpus_words_as_decode_does(tc_pkg, tmp_path, backend):
    """One engine: `punctuate --format twocol` (and kaldi_text) of the data's lower-case words writes
    the words in their labels' case, as `decode` writes them, with the same labels (one stream each),
    so exact-form case scoring reads the same thing from both."""
    from punctkit.data.formats import read
    from punctkit.decode_data import decode_dir

    data = tc_pkg.parent / "train"
    decode_dir(tc_pkg.parent / "exp", data, tmp_path / "dec.twocol", fmt="twocol")
    dec, _ = read(tmp_path / "dec.twocol")
    (tmp_path / "words.txt").write_text(" ".join(w.lower() for u in dec for w in u.words) + "\n")
    cli("punctuate", "-m", tc_pkg, tmp_path / "words.txt", "--format", "twocol", "--backend", backend,
        "--threads", 1, "-o", tmp_path / "hyp.twocol")
    got, _ = read(tmp_path / "hyp.twocol")
    want_words, got_words = [w for u in dec for w in u.words], [w for u in got for w in u.words]
    assert any(w != w.lower() for w in got_words)  # cased: the labels' case is written
    if backend == "torch":
        assert got_words == want_words
        assert [lab for u in got for lab in u.labels] == [lab for u in dec for lab in u.labels]
    else:  # onnxruntime: near-ties may differ, each word in its own label's case
        assert sum(a != b for a, b in zip(got_words, want_words)) <= len(want_words) // 100


FORMAT_INPUTS = {
    "text": lambda ws: " ".join(ws) + "\n",
    "kaldi_text": lambda ws: "utt1 " + " ".join(ws) + "\n",
    "ctm": lambda ws: "".join(f"utt1 A {i * 0.5:.2f} 0.40 {w} 0.9\n" for i, w in enumerate(ws)),
    "jsonl": lambda ws: json.dumps({"id": "utt1", "text": " ".join(ws)}) + "\n",
    "nemo": lambda ws: json.dumps({"audio_filepath": "a.wav", "pred_text": " ".join(ws)}) + "\n",
    "vosk": lambda ws: json.dumps({"result": [{"word": w, "start": i * 0.5, "end": i * 0.5 + 0.4, "conf": 1.0}
                                              for i, w in enumerate(ws)], "text": " ".join(ws)}),
    "whisper": lambda ws: json.dumps({"text": " " + " ".join(ws), "segments": [
        {"start": 0.0, "end": 9.0, "text": " " + " ".join(ws),
         "words": [{"word": " " + w, "start": i * 0.5, "end": i * 0.5 + 0.4} for i, w in enumerate(ws)]}]}),
}
CASED = "and so the NASA team met in New York with an iPhone and then I went to see McDonald".split()


@pytest.mark.parametrize("fmt", sorted(FORMAT_INPUTS))
def test_every_input_format_keeps_the_recognizers_case_and_its_words(tc_pkg, tmp_path, fmt):
    """A true-case model over cased recognizer output in every format: the words come back (case aside,
    only marks change), and inside sentences each keeps the case the recognizer gave it."""
    src = tmp_path / f"in.{fmt}"
    src.write_text(FORMAT_INPUTS[fmt](CASED), encoding="utf-8")
    out = cli("punctuate", "-m", tc_pkg, src, "--input-format", fmt, "--format", "twocol", "--threads", "1").stdout
    words = [ln.split("\t")[0] for ln in out.splitlines() if ln.strip()]
    assert [w.casefold() for w in words] == [w.casefold() for w in CASED]
    readable = cli("punctuate", "-m", tc_pkg, src, "--input-format", fmt, "--threads", "1").stdout
    shown_words = [re.sub(r"[,.?]+$", "", t) for t in readable.split() if not t.startswith(("utt1", "{"))]
    if fmt in ("jsonl", "nemo", "vosk", "whisper"):
        return  # their JSON output is checked word by word above
    for w, s in zip(CASED, shown_words):
        if w != w.lower() and w != "I":  # NASA, New, York, iPhone, McDonald keep their case
            assert s == w, (fmt, readable)
    recased = cli("punctuate", "-m", tc_pkg, src, "--input-format", fmt, "--threads", "1", "--recase").stdout
    assert [t.casefold() for t in recased.split()] == [t.casefold() for t in readable.split()]
    flat = cli("punctuate", "-m", tc_pkg, src, "--input-format", fmt, "--threads", "1", "--no-capitalize").stdout
    assert [re.sub(r"[,.?]+$", "", t) for t in flat.split() if not t.startswith("utt1")] == CASED


def test_lowercase_input_takes_the_models_true_case(tc_pkg):
    """Lower-case input: every word shown in the class the model gives it, Mixed from the lexicon."""
    from punctkit import load_model

    punct = load_model(tc_pkg, threads=1)
    words = " ".join(CASED).lower().split()
    labels = words_labels(punct, words)
    out = punct.punctuate(" ".join(words)).split()
    lex = punct.frontend.case_lexicon
    for w, lab, s in zip(words, labels, out):
        style = punct.inventory.case_style(lab[0])
        assert re.sub(r"[,.?]+$", "", s) == apply_case(w, style, lex)


# ------------------------------------------------------------------ IWSLT's split contractions

@pytest.fixture(scope="module")
def iwslt_pkg(tmp_path_factory) -> Path:
    """A tiny 4-class model on IWSLT words (contractions split: `do n't`), packed."""
    d = tmp_path_factory.mktemp("iw")
    cli("pack", train_tiny(d, tiny_conf({"type": "drnn_lwma", "n_layers": 1, "n_heads": 1, "d_model": 32},
                                        epochs=1)), "-o", d / "iw.pkt")
    return d / "iw.pkt"


WHISPER_STYLE = "Well, I'm not sure. I don't think TV's NASA won't do it, can't say. It's McDonald's."


def test_split_contractions_detected_at_stage3(iwslt_pkg):
    from punctkit.text.frontend import load_frontend

    assert load_frontend(iwslt_pkg.parent / "exp" / "frontend").split_contractions


def test_users_contractions_are_split_for_the_model_and_shown_whole(iwslt_pkg):
    """Whisper-style `I'm`, `don't`, `won't`, `can't`, `TV's`: the model reads `i 'm`, `do n't`, ...
    (as in its training text); the output shows each word as written, never `I 'm`."""
    from punctkit import load_model
    from punctkit.decode.model_words import ModelWords

    punct = load_model(iwslt_pkg, threads=1)
    words = split_text(WHISPER_STYLE, INV4, default_substitution(INV4)).words
    m = ModelWords(words, punct.frontend.split_contractions)
    assert m.words[1:3] == ["i", "'m"] and "n't" in m.words and "ca" in m.words and "wo" in m.words
    for out in (punct.punctuate(WHISPER_STYLE),
                subprocess.run(PK + ["punctuate", "-m", str(iwslt_pkg), "--threads", "1", "--stream",
                                     "--lookahead", "2"], input=WHISPER_STYLE, capture_output=True, text=True,
                               check=True).stdout):
        toks = out.split()
        assert [re.sub(r"[,.?]+$", "", t).casefold() for t in toks] == \
            [re.sub(r"[,.?]+$", "", t).casefold() for t in WHISPER_STYLE.split()]
        assert "'m" not in toks and "n't" not in toks and "I'm" in [t.strip(",.?") for t in toks]
    # one label per input word, twocol too
    assert len(words_labels(punct, words)) == len(words)


def test_card_notes_name_the_rebuild_command_and_the_licence(tc_pkg, tmp_path):
    exp = tc_pkg.parent / "exp"
    cli("pack", exp, "-o", tmp_path / "n.pkt", "--onnx-only", "--card-note", "licence=CC BY-NC-ND 4.0",
        "--card-note", "rebuild=cd recipes/ted && ./run.sh")
    from punctkit import load_model

    card = load_model(tmp_path / "n.pkt").card
    assert card["licence"] == "CC BY-NC-ND 4.0" and card["rebuild"].startswith("cd recipes/ted")
    for bad in ("inventory=x", "nothing"):
        r = cli("pack", exp, "-o", tmp_path / "m.pkt", "--card-note", bad, ok=False)
        assert r.returncode == 1 and r.stderr.count("\n") == 1 and "--card-note" in r.stderr
    assert not (tmp_path / "m.pkt").exists()
