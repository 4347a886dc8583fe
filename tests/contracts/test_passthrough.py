"""`punctkit punctuate` never changes a word: only marks and case.

The contract, as tested here: the input is split on whitespace; tokens made only of
marks are dropped (their mark goes to the word before); every other token comes out,
in order, one per output token. Comparing with `same_words` below, each output token
equals its input token once (1) the marks `,.?!;:…` are deleted from the token's
trailing run of marks and closing quotes/brackets, and (2) both are case-folded.
Tokens with a digit, `@` or a `/` that is not between two letters (numbers, addresses, URLs, paths)
keep their case too, except words of letters and digits (`q3`, `5g`, `covid-19`: `ALNUM_WORD`), which are
cased as words are (tests/data/formats/test_verbatim.py); letters joined by `/` (`and/or`, `TCP/IP`) are a word, cased
as
words are (tests/data/test_truecase.py: `Plus/minus` at a sentence start). Case files: tests/bad_inputs/words/.
"""
from __future__ import annotations

import json
import re
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from punct_util import cli, tiny_conf, train_tiny
from punctkit.cli import app
from punctkit.data.formats import split_text
from punctkit.data.formats.base import AsrUtterance, placed
from punctkit.data.labels import default_substitution, get_inventory
from punctkit.data.tokenize import Written, segment, tokens
from punctkit.infer.render import show_tokens

CASES = Path(__file__).resolve().parents[1] / "bad_inputs" / "words"
TINY = tiny_conf({"type": "transformer_tagger", "n_layers": 1, "d_model": 32, "n_heads": 2, "d_ff": 64,
                  "dropout": 0.1}, epochs=1)

MARKS = ",.?!;:…"
CLOSING = "\"'”’»›)]}"
MARK_ONLY = re.compile(r"(?:[,.;:?!…—–]|--+)+|-")  # what punctkit reads as punctuation on its own
LONE_DASH = re.compile(r"[-\u2010-\u2015]+")  # ... except a lone dash, which passes through (tokenize.passes_through)
TRAILING = re.compile(f"[{re.escape(MARKS + CLOSING)}]+$")
KEEPS_CASE = re.compile(r"[\d@]|(?<![^\W\d_])/|/(?![^\W\d_])")  # a number, an address, a URL, a path
# ... but for a word of letters and digits joined by `-`, a letter before the first `-` (`q3`, `5g`, `covid-19's`,
# `1st`, a false start `q3-`), in its quotes and brackets: recased as words are (not `2-year-old`, `3.5mm`)
ALNUM_WORD = re.compile(r"[\"'“‘„«‹(\[{]*(?=[^\W_]*[^\W\d_])[^\W_]+(?:-[^\W_]+)*(?:['’][^\W\d_]+)?-?"
                        f"[{re.escape(CLOSING)}]*")


def punctuated_text(written_words: list[Written], labels: list[str], capitalize: bool = True,
                    sentence_start: bool = True, kept: list[str] | None = None) -> str:
    """The words as written, each with its label's mark and case, one space apart (`show_tokens`)."""
    return " ".join(show_tokens(written_words, labels, capitalize, sentence_start, kept))


def norm(tok: str, fold: bool = True) -> str:
    """A token with the marks of its trailing run deleted (closers stay), case-folded with `fold`."""
    m = TRAILING.search(tok)
    if m:
        tok = tok[:m.start()] + "".join(c for c in m.group() if c not in MARKS)
    return tok.casefold() if fold else tok


def same_words(inp: str, out: str) -> list[tuple[str, str]]:
    """Assert that `out` has the words of `inp` (see the module docstring); the (input, output) tokens."""
    words = [t for t in inp.split() if not MARK_ONLY.fullmatch(t) or LONE_DASH.fullmatch(t)]
    got = out.split()
    assert [norm(t) for t in got] == [norm(t) for t in words], (inp, out)
    for t, o in zip(words, got):
        if KEEPS_CASE.search(t) and not ALNUM_WORD.fullmatch(norm(t)):
            assert norm(o, fold=False) == norm(t, fold=False), (t, o)
    return list(zip(words, got))


@pytest.fixture(scope="module")
def pkg(tmp_path_factory) -> Path:
    """A tiny 4-class transformer tagger (1 epoch on 8000 IWSLT words), packed."""
    d = tmp_path_factory.mktemp("words")
    cli("pack", train_tiny(d, TINY), "-o", d / "tiny.pkt")
    return d / "tiny.pkt"


def punctuate(*args: object) -> str:
    """Standard output of `punctkit punctuate ARGS` (the command run in this process: no torch start-up)."""
    r = CliRunner().invoke(app, ["punctuate", "--threads", "1", *map(str, args)])
    assert r.exit_code == 0, r.output
    return r.stdout


def run(pkg: Path, name: str, *args: str) -> list[str]:
    """Output lines of `punctkit punctuate` on the case file `name`."""
    return punctuate("-m", pkg, CASES / name, *args).splitlines()


def has_token(lines: list[str], word: str) -> bool:
    """Whether some output token is `word`, byte for byte, with at most marks after it."""
    return any(norm(t, fold=False) == norm(word, fold=False) for ln in lines for t in ln.split())


TEXT_CASES = ["urls.txt", "emails.txt", "numbers.txt", "currency.txt", "emoji.txt", "cjk.txt", "latin.txt",
              "scripts.txt", "acronyms.txt", "inner_marks.txt", "contractions.txt", "quotes.txt", "marks.txt"]


@pytest.mark.parametrize("name", TEXT_CASES)
@pytest.mark.parametrize("keep", [False, True])
def test_case_files_keep_their_words(pkg, name, keep):
    """Every case file, marks predicted or kept: same words, one output line per input line."""
    lines = run(pkg, name, *(["--keep-input-marks"] if keep else []))
    src = (CASES / name).read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(src)
    for i, o in zip(src, lines):
        for a, b in same_words(i, o):
            assert ".." not in b or ".." in a, (a, b)  # no mark is doubled (4 classes: no DOTS)


def test_urls_emails_numbers_currency_emoji_come_out_byte_for_byte(pkg):
    """The reproduced bug: `https://example.com/a?b=1` came out as `https example.com a b 1`."""
    exact = {
        "urls.txt": ["https://example.com/a?b=1", "http://Example.org/Path_to/page.html",
                     "www.python.org/3/library", "ftp://files.example.net/pub/"],
        "emails.txt": ["John.Smith@example.com", "support@Example.co.uk", "first.last+tag@mail.example.org"],
        "numbers.txt": ["1,000,000", "3.5", "10:30", "9/11", "1.000,50", "2.5e-3", "-4", "1st", "42nd"],
        "currency.txt": ["$5", "€10.50", "£3", "100%", "¥2000", "US$20", "5$", "3€"],
        "emoji.txt": ["😀", "👍🏽", "❤️", "🇫🇷", "great😀", "👨‍👩‍👧"],
        "cjk.txt": ["我们", "北京", "東京", "行きました", "서울", "你好世界"],
    }
    for name, words in exact.items():
        lines = run(pkg, name)
        for w in words:
            assert has_token(lines, w), (name, w, lines)


def test_acronyms_are_not_doubled_and_kept_marks_stay_as_written(pkg):
    """`u.s.` + a kept PERIOD (the ` .` token) is `u.s.`, not `u.s..`; `dr.` + `,` is `dr.,`;
    kept marks keep their text (`wait;` stays `wait;` though a 4-class model reads `;` as PERIOD)."""
    out = " ".join(run(pkg, "acronyms.txt", "--keep-input-marks")).lower()
    assert " u.s. then " in out and " dr., who " in out and " e.g. " in out and " u.n." in out
    quotes = run(pkg, "quotes.txt", "--keep-input-marks")[1]
    assert '"hello,"' in quotes.lower() and '"yes."' in quotes.lower() and "(u.s.)" in quotes.lower()
    marks = run(pkg, "marks.txt", "--keep-input-marks")[0].lower()
    assert marks.startswith("wait; really: yes! is it? fine...")
    # letters with inner periods keep their final one whatever the model predicts (`ph.d.`, never `ph.d,`)
    assert any(t.lower().startswith("ph.d.") for t in run(pkg, "inner_marks.txt")[0].split())


def test_split_contractions_stay_split(pkg):
    """IWSLT-style `do n't` is two input tokens, so two output tokens (no gluing), `i` capitalised."""
    out = run(pkg, "contractions.txt")[0]
    toks = [norm(t) for t in out.split()]
    assert toks[:2] == ["i", "'m"] and out.split()[0] == "I"
    assert ["do", "n't"] == toks[4:6] and "'s" in toks and "'re" in toks


def test_case_changes_only_for_alphabetic_words():
    """A sentence start capitalises `hello`, never a URL, an e-mail, a number or an emoji, nor a word that begins
    with a digit (`3rd`); words of letters and digits take their label's case (`q3` -> `Q3`)."""
    inv = get_inventory("4class")
    p = split_text("hello https://example.com/A x@y.org 3rd 😀 ça", inv, default_substitution(inv))
    out = punctuated_text(p.written, ["PERIOD"] * len(p.words))
    assert out == "Hello. https://example.com/A. x@y.org. 3rd. 😀. Ça."
    # case-aware labels: U capitalises, L lower-cases, words only
    assert punctuated_text(p.written, ["U_COMMA", "U_O", "U_O", "L_O", "U_O", "L_O"]) == \
        "Hello, https://example.com/A x@y.org 3rd 😀 ça"
    q3 = split_text("q3 5g mp3", inv, default_substitution(inv))
    assert punctuated_text(q3.written, ["U_O", "U_O", "L_O"]) == "Q3 5G mp3"
    q = split_text("NASA Https://X.org", inv, default_substitution(inv))
    assert punctuated_text(q.written, ["L_O", "L_O"]) == "nasa Https://X.org"
    # a case change that would make another word is not made (dotless `ı` upper-cased is `I`)
    r = split_text("ı am", inv, default_substitution(inv))
    assert punctuated_text(r.written, ["PERIOD", "PERIOD"]) == "ı. Am."
    # the model reads the word `segment` finds in a token; several or none: the token, lower-cased
    assert p.words == ["hello", "https://example.com/a", "x@y.org", "3rd", "😀", "ça"]


def test_asr_inputs_keep_their_words(pkg, tmp_path):
    """CTM, JSON lines and Kaldi text: each word comes back as written in every output format."""
    words = (CASES / "kaldi.text").read_text(encoding="utf-8").splitlines()[0].split()[1:]
    ctm = punctuate("-m", pkg, CASES / "asr.ctm", "--input-format", "ctm", "--format", "ctm")
    assert [norm(ln.split()[4]) for ln in ctm.splitlines()] == [norm(w) for w in words]
    assert [ln.split()[:4] + ln.split()[5:] for ln in ctm.splitlines()] == \
        [ln.split()[:4] + ln.split()[5:] for ln in (CASES / "asr.ctm").read_text(encoding="utf-8").splitlines()]
    js = punctuate("-m", pkg, CASES / "asr.jsonl", "--input-format", "jsonl", "--format", "jsonl")
    objs = [json.loads(ln) for ln in js.splitlines()]
    for obj in objs:
        same_words(" ".join(words), obj["text"])
    assert [norm(w["punctuated"]) for w in objs[0]["words"]] == [norm(w) for w in words]
    kaldi = punctuate("-m", pkg, CASES / "kaldi.text", "--input-format", "kaldi_text").splitlines()
    for ln, src in zip(kaldi, (CASES / "kaldi.text").read_text(encoding="utf-8").splitlines()):
        assert ln.split()[0] == src.split()[0]
        same_words(src.split(" ", 1)[1], ln.split(" ", 1)[1])


def test_json_word_with_a_space_is_kept_or_refused(pkg, tmp_path):
    """A JSON word may hold a space: jsonl output keeps it; a CTM field cannot, so that is a one-line error."""
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": "u", "words": [{"word": "new york", "start": 0, "end": 1},
                                                    {"word": "city", "start": 1, "end": 2}]}) + "\n")
    obj = json.loads(punctuate("-m", pkg, src, "--format", "jsonl"))
    assert [norm(w["punctuated"]) for w in obj["words"]] == ["new york", "city"]
    r = cli("punctuate", "-m", pkg, src, "--format", "ctm", "-o", tmp_path / "out.ctm", ok=False)
    assert r.returncode == 1 and r.stderr.count("\n") == 1
    assert "word 1 ('new york') contains a space" in r.stderr.lower()
    assert not (tmp_path / "out.ctm").exists()


def test_training_tokenization_is_unchanged():
    """prepare/formats still read IWSLT text with `segment`: marks and symbols split off as before."""
    inv = get_inventory("4class")
    seg = segment('He said: "see https://x.org/a?b=1, u.s. $5" do n\'t.', inv, default_substitution(inv))
    assert seg.words == ["He", "said", "see", "https", "x.org", "a", "b", "1", "u.s.", "5", "do", "n't"]
    assert [w for k, w in tokens("e.g. 3.5 e-mail") if k == "w"] == ["e.g.", "3.5", "e-mail"]


# ---------------------------------------------------------------- property: random text

_word = st.text(st.characters(whitelist_categories=("Lu", "Ll", "Lt", "Lo", "Nd", "Mn", "So", "Sc", "Pd", "Po",
                                                    "Ps", "Pe", "Pi", "Pf", "Sm")), min_size=1, max_size=8)
_token = st.one_of(
    _word,
    st.sampled_from(["https://example.com/a?b=1", "http://Ex.org/P_q/", "a.b@C.org", "1,000", "3.5", "10:30",
                     "$5", "€3", "😀", "👍🏽", "北京", "привет", "ΑΣ", "straße", "u.s.", "e.g.", "dr.", "n't", "'s",
                     "e-mail", "don't", "İstanbul", "ǅ", "ﬁne", "ı", "ß", ",", ".", "...", "?", "!", "--", "—", ";",
                     ":", '"', "(", ")", "«"]),
    st.text(st.characters(blacklist_categories=("Cs", "Cc", "Co", "Cn", "Zs", "Zl", "Zp")), min_size=1, max_size=8),
    st.builds(lambda q, w, m: q[0] + w + q[1] + m, st.sampled_from([("", ""), ('"', '"'), ("(", ")"), ("'", "'")]),
              st.text(string.ascii_letters, min_size=1, max_size=6), st.sampled_from(["", ",", ".", "?!", "...", ":"])),
)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(st.tuples(st.sampled_from([" ", "  ", "\t", " \t "]), _token), max_size=12),
                min_size=1, max_size=3),
       st.booleans())
def test_random_text_keeps_every_word(punct, lines, keep):
    """Random lines of words, URLs, numbers, emoji, scripts, quotes and marks, any spacing, through the shipped
    model."""
    text = "\n".join("".join(sep + tok for sep, tok in toks) for toks in lines)
    out = punct.punctuate(text, keep_input_marks=keep)
    src = text.splitlines() or [""]  # punctuate keeps line breaks; no input gives one empty line
    out_lines = out.split("\n")
    assert len(out_lines) == len(src)
    for i, o in zip(src, out_lines):
        same_words(i, o)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([" ", "\t"]), _token), max_size=15), st.sampled_from(["4class", "case6"]),
       st.randoms(use_true_random=False), st.booleans())
def test_any_labels_keep_every_word(toks, inventory, rnd, keep):
    """Whatever labels a model gives (case-aware ones too), the words come out (no model needed)."""
    inv = get_inventory(inventory)
    text = "".join(sep + tok for sep, tok in toks)
    p = split_text(text, inv, default_substitution(inv))
    labels = [rnd.choice(inv.labels) for _ in p.words]
    if keep:  # as the model is told: input marks fixed
        labels = [lab if m == "O" else inv.make(m, rnd.random() < 0.5) for m, lab in zip(p.marks, labels)]
    shown = show_tokens(p.written, labels, True, True, p.marks if keep else None)
    utt = AsrUtterance("x", p.words, p.marks, p.written, tags=p.tags)
    same_words(text, " ".join(placed(utt, shown)))  # the tokens that are not words in their places
