"""recipes/ted's local/kim_paper.sh (Kim 2019's config at its data size) on a few talks: both phases,
one step each, as a user runs them; the data and runs go under a temporary directory."""
import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from punctkit.data.datadir import read_data_dir

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "recipes" / "ted"
TED = ROOT.parent / "shared" / "data" / "ted"
ONE_STEP = "--set train.iters_per_epoch=1 --set train.epochs=1"


def kim_paper(tmp_path, *args):
    cmd = ["local/kim_paper.sh", "--data", str(tmp_path / "data"), "--expdir", str(tmp_path / "exp"),
           "--threads", "1", *args]
    return subprocess.run(cmd, cwd=RECIPE, capture_output=True, text=True, timeout=900)


def config(exp):
    return yaml.safe_load((exp / "config.yaml").read_text())


def test_kim_paper_both_phases(iwslt, tmp_path):
    if not (TED / "talks").is_dir():
        pytest.skip(f"TED talks not found at {TED}")
    # phase 1: stages 1 (4class data) to 6 (valid and test2011 decoded and scored)
    r = kim_paper(tmp_path, "--stage", "1", "--suffix", "_t", "--data-opts", "--max-talks 2 --max-words 1500",
                  "--train-args", ONE_STEP)
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-2000:])
    assert sorted(p.name for p in (tmp_path / "data").iterdir() if p.is_dir()) == [
        "local", "test_ref", "train_2m", "train_iwslt", "valid"]  # the paper's sets: TED alone, no calls
    train = read_data_dir(tmp_path / "data" / "train_2m")
    assert train.inventory.name == "4class"  # the paper's labels: no case
    assert {lab for u in train.utterances for lab in u.labels} <= {"O", "COMMA", "PERIOD", "QUESTION"}
    first = tmp_path / "exp" / "kim_paper_4class_2m_t"  # --suffix names the run
    conf = config(first)
    assert conf["model"] == {"type": "drnn_lwma", "n_layers": 4, "n_heads": 3, "d_model": 256, "dropout": 0.5}
    assert conf["train"]["patience"] == 20 and conf["train"]["threads"] == 1
    assert conf["train"]["iters_per_epoch"] == 1 and conf["train"]["epochs"] == 1  # --train-args come last
    assert [h["epoch"] for h in json.loads((first / "history.json").read_text())] == [1]
    for x in ("valid", "test_ref"):
        score = json.loads((first / f"decode_{x}" / "score.json").read_text())
        assert score["counts"]["ref_words"] == score["counts"]["hyp_words"] == 1500, x
    # phase 2 (--anneal true): a new run from the first one's best checkpoint, at a falling rate
    r = kim_paper(tmp_path, "--anneal", "true", "--suffix", "_t", "--stop-stage", "4", "--train-args", ONE_STEP)
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-2000:])
    second = tmp_path / "exp" / "kim_paper_4class_2m_t_newbob"
    conf = config(second)
    assert conf["train"]["init"] == str(first / "model.best.pt")
    assert conf["train"]["lr"] == 0.0005 and conf["train"]["schedule"] == "newbob"
    assert (second / "inputs").resolve() == (first / "inputs").resolve()  # the first phase's vocabulary
    loaded = re.search(r"init: (\d+) of (\d+) tensors from (\S+)", (second / "train.log").read_text())
    assert loaded and loaded[1] == loaded[2] and loaded[3] == str(first / "model.best.pt")  # every weight
    assert (second / "model.best.pt").is_file()
    # phase 2 of a run that has no first phase: one line that says what to do, nothing made
    r = kim_paper(tmp_path, "--anneal", "true", "--suffix", "_none")
    assert r.returncode == 1
    assert r.stderr.strip().count("\n") == 0 and "run the first phase (--anneal false) first" in r.stderr
    assert "kim_paper_4class_2m_none/model.best.pt" in r.stderr
    assert not (tmp_path / "exp" / "kim_paper_4class_2m_none_newbob").exists()
