"""Shipped models by name (`-m fast`, `-m accurate`), `punctkit models`, and initials as a class of words."""
from __future__ import annotations

import re

import pytest

from punctkit.files import PunctkitError
from punctkit.pretrained import SHIPPED, default_model, model_path
from tests.punct_util import cli


def test_a_shipped_models_name_is_its_package_and_an_unknown_name_one_line(tmp_path):
    assert model_path("fast") == default_model() and list(SHIPPED) == ["fast", "accurate"]
    assert model_path("accurate").name == "accurate.pkt" and model_path("accurate").is_file()
    with pytest.raises(PunctkitError, match=r"^unknown model 'precise': not a shipped model \(fast, accurate\)"):
        model_path("precise")
    own = tmp_path / "fast"  # a file of that name is the user's file
    own.write_bytes(b"x")
    assert model_path(own) == own
    r = cli("punctuate", "-m", "precise", ok=False)
    assert r.returncode != 0 and r.stderr.count("\n") == 1 and "(fast, accurate)" in r.stderr


def test_models_lists_a_line_per_model():
    """`punctkit models`: one line each, size, model and labels, speed and test F1 (punctuation/case) in short."""
    lines = cli("models").stdout.splitlines()
    assert [ln.split(":")[0] for ln in lines] == ["fast (default)", "accurate"]
    for ln, model in zip(lines, ("drnn_lwma", "plm_tagger")):
        assert re.search(rf": \d+\.\d MB, {model} \(truecase4\), [\d,]+(-[\d,]+)? words/s; F1 punctuation/case: "
                         rf"calls_test \d+\.\d/\d+\.\d, test_cased \d+\.\d/\d+\.\d$", ln), ln
        assert "rebuild" not in ln and "CC BY" not in ln
    from punctkit.package import read_package
    from punctkit.package.card import card_summary

    card = read_package(model_path("fast")).manifest["card"]
    f1 = card["results"]["decode_test_cased"]
    assert f"test_cased {f1['f1']:.1f}/{f1['case_f1']:.1f}" in lines[0] and lines[0].endswith(card_summary(card))
    # a card without speed or case figures, or quoting no test set: what it has
    assert card_summary({"model": "m", "inventory": "punct4", "results": {"decode_valid": {"f1": 61.26}}}) == \
        "m (punct4); F1 punctuation/case: valid 61.3"
    assert card_summary({}) == "? (?)"


def test_models_long_lists_both_with_their_cards():
    out = cli("models", "--long").stdout
    fast, accurate = out.split("\naccurate: ")
    assert fast.startswith("fast (default): fast.pkt, ") and accurate.startswith("accurate.pkt, ")
    for card in (fast, accurate):  # each: data, both licences, how to rebuild, speed, test2011 with case
        assert "Earnings-22 calls" in card and "CC BY-NC-ND 4.0" in card and "CC BY-SA 4.0" in card
        assert "rebuild: cd recipes/ted && " in card and "words/s" in card
        assert "test_cased: punctuation F1" in card and "exact-form case F1" in card and "calls_test:" in card
    assert "plm_tagger" in accurate and "drnn_lwma" in fast


def test_punctuate_and_the_api_take_the_name(tmp_path):
    from punctkit import load_model

    src = tmp_path / "x.txt"
    src.write_text("the analyst at j.p. morgan asked about the q&a and the m&a plans\n")
    named = cli("punctuate", "-m", "fast", src).stdout
    assert named == cli("punctuate", src).stdout
    assert "J.P." in named and "Q&A" in named and "M&A" in named
    assert load_model("fast").card == load_model().card


def test_the_accurate_model_passes_words_through_on_every_path(tmp_path):
    """`-m accurate` in punctuate (file, stream), the API, serve and decode: the same marks and case, the
    words as given."""
    from label_util import words_labels
    from punctkit import load_model
    from punctkit.data.datadir import read_data_dir, write_data_dir
    from punctkit.data.formats import Utterance
    from punctkit.data.labels import get_inventory
    from serve_util import Server, post

    text = "so what do you think nasa will do next i met the team in new york last week and jane thanks for coming\n"
    src = tmp_path / "x.txt"
    src.write_text(text)
    out = cli("punctuate", "-m", "accurate", "--threads", "1", src).stdout
    assert [w.strip(",.?!").lower() for w in out.split()] == text.split()
    assert out.startswith("So ") and "NASA" in out and "New York" in out and out.rstrip()[-1] in ".?!"
    streamed = cli("punctuate", "-m", "accurate", "--threads", "1", "--stream", src).stdout  # a line out a line in
    assert streamed.split() == out.split()
    accurate = load_model("accurate", threads=1)
    assert accurate.punctuate(text.strip()) == out.strip()
    server = Server("accurate", tmp_path / "serve.log")
    try:
        status, _, served = post(server.url + "/punctuate", text.encode())
    finally:
        server.stop()
    assert status == 200 and served == out
    # decode by name, on a data directory of the words (one stream), as a recipe scores it: the same labels
    words = text.split()
    write_data_dir(tmp_path / "data", [Utterance("talk-1", words, ["L_O"] * len(words))], get_inventory("truecase4"),
                   {"talk-1": "talk"})
    cli("decode", "accurate", tmp_path / "data", tmp_path / "hyp", "--threads", "1")
    assert read_data_dir(tmp_path / "hyp").utterances[0].labels == words_labels(accurate, words)


def test_the_accurate_model_averages_its_windows_on_every_path(tmp_path):
    """The shipped accurate package decodes with averaged windows (chosen on valid: recipes/ted/RESULTS.md);
    on 500 words of test2011 (several windows a word) punctuate, --stream fed 20 words a line, the API and
    decode label alike, and otherwise than the most central windows would."""

    from conftest import IWSLT
    from label_util import words_labels
    from punctkit import load_model
    from punctkit.data.datadir import read_data_dir, write_data_dir
    from punctkit.data.formats import Utterance
    from punctkit.data.labels import get_inventory

    if not (IWSLT / "test2011").is_file():
        pytest.skip("the IWSLT copy in ../shared is missing")
    words = [ln.split("\t")[0] for ln in (IWSLT / "test2011").read_text(encoding="utf-8").splitlines()[:500]]
    accurate = load_model("accurate", threads=1)
    assert accurate.options.overlap == "average" and 2 * accurate.options.step < accurate.window < len(words)
    src, lines = tmp_path / "x.txt", tmp_path / "lines.txt"
    src.write_text(" ".join(words) + "\n")  # one document
    lines.write_text("".join(" ".join(words[k:k + 20]) + "\n" for k in range(0, len(words), 20)))  # as they come
    out = cli("punctuate", "-m", "accurate", "--threads", "1", src).stdout.split()
    assert cli("punctuate", "-m", "accurate", "--threads", "1", "--stream", lines).stdout.split() == out
    assert accurate.punctuate(" ".join(words)).split() == out
    assert [w.strip(",.?!").lower() for w in out] == [w.lower() for w in words]
    write_data_dir(tmp_path / "data", [Utterance("talk-1", words, ["L_O"] * len(words))], get_inventory("truecase4"),
                   {"talk-1": "talk"})
    cli("decode", "accurate", tmp_path / "data", tmp_path / "hyp", "--threads", "1")
    labels = read_data_dir(tmp_path / "hyp").utterances[0].labels
    assert labels == words_labels(accurate, words)
    central = accurate.with_options(overlap="central")
    assert words_labels(central, words) != labels


def test_the_accurate_model_weighs_capitals_inside_sentences(tmp_path):
    """The shipped accurate package decides a capital inside a sentence by weighing the training text's share
    of that word's capitals there (decode option capital_weight, chosen on valid: recipes/ted/RESULTS.md):
    on 2,000 words of test2011 it keeps capitals the threshold refused, a sentence end is still never
    followed by a lower-case word, and decode with --capital-weight 0 labels as the threshold rule does."""

    from conftest import IWSLT
    from label_util import words_labels
    from punctkit import load_model
    from punctkit.data.datadir import read_data_dir, write_data_dir
    from punctkit.data.formats import Utterance
    from punctkit.data.labels import SENTENCE_END, case_of, get_inventory, mark_of, starts_with_letter

    if not (IWSLT / "test2011").is_file():
        pytest.skip("the IWSLT copy in ../shared is missing")
    words = [ln.split("\t")[0] for ln in (IWSLT / "test2011").read_text(encoding="utf-8").splitlines()[:2000]]
    accurate = load_model("accurate", threads=1)
    assert accurate.options.capital_weight > 0
    weighed = words_labels(accurate, words)
    threshold = words_labels(accurate.with_options(capital_weight=0.0), words)

    kept = [w for k, w in enumerate(words[1:], 1) if mark_of(weighed[k - 1]) not in SENTENCE_END
            and case_of(weighed[k]) == "C" and case_of(threshold[k]) == "L"]
    assert kept and all(accurate.frontend.case_prior.capital_share(w) < accurate.options.capital_threshold
                        for w in kept)  # capitals inside sentences the threshold refused
    for labels in (weighed, threshold):
        assert not any(mark_of(a) in SENTENCE_END and case_of(b) == "L" and starts_with_letter(w)
                       for a, b, w in zip(labels, labels[1:], words[1:]))  # `20s` begins with no letter
    write_data_dir(tmp_path / "data", [Utterance("talk-1", words, ["L_O"] * len(words))], get_inventory("truecase4"),
                   {"talk-1": "talk"})
    cli("decode", "accurate", tmp_path / "data", tmp_path / "hyp", "--threads", "1", "--capital-weight", "0")
    assert read_data_dir(tmp_path / "hyp").utterances[0].labels == threshold


def test_initials_are_a_class():
    from punctkit.data.labels import apply_case

    assert [apply_case(w, "capital") for w in ("j.p.", "u.k.", "q&a", "at&t")] == ["J.P.", "U.K.", "Q&A", "AT&T"]
    assert [apply_case(w, "lower") for w in ("i.e.", "e.g.", "p&l", "r&d")] == ["i.e.", "e.g.", "P&L", "R&D"]
    assert apply_case("e-mail", "capital") == "E-mail" and apply_case("rock&roll", "lower") == "rock&roll"


def test_an_int8_models_labels_do_not_depend_on_batching():
    """An int8 graph quantizes activations over each batch: the engine runs it a window at a time, so
    punctuate (any --batch-size), decode, serve and stream give a window the same labels. Over 600 words
    of test2011 (windows of 150 every 50), batches of 3 and of 16 windows label alike; a float graph
    keeps the batch asked for (16 at most by default)."""
    from label_util import words_labels
    from punctkit import load_model
    from tests.conftest import IWSLT

    if not (IWSLT / "test2011").is_file():
        pytest.skip(f"IWSLT reference data not found at {IWSLT}")
    lines = (IWSLT / "test2011").read_text(encoding="utf-8").splitlines()
    words = [ln.split("\t")[0].lower() for ln in lines if ln.strip()][:600]
    three, sixteen = (load_model("accurate", threads=1, batch_size=n) for n in (3, 16))
    assert three.options.batch_size == sixteen.options.batch_size == 1
    assert words_labels(three, words) == words_labels(sixteen, words)
    assert load_model("fast", threads=1).options.batch_size == 16
    assert load_model("fast", threads=1, batch_size=64).options.batch_size == 64
