"""Decoding a conversation in parts (the template's stage 5 with --nj, local/teacher_probs.sh): the parts are the
streams decode reads (split-data --per-reco: a call with all its speakers), so the result equals one decode of the
whole, byte for byte, and --nj is capped at the number of calls."""
from __future__ import annotations

import filecmp
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from engine_util import make_dirs
from punct_util import recipe_copy
from punctkit.config import load_config
from punctkit.data.prepare import prepare
from punctkit.fit import train
from punctkit.pretrained import model_path

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "recipes" / "ted"
CALLS = ROOT.parent / "shared" / "data" / "earnings22" / "calls"
NAMES = ("4474955", "4475604", "4482968")  # three short calls, 3-6 speakers each


def prepare_calls(d: Path, inventory: str) -> Path:
    """The three calls as a data directory of speaker turns (utt2spk a speaker, segments and utt2reco the call)."""
    if not all((CALLS / f"{x}.aligned.nlp").is_file() for x in NAMES):
        pytest.skip(f"Earnings-22 calls not found at {CALLS}")
    prepare([CALLS / f"{x}.aligned.nlp" for x in NAMES], d, inventory=inventory, show_progress=False)
    return d


def same_files(a: Path, b: Path) -> None:
    names = sorted(p.name for p in a.iterdir() if p.is_file())
    assert "labels" in names and names == sorted(p.name for p in b.iterdir() if p.is_file())
    for name in names:
        assert filecmp.cmp(a / name, b / name, shallow=False), name


def test_stage5_nj_decodes_each_call_whole(iwslt, tmp_path):
    train_dir, valid_dir = make_dirs(iwslt, tmp_path, "1:1500", "1501:1800")
    conf = load_config(RECIPE / "conf" / "train_tiny.yaml")
    conf["train"]["epochs"] = 1
    train(conf, train_dir, valid_dir, tmp_path / "exp" / "tiny", quiet=True)
    data = tmp_path / "data"
    prepare_calls(data / "calls", "4class")  # the tiny model's labels
    recipe = recipe_copy(RECIPE, tmp_path / "recipe")
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    hyps = {}
    for nj in (1, 2, 5):
        p = subprocess.run(["./punct.sh", "--stage", "5", "--stop-stage", "5", "--nj", str(nj), "--data", str(data),
                            "--expdir", str(tmp_path / "exp"), "--tag", "tiny", "--train-config", "unused.yaml",
                            "--test-sets", "calls"], cwd=recipe, capture_output=True, text=True, env=env, timeout=300)
        assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
        jobs = min(nj, 3)
        assert f"({jobs} job(s))" in p.stdout
        assert ("calls has 3 stream(s): decoding with 3 job(s) instead of --nj 5" in p.stdout) == (nj == 5)
        hyps[nj] = tmp_path / f"hyp{nj}"
        shutil.copytree(tmp_path / "exp" / "tiny" / "decode_calls" / "hyp", hyps[nj])
        if jobs > 1:  # each part holds whole calls
            recos = [{ln.split()[1] for ln in (data / "calls" / f"split{jobs}" / str(k) / "utt2reco").read_text()
                      .splitlines()} for k in range(1, jobs + 1)]
            assert sum(len(r) for r in recos) == 3 and all(recos)
    same_files(hyps[1], hyps[2])
    same_files(hyps[1], hyps[5])


def test_teacher_probs_of_a_conversation_equal_the_whole_decode(tmp_path):
    """`fast` reads speaker turns and pauses itself: a call cut among parts would be labelled otherwise."""
    calls = prepare_calls(tmp_path / "calls", "truecase4")
    pkg = model_path("fast")
    r = subprocess.run(["local/teacher_probs.sh", "--parts", "2", "--decode-args", "--threads 1", str(pkg), str(calls),
                        str(tmp_path / "teacher")], cwd=RECIPE, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    subprocess.run(["punctkit", "decode", str(pkg), str(calls), str(tmp_path / "whole"), "--probs", "--threads", "1"],
                   check=True, capture_output=True)
    joined = (tmp_path / "teacher" / "hyp" / "probs").read_text().splitlines()
    assert joined == (tmp_path / "whole" / "probs").read_text().splitlines()
    assert len(joined) == len((calls / "text").read_text().splitlines())
