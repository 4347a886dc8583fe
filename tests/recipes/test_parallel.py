"""Parallel stages: DDP training on CPU processes (gloo) and `--nj` decoding
through the recipe's stage 5 (split by speaker, `$decode_cmd JOB=1:N`, combine)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from parallel_util import (
    OVERRIDES,
    TINY,
    decode_stage,
    dir_bytes,
    multi_doc_dir,
    need_iwslt,
    tiny_model,
)
from punctkit.config import load_config
from punctkit.data.datadir import read_data_dir
from punctkit.data.streams import bucket_batches, make_streams, train_windows
from punctkit.decode_data import decode_dir
from punctkit.expdir import load_checkpoint
from punctkit.files import PunctkitError
from punctkit.fit import train
from punctkit.train.trainer import world_size_of

pytestmark = pytest.mark.slow  # DDP trainings and the recipe's decoding stage, end to end


@pytest.fixture(scope="module")
def ddp_exp(tmp_path_factory):
    need_iwslt()
    root = tmp_path_factory.mktemp("ddp")
    return root, tiny_model(root, nproc=2)


def test_ddp_two_cpu_processes_train_a_loadable_model(ddp_exp):
    root, exp = ddp_exp
    hist = json.loads((exp / "history.json").read_text())
    assert [h["epoch"] for h in hist] == [1, 2]
    # each process took every 2nd batch: the step count is half the single-process batch count
    conf = load_config(TINY, OVERRIDES)
    t = conf["train"]
    dd = read_data_dir(root / "data" / "train")
    streams = make_streams(dd)
    expected = 0
    for epoch in (1, 2):
        wins = train_windows(streams, t["window"], t["seed"], epoch)
        n = len(bucket_batches([w.end - w.start for w in wins], t["batch_size"], True, t["seed"] * 1000 + epoch))
        expected += n // 2
    assert expected >= 4
    assert hist[-1]["steps"] == expected
    log = (exp / "train.log").read_text()
    assert "x 2 processes (DDP)" in log
    assert log.count("epoch 1:") == 1 and log.count("epoch 2:") == 1  # rank 0 alone logs
    assert sorted(p.name for p in (exp / "checkpoints").iterdir()) == ["epoch_1.pt", "epoch_2.pt"]
    # a single process decodes with the DDP-trained checkpoint (no "module." prefixes)
    r = decode_dir(exp, root / "data" / "valid", root / "hyp_valid")
    ref = read_data_dir(root / "data" / "valid")
    hyp = read_data_dir(root / "hyp_valid")
    assert r["words"] == ref.words() > 0
    assert [u.words for u in hyp.utterances] == [u.words for u in ref.utterances]
    assert all(len(u.labels) == len(u.words) for u in hyp.utterances)


def test_torchrun_group_trains_the_same_model(ddp_exp, tmp_path):
    """Under torchrun (RANK/WORLD_SIZE set) `punctkit train` joins the group: same checkpoints as --nproc 2."""
    root, exp = ddp_exp
    torchrun = Path(sys.executable).with_name("torchrun")
    sets = [a for o in OVERRIDES for a in ("--set", o)]
    r = subprocess.run([str(torchrun), "--standalone", "--nproc_per_node", "2", "-m", "punctkit.cli", "train",
                        "--config", str(TINY), "--train-dir", str(root / "data" / "train"),
                        "--valid-dir", str(root / "data" / "valid"), "--exp", str(tmp_path / "exp"), *sets],
                       capture_output=True, text=True, timeout=120)
    # torchrun's own traceback fills the tail of stderr; show what the ranks printed
    assert r.returncode == 0, "\n".join(ln for ln in r.stderr.splitlines()
                                        if "torch/distributed/" not in ln)[-3000:]
    # each rank ends through leave_process: what it printed and logged is there in full
    assert r.stdout.count("train: 2 epochs") == 2, r.stdout
    assert "model.avg.pt = average of epochs" in (tmp_path / "exp" / "train.log").read_text()
    a = load_checkpoint(exp / "checkpoints" / "epoch_2.pt")["model"]
    b = load_checkpoint(tmp_path / "exp" / "checkpoints" / "epoch_2.pt")["model"]
    assert list(a) == list(b) and not any(k.startswith("module.") for k in a)
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_leave_process_flushes_and_exits_with_its_code(tmp_path):
    """A DDP process ends through leave_process (no interpreter teardown): its log file, its unterminated
    standard output and error are written whole, and the exit code is the one given."""
    log = tmp_path / "run.log"
    code = ("import logging, sys\n"
            "from punctkit.train.ddp import leave_process\n"
            f"h = logging.FileHandler({str(log)!r}); logging.getLogger('t').addHandler(h)\n"
            "logging.getLogger('t').warning('the last line')\n"
            "sys.stdout.write('out, no newline'); sys.stderr.write('err, no newline')\n"
            "leave_process(3)\n"
            "print('never')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 3, r.stderr
    assert r.stdout == "out, no newline" and r.stderr == "err, no newline"
    assert log.read_text() == "the last line\n"


def test_bad_process_counts_are_refused(tmp_path):
    with pytest.raises(PunctkitError, match="--nproc must be at least 1"):
        train(TINY, tmp_path, None, tmp_path / "exp", nproc=0)
    with pytest.raises(PunctkitError, match="one process per GPU"):
        world_size_of(1, 2)
    if torch.cuda.device_count() < 64:
        with pytest.raises(PunctkitError, match="--ngpu 64 but"):
            world_size_of(64, 1)


def test_decode_nj2_local_equals_nj1(ddp_exp):
    root, exp = ddp_exp
    test = multi_doc_dir(root)
    assert len(set(read_data_dir(test).utt2spk.values())) == 3
    r1 = decode_stage(root, 1)
    assert r1.returncode == 0, r1.stdout + r1.stderr
    hyp = exp / "decode_test" / "hyp"
    one = dir_bytes(hyp)
    shutil.rmtree(hyp)
    r2 = decode_stage(root, 2)
    assert r2.returncode == 0, r2.stdout + r2.stderr
    assert "(2 job(s))" in r2.stdout + r2.stderr
    assert (exp / "decode_test" / "log" / "decode.2.log").is_file()
    two = dir_bytes(hyp)
    assert sorted(one) == ["decode_options.yaml", "inventory", "labels", "spk2utt", "text", "utt2spk"]
    assert two == one
    # more jobs than streams: capped at the 3 speakers, with a log line
    r5 = decode_stage(root, 5)
    assert r5.returncode == 0, r5.stdout + r5.stderr
    assert "decoding with 3 job(s) instead of --nj 5" in r5.stdout + r5.stderr
    assert dir_bytes(hyp) == one


def test_failed_decode_job_fails_the_stage(ddp_exp, tmp_path):
    root, exp = ddp_exp
    bad = tmp_path / "bad"
    shutil.copytree(root / "data", bad / "data", ignore=shutil.ignore_patterns("split*"))
    shutil.copytree(exp, bad / "exp" / "tiny", ignore=shutil.ignore_patterns("decode_*"))
    if not (bad / "data" / "test").is_dir():
        multi_doc_dir(bad)
    # the second document's words are all unknown to the model: job 2 fails
    text = bad / "data" / "test" / "text"
    lines = text.read_text().splitlines()
    text.write_text("".join((ln.split()[0] + " " + " ".join("qqzx" for _ in ln.split()[1:]) if "doc2" in ln
                             else ln) + "\n" for ln in lines))
    (bad / "data" / "test" / "labels").unlink()
    r = decode_stage(bad, 3)
    assert r.returncode != 0
    assert "decode.2.log" in r.stderr
    assert not (bad / "exp" / "tiny" / "decode_test" / "hyp").exists()
