"""local/conversation.sh stage 6 with a config that distils (train.distill): the teacher (--teacher, a package) labels
the training set first (local/teacher_probs.sh, by stream), the network trains on its distributions, and the package's
card names the teacher; run again, the teacher's labels are not made again."""
from __future__ import annotations

import json
import os
import subprocess
import zipfile
from pathlib import Path

import yaml

from engine_util import make_dirs
from punct_util import recipe_copy
from punctkit.config import load_config
from punctkit.fit import train

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "recipes" / "ted"


def stage6(recipe: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    return subprocess.run(["local/conversation.sh", "--stage", "6", "--stop-stage", "6", *args], cwd=recipe,
                          capture_output=True, text=True, env=env, timeout=900)


def test_stage6_distils_from_its_teachers_labels(iwslt, tmp_path):
    recipe = recipe_copy(RECIPE, tmp_path / "recipe")
    data = recipe / "data"
    make_dirs(iwslt, data, "1:1500", "1501:1800")
    (data / "train").rename(data / "train_tiny")
    (data / "valid").rename(data / "valid_conv")
    conf = load_config(RECIPE / "conf" / "train_tiny.yaml")
    conf["train"]["epochs"] = 1
    train(conf, data / "train_tiny", data / "valid_conv", tmp_path / "teacher_exp", quiet=True)
    teacher = tmp_path / "teacher.pkt"
    subprocess.run(["punctkit", "pack", str(tmp_path / "teacher_exp"), "-o", str(teacher)], check=True,
                   capture_output=True)
    conf["train"]["distill"] = {"probs": "exp/teacher_tiny/hyp/probs", "weight": 0.7, "temperature": 1.0}
    (tmp_path / "distill.yaml").write_text(yaml.safe_dump(conf))
    args = ("--train-config", str(tmp_path / "distill.yaml"), "--conv-set", "train_tiny", "--conv-tag", "tiny_distill",
            "--teacher", str(teacher))
    r = stage6(recipe, *args)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    probs = recipe / "exp" / "teacher_tiny" / "hyp" / "probs"
    assert len(probs.read_text().splitlines()) == len((data / "train_tiny" / "text").read_text().splitlines())
    log = (recipe / "exp" / "tiny_distill" / "log" / "train.log").read_text()
    assert "distill: soft labels of" in log and "exp/teacher_tiny/hyp/probs" in log
    with zipfile.ZipFile(recipe / "exp" / "tiny_distill" / "model.pkt") as z:
        card = json.loads(z.read("punctkit.json"))["card"]
    assert "taught by teacher.pkt's label distributions over it (exp/teacher_tiny/hyp/probs" in card["training_data"]
    before = probs.stat().st_mtime_ns
    r = stage6(recipe, *args)  # resumed: the teacher's labels are there, the training is done
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    assert probs.stat().st_mtime_ns == before and "part(s) to decode" not in r.stdout


def test_stage6_names_a_teacher_it_cannot_find_in_one_line(tmp_path):
    recipe = recipe_copy(RECIPE, tmp_path / "recipe")
    conf = load_config(RECIPE / "conf" / "train_tiny.yaml")
    conf["train"]["distill"] = {"probs": "exp/teacher_tiny/hyp/probs"}
    (tmp_path / "distill.yaml").write_text(yaml.safe_dump(conf))
    r = stage6(recipe, "--train-config", str(tmp_path / "distill.yaml"), "--conv-set", "train_tiny", "--teacher",
               str(tmp_path / "no.pkt"))
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1
    assert f"--teacher {tmp_path / 'no.pkt'}: not a shipped model (fast, accurate) or a packed model's file" in r.stderr
    assert not (recipe / "exp" / "teacher_tiny").exists()
