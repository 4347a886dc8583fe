"""The IWSLT recipe end to end on a few thousand words: every stage, as a user runs it."""
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import yaml

from punctkit.data.contractions import SPLIT_CONTRACTIONS
from punctkit.score import score_files

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "recipes" / "iwslt"
# a contraction IWSLT splits off its word, shown split ("I 'm", "do n't"): never in the demo
SPLIT = re.compile(r"\s(" + "|".join(re.escape(c) for c in SPLIT_CONTRACTIONS) + r")\b", re.IGNORECASE)


def run_recipe(tmp_path, *args, timeout=600):
    cmd = ["./run.sh", "--data", str(tmp_path / "data"), "--expdir", str(tmp_path / "exp"), *args]
    return subprocess.run(cmd, cwd=RECIPE, capture_output=True, text=True, timeout=timeout)


def trivial_f1(ref: Path, out: Path, label: str) -> float:
    """Overall F1 of the hypothesis that gives every word of data dir `ref` the same `label`."""
    out.mkdir()
    for name in ("text", "inventory"):
        if (ref / name).is_file():
            shutil.copy(ref / name, out / name)
    (out / "labels").write_text("".join(f"{line.split()[0]}{f' {label}' * (len(line.split()) - 1)}\n"
                                        for line in (ref / "labels").read_text().splitlines()))
    return score_files(ref, out)["overall"]["f1"]


def test_data_stages_build_iwslt_dirs_with_repair_report(iwslt, tmp_path):
    t0 = time.time()
    r = run_recipe(tmp_path, "--stop-stage", "1")
    assert r.returncode == 0, r.stderr[-2000:]
    assert time.time() - t0 < 60
    assert "train2012 absent: train = dev2012 lines 1-266220 (90%)" in r.stdout
    assert "mojibake or symbols repaired" in r.stdout  # dev2012's repair report is printed
    # words kept after the reported repairs (dev2012: 266,220 + 29,580 lines; test2011: 12,626);
    # a line's `r&ampd` is one word (`r&d`), a lone `&amp` none, `hiv/aids` two
    for x, words in (("train", 266_079), ("valid", 29_555), ("test_ref", 12_626)):
        text = (tmp_path / "data" / x / "text").read_text().splitlines()
        assert sum(len(line.split()) - 1 for line in text) == words, x
        assert all(len(line.split()) - 1 == 100 for line in text[:-1])  # 100-word blocks
        assert len(set(line.split()[1] for line in (tmp_path / "data" / x / "utt2spk").read_text().splitlines())) == 1


def test_tiny_run_all_stages_writes_scores(iwslt, tmp_path):
    # train_tiny's 2 epochs (8 steps) on 3000 words learn to predict O everywhere; 10 epochs
    # with class weights take seconds and learn enough to beat both trivial hypotheses below
    r = run_recipe(tmp_path, "--local-data-opts", "--max-words 3000", "--stop-stage", "100",
                   "--train-config", "conf/train_tiny.yaml", "--tag", "tiny",
                   "--train-args", "--set train.epochs=10 --set train.class_weights=auto")
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-2000:])
    exp = tmp_path / "exp" / "tiny"
    assert (exp / "config.yaml").is_file() and (exp / "train.log").is_file()
    score = json.loads((exp / "decode_test_ref" / "score.json").read_text())
    assert score["counts"]["slots"] == 3000
    trivial = {mark: trivial_f1(tmp_path / "data" / "test_ref", tmp_path / f"all_{mark}", mark)
               for mark in ("O", "PERIOD")}
    assert trivial["O"] == 0.0 < trivial["PERIOD"]  # no mark predicted: no credit; every mark a PERIOD: some
    assert score["overall"]["f1"] > max(trivial.values()), (score["overall"]["f1"], trivial)
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
    assert f"beam: {card['decode']['beam']}\n" in used
    assert card["results"]["decode_test_ref"]["decode"] == card["decode"]
    # other decoding settings go to their own directory (ESPnet's inference_tag), never over decode_test_ref
    r2 = run_recipe(tmp_path, "--stage", "5", "--stop-stage", "6", "--train-config", "conf/train_tiny.yaml",
                    "--tag", "tiny", "--decode-args", "--beam 2 --step 10")
    assert r2.returncode == 0, (r2.stdout[-2000:], r2.stderr[-2000:])
    assert (exp / "decode_test_ref" / "decode_options.yaml").read_text() == used
    other = (exp / "decode_test_ref_beam2_step10" / "decode_options.yaml").read_text()
    assert "beam: 2\n" in other and "step: 10\n" in other
    assert (exp / "decode_test_ref_beam2_step10" / "score.json").is_file()
    p = subprocess.run([sys.executable, "-m", "punctkit.cli", "punctuate", "-m", str(exp / "model.pkt"), "-"],
                       input="so what do you think\n", capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout.lower().replace(",", "").replace(".", "").replace("?", "").split() == "so what do you think".split()
    # stage 6: exp/tiny/RESULTS.md (ESPnet's generated results) and exp/tiny/run.sh, which reruns the experiment
    results = (exp / "RESULTS.md").read_text()
    for block in ("## Environment", "- date: `", "vector extensions: `", "- python: `", "torch: `", "- git: ",
                  "- model parameters: 54,308 ", "- training: 10 epochs", "## Command", "## Config", "```yaml",
                  "class_weights: auto", "### test_ref", "| decode | COMMA P/R/F1 |", "| SER |"):
        assert block in results, block
    f1 = f"**{score['overall']['f1']:.1f}**"
    assert re.search(r"^\| decode_test_ref \|.*\| " + re.escape(f1) + r" \|", results, re.M), results
    assert "| decode_test_ref_beam2_step10 |" in results  # every decoding of the set, one row each
    rerun = exp / "run.sh"
    assert rerun.is_file() and os.access(rerun, os.X_OK)
    command = rerun.read_text().splitlines()[-1]
    assert command in results
    assert command.startswith(f"cd {RECIPE} && ./punct.sh ") and "--train-config conf/train_tiny.yaml" in command
    assert "--train-args '--set train.epochs=10 --set train.class_weights=auto'" in command
    assert command.endswith(' --stage 3 "$@"; exit $?') and "--stop-stage" not in command
    # the script reruns the experiment from any stage: here scoring only, which writes RESULTS.md again
    (exp / "RESULTS.md").unlink()
    r3 = subprocess.run([str(rerun), "--stage", "6", "--stop-stage", "6"], capture_output=True, text=True, timeout=300)
    assert r3.returncode == 0, (r3.stdout[-2000:], r3.stderr[-2000:])
    assert "stage 6: score test_ref" in r3.stdout and "### test_ref" in (exp / "RESULTS.md").read_text()
    # stage 8: the first 60 words of test_ref, readable (IWSLT's `i 'm` joined: `i'm`), as the reference has
    # them, as the packed model punctuates them and as the shipped default model punctuates them
    tokens = ref.split("\n", 1)[0].split()[1:61]
    assert "'m" in tokens and "'s" in tokens  # test2011 begins "i 'm a savant": the demo has a split to join
    demo = exp / "demo_test_ref"
    words = (demo / "words.txt").read_text()
    assert words == " ".join(tokens).replace(" 'm", "'m").replace(" 's", "'s") + "\n"
    assert words.startswith("i'm a savant ")
    shown = dict(line.split(": ", 1) for line in r.stdout.splitlines()
                 if line.startswith(("reference: ", "recipe:    ", "shipped:   ")))
    assert set(shown) == {"reference", "recipe", "shipped"}, r.stdout[-2000:]
    strip = lambda t: t.lower().replace(",", "").replace(".", "").replace("?", "").split()  # noqa: E731
    for who, line in shown.items():
        assert not SPLIT.search(line), (who, line)  # "I'm", never "I 'm"
        assert strip(line) == words.split(), who
    assert shown["reference"].startswith("I'm a savant, or more precisely, ")
    ref_labels = (tmp_path / "data" / "test_ref" / "labels").read_text().split("\n", 1)[0].split()[1:61]
    assert sum(shown["reference"].count(m) for m in ",.?") == sum(lab != "O" for lab in ref_labels)
    assert (demo / "ref.txt").read_text().strip() == shown["reference"]
    assert (demo / "hyp.txt").read_text().strip() == shown["recipe"].strip()
    assert (demo / "shipped.txt").read_text().strip() == shown["shipped"].strip()
    shipped = subprocess.run([sys.executable, "-m", "punctkit.cli", "punctuate", "-"], input=words,
                             capture_output=True, text=True)
    assert shipped.returncode == 0 and shipped.stdout.strip() == shown["shipped"].strip()


def test_quick_config_trains_a_fixed_number_of_epochs(iwslt, tmp_path):
    """The main job's config trains exactly its epochs with a fixed seed on one thread (no wall-clock stop,
    no early stopping), so its figure does not depend on the machine's load: here on 1000 words."""
    conf = yaml.safe_load((RECIPE / "conf" / "train_drnn_lwma_quick.yaml").read_text())["train"]
    assert conf["max_minutes"] is None and conf["patience"] is None
    assert conf["threads"] == 1 and isinstance(conf["seed"], int) and conf["epochs"] >= 10
    r = run_recipe(tmp_path, "--local-data-opts", "--max-words 1000", "--stop-stage", "4")
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-2000:])
    exp = tmp_path / "exp" / "train_drnn_lwma_quick"
    history = json.loads((exp / "history.json").read_text())
    assert [h["epoch"] for h in history] == list(range(1, conf["epochs"] + 1))
    assert "stopped:" not in (exp / "train.log").read_text()
    used = yaml.safe_load((exp / "config.yaml").read_text())["train"]
    assert (used["epochs"], used["max_minutes"], used["patience"], used["threads"], used["seed"]) == (
        conf["epochs"], None, None, 1, conf["seed"])
