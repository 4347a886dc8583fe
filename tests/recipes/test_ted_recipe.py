"""recipes/ted on a few talks: stages 1 (data) to 3 (inputs), as a user runs them."""
import importlib.util
import re
import subprocess
from pathlib import Path

import pytest

from punctkit.data.datadir import read_data_dir, read_table

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "recipes" / "ted"
TED = ROOT.parent / "shared" / "data" / "ted"
SETS = ("valid_case", "train_1m", "train_2m", "train_all")


def talk_id(name):
    """local/ted/talks.py's id of a talk file."""
    spec = importlib.util.spec_from_file_location("talks", ROOT / "local" / "ted" / "talks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.talk_id(name)


def first_talks(name, n):
    return (ROOT / "local" / "ted" / "lists" / f"{name}.txt").read_text().split()[:n]


def test_tiny_recipe_stages_1_to_3(iwslt, tmp_path):
    if not (TED / "talks").is_dir():
        pytest.skip(f"TED talks not found at {TED}")
    cmd = ["./run.sh", "--stage", "1", "--stop-stage", "3", "--data", str(tmp_path / "data"),
           "--expdir", str(tmp_path / "exp"), "--train-config", "conf/train_tiny.yaml", "--tag", "tiny",
           "--local-data-opts", "--max-talks 2 --max-words 1500 --max-calls 1"]
    r = subprocess.run(cmd, cwd=RECIPE, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-2000:])
    data = tmp_path / "data"
    talks = {}
    for x in SETS:
        dd = read_data_dir(data / x)
        assert dd.inventory.name == "truecase4"  # the recipe's default inventory
        talks[x] = sorted(set(dd.utt2spk.values()))
        assert all(re.fullmatch(r"[A-Za-z0-9_]+-\d{6}", u) for u in dd.utt2spk), x  # Kaldi-safe ids
        assert all(u.startswith(spk + "-") for u, spk in dd.utt2spk.items())
        per_talk = {}
        for u in dd.utterances:
            per_talk.setdefault(dd.utt2spk[u.uttid], []).append(len(u.words))
        assert all(set(n[:-1]) <= {100} for n in per_talk.values())  # each talk: 100-word blocks, then the rest
        log = (data / x / "prepare.log").read_text()
        assert re.search(r"HTML entity decoded \(--decode-html\): \d+\n    e\.g\. \S+\.md:\d+: &", log), log
        assert "contraction split (--split-contractions)" in log
    # one stream a talk: the lists' first talks, valid_case apart from the training talks
    ids = {x: sorted(talk_id(n) for n in first_talks(x, 2)) for x in SETS}
    assert talks == ids
    assert talks["train_1m"] == talks["train_2m"] == talks["train_all"]
    assert not set(talks["valid_case"]) & set(talks["train_all"])
    # valid (dev2012) and test_ref (test2011) as recipes/iwslt makes them, in truecase4; test_cased their case
    valid, ref, cased = (read_data_dir(data / x) for x in ("valid", "test_ref", "test_cased"))
    assert valid.words() == 1500 and ref.words() == 1500
    assert {lab[0] for u in valid.utterances for lab in u.labels} == {"L"}
    assert [u.uttid for u in cased.utterances] == [u.uttid for u in ref.utterances]
    assert [[w.lower() for w in u.words] for u in cased.utterances] == [u.words for u in ref.utterances]
    assert cased.utterances[0].words[:2] == ["I", "'m"]
    assert "without a case reference" in r.stdout and (data / "test_cased" / "case_unknown").is_file()
    # the calls: the first call of each list (--max-calls 1), and train_all_calls = train_all + calls_train
    calls = {x: read_data_dir(data / x) for x in ("calls_train", "calls_valid", "calls_test", "train_all_calls")}
    # one call a list, as one recording of its speakers' turns (utt2reco; segments where the words have times)
    assert all(len(set(calls[x].utt2reco.values())) == 1 for x in ("calls_train", "calls_valid", "calls_test"))
    assert all(len(set(calls[x].utt2spk.values())) > 1 for x in ("calls_train", "calls_valid", "calls_test"))
    assert calls["calls_train"].inventory.name == "truecase4"
    both = read_data_dir(data / "train_all").words() + calls["calls_train"].words()
    assert calls["train_all_calls"].words() == both
    # stage 3: the training words' inputs
    vocab = (tmp_path / "exp" / "tiny" / "inputs" / "frontend" / "vocab.txt").read_text().split()
    assert "n't" in vocab or "'s" in vocab
    assert read_table(data / "train_all" / "spk2utt")  # Kaldi's speaker file, sorted
