"""The IWSLT recipe end to end on a few thousand words: every stage, as a user runs it."""
import json
import subprocess
import sys
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "recipes" / "iwslt"


def run_recipe(tmp_path, *args, timeout=600):
    cmd = ["./run.sh", "--data", str(tmp_path / "data"), "--expdir", str(tmp_path / "exp"), *args]
    return subprocess.run(cmd, cwd=RECIPE, capture_output=True, text=True, timeout=timeout)


def test_data_stages_build_iwslt_dirs_with_repair_report(iwslt, tmp_path):
    t0 = time.time()
    r = run_recipe(tmp_path, "--stop-stage", "1")
    assert r.returncode == 0, r.stderr[-2000:]
    assert time.time() - t0 < 60
    assert "train2012 absent: train = dev2012 lines 1-266220 (90%)" in r.stdout
    assert "mojibake or symbols repaired" in r.stdout  # dev2012's repair report is printed
    # words kept after the reported repairs (dev2012: 266,220 + 29,580 lines; test2011: 12,626)
    for x, words in (("train", 266_087), ("valid", 29_557), ("test_ref", 12_626)):
        text = (tmp_path / "data" / x / "text").read_text().splitlines()
        assert sum(len(line.split()) - 1 for line in text) == words, x
        assert all(len(line.split()) - 1 == 100 for line in text[:-1])  # 100-word blocks
        assert len(set(line.split()[1] for line in (tmp_path / "data" / x / "utt2spk").read_text().splitlines())) == 1


def test_tiny_run_all_stages_writes_scores(iwslt, tmp_path):
    r = run_recipe(tmp_path, "--local-data-opts", "--max-words 3000",
                   "--train-config", "conf/train_tiny.yaml", "--tag", "tiny")
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-2000:])
    exp = tmp_path / "exp" / "tiny"
    assert (exp / "config.yaml").is_file() and (exp / "train.log").is_file()
    score = json.loads((exp / "decode_test_ref" / "score.json").read_text())
    assert score["counts"]["slots"] == 3000
    assert 0.0 <= score["overall"]["f1"] <= 100.0
    assert set(score["per_class"]) >= {"COMMA", "PERIOD", "QUESTION"}
    txt = (exp / "decode_test_ref" / "score.txt").read_text()
    assert "SER" in txt and "COMMA" in txt
    ref = (tmp_path / "data" / "test_ref" / "text").read_text()
    assert (exp / "decode_test_ref" / "hyp" / "text").read_text() == ref
    # stage 7: the packed model carries the test figure on its card and punctuates on its own
    with zipfile.ZipFile(exp / "model.pkt") as z:
        card = json.loads(z.read("punctkit.json"))["card"]
    assert card["results"]["decode_test_ref"]["f1"] == score["overall"]["f1"]
    used = (exp / "decode_test_ref" / "decode_options.yaml").read_text()
    assert f"beam: {card['decode']['beam']}\n" in used and card["results"]["decode_test_ref"]["decode"] == card["decode"]
    # other decoding settings go to their own directory (ESPnet's inference_tag), never over decode_test_ref
    r = run_recipe(tmp_path, "--stage", "5", "--stop-stage", "6", "--train-config", "conf/train_tiny.yaml",
                   "--tag", "tiny", "--decode-args", "--beam 2 --step 10")
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-2000:])
    assert (exp / "decode_test_ref" / "decode_options.yaml").read_text() == used
    other = (exp / "decode_test_ref_beam2_step10" / "decode_options.yaml").read_text()
    assert "beam: 2\n" in other and "step: 10\n" in other
    assert (exp / "decode_test_ref_beam2_step10" / "score.json").is_file()
    p = subprocess.run([sys.executable, "-m", "punctkit.cli", "punctuate", "-m", str(exp / "model.pkt"), "-"],
                       input="so what do you think\n", capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout.lower().replace(",", "").replace(".", "").replace("?", "").split() == "so what do you think".split()
