"""local/ted/teacher_probs.sh: a teacher's probabilities over a data dir, part by part across
runs (parts with .done skipped), joined when all are done; equal to one decode of the whole."""
import subprocess
from pathlib import Path

import pytest

from engine_util import make_dirs
from punctkit.config import load_config
from punctkit.data.datadir import read_data_dir, write_data_dir
from punctkit.fit import train

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "recipes" / "ted"


def run(*args, cwd=RECIPE):
    return subprocess.run(["local/teacher_probs.sh", *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


def test_parts_resume_and_join_into_the_whole_decode(iwslt, tmp_path):
    train_dir, valid_dir = make_dirs(iwslt, tmp_path, "1:1500", "1501:1800")
    conf = load_config(RECIPE / "conf" / "train_tiny.yaml")
    conf["train"]["epochs"] = 1
    exp = tmp_path / "exp"
    train(conf, train_dir, valid_dir, exp, quiet=True)
    dd = read_data_dir(train_dir)
    # five "talks" of three blocks each, so that the split keeps each talk in one part
    spk = {u.uttid: f"talk{i // 3}" for i, u in enumerate(dd.utterances)}
    data = tmp_path / "data"
    write_data_dir(data, dd.utterances, dd.inventory, utt2spk=spk)
    out = tmp_path / "teacher"

    r = run("--parts", 3, "--max-parts", 2, exp, data, out)
    assert r.returncode == 0, r.stderr
    assert "2 part(s) to decode of 3 (1 2)" in r.stdout and "rerun to go on" in r.stdout
    assert [(out / "split3" / str(k) / ".done").exists() for k in (1, 2, 3)] == [True, True, False]
    assert not (out / "hyp").exists()
    r = run("--parts", 3, exp, data, out)
    assert r.returncode == 0, r.stderr
    assert "1 part(s) to decode of 3 (3)" in r.stdout
    joined = (out / "hyp" / "probs").read_text().splitlines()
    subprocess.run(["punctkit", "decode", str(exp), str(data), str(tmp_path / "whole"), "--probs"], check=True,
                   capture_output=True)
    assert joined == (tmp_path / "whole" / "probs").read_text().splitlines()
    assert len(joined) == len(dd.utterances)
    # a package labels as its experiment does (decode runs packages as punctuate does)
    subprocess.run(["punctkit", "pack", str(exp), "-o", str(tmp_path / "m.pkt")], check=True, capture_output=True)
    r = run("--parts", 3, "--decode-args", "--threads 1", tmp_path / "m.pkt", data, tmp_path / "from_pkg")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "from_pkg" / "hyp" / "probs").read_text().splitlines() == joined
    r = run("--parts", 3, exp, data, out)  # all done: nothing decoded again
    assert r.returncode == 0 and "0 part(s) to decode" in r.stdout
    # the data changed after its parts were decoded: refused, the parts and the joined probs kept
    write_data_dir(data, dd.utterances[:-1], dd.inventory, utt2spk=spk)
    r = run("--parts", 3, exp, data, out)
    assert r.returncode == 1 and "changed since" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert (out / "hyp" / "probs").read_text().splitlines() == joined


@pytest.mark.parametrize("args, says", [
    (["--parts", "x"], "--parts must be a whole number"),
    (["--parts", "0"], "must be at least 1"),
])
def test_bad_options_are_one_line(tmp_path, args, says):
    r = run(*args, tmp_path, tmp_path, tmp_path / "out")
    assert r.returncode == 1 and says in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_a_failing_part_names_its_log(iwslt, tmp_path):
    train_dir, _ = make_dirs(iwslt, tmp_path, "1:300", "301:400")
    (tmp_path / "exp").mkdir()  # an experiment dir without a model
    r = run("--parts", 1, tmp_path / "exp", train_dir, tmp_path / "out")
    assert r.returncode == 1 and "part 1 failed: see" in r.stderr and "decode.1.log" in r.stderr
    assert not (tmp_path / "out" / "split1" / "1" / ".done").exists()
