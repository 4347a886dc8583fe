"""recipes/ted's preparation (local/ted): talk ids, the valid and training lists by talk, and the
cased reference of test2011 made from its published XML source."""
from __future__ import annotations

import importlib.util
import re

import pytest

from conftest import ROOT
from punctkit.data.datadir import read_data_dir, read_table, write_data_dir
from punctkit.data.labels import get_inventory, mark_of
from punctkit.data.prepare import prepare
from punctkit.data.utterance import Utterance
from punctkit.files import PunctkitError

TED = ROOT.parent / "shared" / "data" / "ted"
LISTS = ROOT / "local" / "ted" / "lists"


def local(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "local" / "ted" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


talks = local("talks")
cased = local("cased_reference")


@pytest.fixture
def ted():
    if not (TED / "talks").is_dir():
        pytest.skip(f"TED talks not found at {TED}")
    return TED / "talks"


def read_list(name):
    return (LISTS / f"{name}.txt").read_text().split()


# ---------------------------------------------------------------- ids and lists

def test_talk_ids_are_kaldi_safe_and_unique(ted):
    names = sorted(p.name for p in ted.glob("*.md"))
    ids = [talks.talk_id(n) for n in names]
    assert sum("'" in n for n in names) == 312  # the names that hold an apostrophe
    assert all(re.fullmatch(r"[A-Za-z0-9_]+", i) for i in ids) and len(set(ids)) == len(ids)
    assert talks.talk_id("10_things_you_didn't_know_about_orgasm_Mary_Roach.md") == \
        "10_things_you_didnt_know_about_orgasm_Mary_Roach"
    assert talks.talk_id("José's talk (2010)--live.md") == "Joses_talk_2010_live"


def test_committed_lists_are_nested_disjoint_from_valid_and_remade_by_the_script(ted):
    lists = {name: read_list(name) for name in ("valid_case", "train_1m", "train_2m", "train_all")}
    valid, train = set(lists["valid_case"]), set(lists["train_all"])
    assert not valid & train and valid | train == {p.name for p in ted.glob("*.md")}
    assert lists["train_1m"] == lists["train_2m"][:len(lists["train_1m"])]  # nested prefixes
    assert lists["train_2m"] == lists["train_all"][:len(lists["train_2m"])]
    assert talks.make_lists(ted) == lists  # the committed lists are what the script makes
    counts = {n: talks.count_words(ted / n) for n in lists["valid_case"] + lists["train_2m"]}
    words = {name: sum(counts[n] for n in lists[name]) for name in ("valid_case", "train_1m", "train_2m")}
    assert 100_000 <= words["valid_case"] < 110_000
    assert 1_000_000 <= words["train_1m"] < 1_010_000 and 2_100_000 <= words["train_2m"] < 2_110_000


def test_lists_by_cumulative_words_are_seeded(tmp_path):
    for k in range(12):
        (tmp_path / f"talk{k:02d}.md").write_text("word " * (10 * (k + 1)) + "\n(Laughter) --\n")
    a = talks.make_lists(tmp_path, seed=1, valid_words=50, subsets=(("small", 100), ("large", 300)))
    assert a == talks.make_lists(tmp_path, seed=1, valid_words=50, subsets=(("small", 100), ("large", 300)))
    assert a != talks.make_lists(tmp_path, seed=2, valid_words=50, subsets=(("small", 100), ("large", 300)))
    count = lambda names: sum(talks.count_words(tmp_path / n) for n in names)  # noqa: E731
    assert count(a["valid_case"]) >= 50 > count(a["valid_case"][:-1])  # the shortest prefix over 50 words
    for name, words in (("small", 100), ("large", 300)):
        assert a[name] == a["train_all"][:len(a[name])]
        assert count(a[name]) >= words > count(a[name][:-1])
    assert sorted(a["valid_case"] + a["train_all"]) == sorted(p.name for p in tmp_path.glob("*.md"))
    assert talks.count_words(tmp_path / "talk00.md") == 11  # `(Laughter)` has letters, `--` has none


def test_scp_lines_give_ids_and_paths(tmp_path):
    for name in ("b'talk.md", "a_talk.md"):
        (tmp_path / name).write_text("hello\n")
    lst = tmp_path / "l.txt"
    lst.write_text("b'talk.md\na_talk.md\n")
    assert talks.scp_lines(lst, tmp_path) == [f"a_talk {tmp_path}/a_talk.md", f"btalk {tmp_path}/b'talk.md"]
    assert talks.scp_lines(lst, tmp_path, max_talks=1) == [f"btalk {tmp_path}/b'talk.md"]
    lst.write_text("a_talk.md\ngone.md\n")
    with pytest.raises(PunctkitError, match=r"l.txt:2: gone.md: not in"):
        talks.scp_lines(lst, tmp_path)


# ---------------------------------------------------------------- the cased reference of test2011

XML = """<?xml version="1.0" encoding="UTF-8"?>
<mteval><srcset setid="x" srclang="english"><doc docid="1">
<title>Not a segment: Ignored</title>
<seg id="1">  I'm in the U.S.  with NASA,  and iPhones.  </seg>
<seg id="2">  We can't go to D.C. &amp; stay.  </seg>
</doc></srcset></mteval>
"""


def test_cased_reference_takes_each_words_case_and_lists_the_rest(tmp_path):
    xml = tmp_path / "tst.xml"
    xml.write_text(XML)
    words = "i 'm in the us with nasa and iphones we cannot go to dc so stay".split()
    labels = ["O"] * 4 + ["O", "O", "COMMA", "O", "PERIOD"] + ["O"] * 6 + ["PERIOD"]
    write_data_dir(tmp_path / "ref", [Utterance("t-000001", words[:8], labels[:8]),
                                      Utterance("t-000002", words[8:], labels[8:])], get_inventory("4class"),
                   {"t-000001": "t", "t-000002": "t"})
    n, missing = cased.cased_reference(xml, tmp_path / "ref", tmp_path / "out")
    dd = read_data_dir(tmp_path / "out")
    assert (n, missing) == (16, 2) and dd.inventory.name == "truecase4"
    # `us` for `U.S.` and `dc` for `D.C.` take the case of their letters; `cannot` (`ca n't`) and `so`
    # (not in the XML) have no case reference: listed, and left as they were
    assert [w for u in dd.utterances for w in u.words] == \
        "I 'm in the US with NASA and iPhones We cannot go to DC so stay".split()
    assert dd.utterances[0].labels == ["C_O", "L_O", "L_O", "L_O", "U_O", "L_O", "U_COMMA", "L_O"]
    assert dd.utterances[1].labels[:3] == ["M_PERIOD", "C_O", "L_O"]
    assert read_table(tmp_path / "out" / "case_unknown") == {"t-000002": "2 6"}
    assert dd.utt2spk == {"t-000001": "t", "t-000002": "t"}
    cased.cased_reference(xml, tmp_path / "ref", tmp_path / "out")  # a rerun writes over its own files
    (tmp_path / "out" / "notes.txt").write_text("mine\n")
    with pytest.raises(PunctkitError, match="holds files punctkit does not write"):
        cased.cased_reference(xml, tmp_path / "ref", tmp_path / "out")


def test_cased_reference_in_fabers_case4_holds_lower_case_words_and_u_labels(tmp_path):
    xml = tmp_path / "tst.xml"
    xml.write_text(XML)
    words = "i 'm in the us with nasa and iphones".split()
    labels = ["O"] * 6 + ["COMMA", "O", "PERIOD"]
    write_data_dir(tmp_path / "ref", [Utterance("t-000001", words, labels)], get_inventory("4class"),
                   {"t-000001": "t"})
    cased.cased_reference(xml, tmp_path / "ref", tmp_path / "out", inventory="case4")
    dd = read_data_dir(tmp_path / "out")
    assert dd.inventory.name == "case4" and dd.utterances[0].words == words
    assert dd.utterances[0].labels == ["U_O", "L_O", "L_O", "L_O", "U_O", "L_O", "U_COMMA", "L_O", "L_PERIOD"]
    with pytest.raises(PunctkitError, match="case-aware inventory"):
        cased.cased_reference(xml, tmp_path / "ref", tmp_path / "out4", inventory="4class")


def test_cased_test2011_has_test_refs_blocks_words_and_marks(iwslt, tmp_path):
    prepare([iwslt / "test2011"], tmp_path / "test_ref", inventory="truecase4", block_len=100)
    n, missing = cased.cased_reference(iwslt / "IWSLT12.TED.MT.tst2011.en-fr.en.xml", tmp_path / "test_ref",
                                       tmp_path / "test_cased")
    ref, out = read_data_dir(tmp_path / "test_ref"), read_data_dir(tmp_path / "test_cased")
    assert [u.uttid for u in out.utterances] == [u.uttid for u in ref.utterances] and out.utt2spk == ref.utt2spk
    for r, c in zip(ref.utterances, out.utterances):
        assert [w.lower() for w in c.words] == r.words
        assert [mark_of(lab) for lab in c.labels] == [mark_of(lab) for lab in r.labels]
    assert n == 12_626 and missing == 9  # 8 `cannot` (the XML's `can't`) and `seg` (from `/seg`)
    log = (tmp_path / "test_cased" / "cased_reference.log").read_text()
    assert log.count("[cannot]") == 8 and log.count("[seg]") == 1
    unknown = sum(len(v.split()) for v in read_table(tmp_path / "test_cased" / "case_unknown").values())
    assert unknown == 9
    words = [w for u in out.utterances for w in u.words]
    assert words[:6] == ["I", "'m", "a", "savant", "or", "more"]
    assert {"TED", "iPhones", "DC"} <= set(words)
    classes = {lab[0] for u in out.utterances for lab in u.labels}
    assert classes == {"L", "C", "U", "M"}
