"""Rev's NLP format (`nlp`) on real Earnings-22 calls: prepare reads a call as one stream of words
(non-speech tags counted, never words), punctuate writes the format back with only the token's case
and the `punctuation` and `case` columns changed, score takes it as a reference; and the recipe's
calls splits are by call and balanced over the accent regions."""
from __future__ import annotations

import csv
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from punctkit.data.formats import detect_format, read
from punctkit.data.formats.nlp import rev_case
from punctkit.files import PunctkitError
from tests.conftest import ROOT
from tests.punct_util import cli

CALLS = ROOT.parent / "shared" / "data" / "earnings22"


@pytest.fixture(scope="module")
def call() -> Path:
    path = CALLS / "calls" / "4329526.aligned.nlp"
    if not path.is_file():
        pytest.skip(f"Earnings-22 not found at {CALLS}")
    return path


def rows(path: Path) -> list[list[str]]:
    return [ln.split("|") for ln in path.read_text(encoding="utf-8").splitlines()[1:] if ln.strip()]


def test_prepare_reads_a_call_as_one_stream_of_its_spoken_words(call, tmp_path):
    cli("prepare", call, "-o", tmp_path / "d", "--inventory", "truecase4")
    lines = (tmp_path / "d" / "text").read_text().splitlines()  # an utterance a speaker turn (its speakers, times)
    words = [w for ln in lines for w in ln.split()[1:]]
    assert len(lines) > 1 and (tmp_path / "d" / "segments").is_file()
    speech = [r for r in rows(call) if not (r[0].startswith("<") and r[0].endswith(">"))]
    tags = Counter(r[0] for r in rows(call) if r[0].startswith("<"))
    assert tags and len(words) == len(speech)  # one word a token; the tags are none
    log = (tmp_path / "d" / "prepare.log").read_text()
    for tag, n in tags.items():
        assert f"non-speech tokens skipped ({tag}): {n}" in log
    assert detect_format(call) == "nlp"
    utts, inv = read(call, "nlp", "truecase4")
    assert len(utts) == 1 and utts[0].uttid == call.name  # a call is one stream
    # the exact forms and their marks: `…` is no mark in 4-class inventories, DOTS in 6-class
    got = dict(zip(utts[0].words, utts[0].labels))
    assert got["LATAM"].startswith("U_")
    dots = sum(1 for r in rows(call) if r[4] == "…")
    six, _ = read(call, "nlp", "6class")
    assert dots and six[0].labels.count("DOTS") == dots
    assert all(not lab.endswith("DOTS") for lab in utts[0].labels)


def test_the_case_column_is_revs_class_of_the_token(call):
    """Rev's own `case` column agrees with `rev_case` of its tokens (the README notes a few noisy rows)."""
    got = [(rev_case(r[0]), r[6]) for r in rows(call) if not r[0].startswith("<")]
    assert sum(a == b for a, b in got) >= 0.99 * len(got)
    assert rev_case("I") == "CA" and rev_case("Good") == "UC"
    assert rev_case("iPhone") == "MC" and rev_case("30%") == "N/A"


def test_semicolons_and_exclamations_map_as_the_substitution_rules_say(tmp_path):
    f = tmp_path / "x.nlp"
    f.write_text("token|speaker|ts|endTs|punctuation|prepunctuation|case|tags|oldTs|oldEndTs|ali_comment\n"
                 "yes|0|0.1|0.2|;||LC|[]|||\nwow|0|||!||LC|[]|||\n<laugh>|0|||||N/A|[]|||\nok|0|||…||LC|[]|||\n")
    utts, _ = read(f, "nlp", "4class")
    assert utts[0].words == ["yes", "wow", "ok"] and utts[0].labels == ["PERIOD", "PERIOD", "O"]
    bad = tmp_path / "bad.nlp"
    bad.write_text("token|speaker|ts|endTs|punctuation|prepunctuation|case\nyes|0|x\n")
    with pytest.raises(PunctkitError, match=r"bad.nlp:2: 3 fields where the header has 7"):
        read(bad, "nlp", "4class")


def test_punctuate_writes_the_format_back(call, tmp_path):
    lines = call.read_text(encoding="utf-8").splitlines()[:400]
    header, body = lines[0], [ln.split("|") for ln in lines[1:]]
    cols = header.split("|")
    tok, pun, case = cols.index("token"), cols.index("punctuation"), cols.index("case")
    for r in body:  # as a recognizer gives it: lower case, no marks, no case class
        if not r[tok].startswith("<"):
            r[tok], r[pun], r[case] = r[tok].lower(), "", ""
    body.insert(5, ["<laugh>", "0", "", "", "", "", "N/A", "[]", "", "", ""])
    src = tmp_path / "in.nlp"
    src.write_text("\n".join([header] + ["|".join(r) for r in body]) + "\n", encoding="utf-8")
    cli("punctuate", src, "--format", "nlp", "-o", tmp_path / "out.nlp")
    out = (tmp_path / "out.nlp").read_text(encoding="utf-8").splitlines()
    assert out[0] == header and len(out) == len(body) + 1
    got = [ln.split("|") for ln in out[1:]]
    for r, g in zip(body, got):
        assert len(g) == len(r)
        if r[tok].startswith("<"):
            assert g == r  # non-speech rows pass through
            continue
        assert g[tok].lower() == r[tok].lower()  # the word, only its case changed
        assert g[case] == rev_case(g[tok])
        assert all(g[k] == r[k] for k in range(len(r)) if k not in (tok, pun, case))  # times, tags, ... kept
        assert g[pun] in ("", ",", ".", "?")
    marks = [g[pun] for g in got if g[pun]]
    assert marks.count(".") > 5 and marks.count(",") > 5
    assert any(g[tok][:1].isupper() for g in got)
    # sentence ends are followed by a capital (the model sets the case of lower-case input)
    speech = [g for g in got if not g[tok].startswith("<")]
    assert not any(a[pun] in (".", "?") and b[tok][:1].islower() for a, b in zip(speech, speech[1:]))
    # score takes the call as its reference
    ref = tmp_path / "ref.nlp"
    ref.write_text("\n".join(lines[:1] + [ln for ln in lines[1:]]) + "\n", encoding="utf-8")
    r = cli("score", ref, tmp_path / "out.nlp", "--hyp-format", "nlp", "--json")
    assert '"f1"' in r.stdout


def test_the_calls_are_split_by_call_balanced_over_regions(tmp_path):
    if not (CALLS / "metadata.csv").is_file():
        pytest.skip(f"Earnings-22 not found at {CALLS}")
    lists = ROOT / "local" / "ted" / "lists"
    got = {n: (lists / f"{n}.txt").read_text().split() for n in ("calls_train", "calls_valid", "calls_test")}
    assert [len(got[n]) for n in ("calls_train", "calls_valid", "calls_test")] == [105, 10, 10]
    assert not set(got["calls_train"]) & set(got["calls_valid"])
    assert not set(got["calls_valid"]) & set(got["calls_test"])
    region = {r["File ID"]: r["Language Family + Area Based"] for r in csv.DictReader(open(CALLS / "metadata.csv"))}
    assert set(region) == set().union(*map(set, got.values()))
    for held in ("calls_valid", "calls_test"):  # every region of 10 calls or more is held out in each
        regions = Counter(region[c] for c in got[held])
        assert all(regions[g] >= 1 for g, n in Counter(region.values()).items() if n >= 10), held
    # the lists are what the script makes
    out = subprocess.run([sys.executable, str(ROOT / "local" / "ted" / "calls.py"), "lists", str(CALLS),
                          str(tmp_path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    for n, ids in got.items():
        assert (tmp_path / f"{n}.txt").read_text().split() == ids
