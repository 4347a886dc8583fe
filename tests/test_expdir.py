"""Experiment directories stay consistent: a refused resume writes nothing; `train` locks its --exp."""
from __future__ import annotations

import copy
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from engine_util import TINY, make_dirs
from punct_util import cli
from punctkit.files import DirLock, PunctkitError
from punctkit.fit import train

BAD = Path(__file__).parent / "bad_inputs" / "outputs"


def snapshot(d: Path) -> dict[str, bytes]:
    """Every file under `d` (relative path -> bytes)."""
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def one_epoch() -> dict:
    conf = copy.deepcopy(TINY)
    conf["train"]["epochs"] = 1
    return conf


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    from conftest import IWSLT

    if not (IWSLT / "dev2012").is_file():
        pytest.skip(f"IWSLT reference data not found at {IWSLT}")
    return make_dirs(IWSLT, tmp_path_factory.mktemp("lockdata"), "1:600", "601:800")


@pytest.fixture(scope="module")
def trained(dirs, tmp_path_factory):
    """An experiment with one epoch's checkpoint."""
    exp = tmp_path_factory.mktemp("lockexp") / "exp"
    train(one_epoch(), *dirs, exp, quiet=True)
    return exp


def test_refused_resume_leaves_the_exp_dir_byte_identical(trained, dirs, tmp_path):
    exp = tmp_path / "exp"
    shutil.copytree(trained, exp)
    before = snapshot(exp)
    bigger = one_epoch()
    bigger["model"]["d"] = 32
    bigger["train"]["epochs"] = 2
    with pytest.raises(PunctkitError, match="does not match"):
        train(bigger, *dirs, exp, quiet=True)
    assert snapshot(exp) == before  # config.yaml, train.log, inventory as they were; no .lock left
    cased = tmp_path / "cased"
    from punctkit.data.prepare import prepare

    prepare([BAD / "corpus.tc"], cased, inventory="case4")
    with pytest.raises(PunctkitError, match="inventory case4 differs"):
        train(one_epoch() | {"train": {**one_epoch()["train"], "epochs": 2}}, cased, None, exp, quiet=True)
    assert snapshot(exp) == before
    # the experiment still decodes
    from punctkit.data.datadir import read_data_dir
    from punctkit.decode_data import decode_dir

    assert decode_dir(exp, dirs[1], tmp_path / "dec")["words"] == read_data_dir(dirs[1]).words()


def _holder(exp: Path) -> subprocess.Popen:
    """Another process holding `exp`'s lock (as a running `punctkit train` does)."""
    code = ("import sys, time; from punctkit.files import DirLock; "
            f"DirLock({str(exp)!r}).acquire(); print('locked', flush=True); time.sleep(120)")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "locked"
    return p


def test_second_train_on_a_locked_exp_fails_naming_host_and_pid(trained, dirs, tmp_path):
    exp = tmp_path / "exp"
    shutil.copytree(trained, exp)
    holder = _holder(exp)
    try:
        before = snapshot(exp)
        r = cli("train", "--config", _conf_file(tmp_path), "--train-dir", dirs[0], "--exp", exp, ok=False)
        assert r.returncode == 1, r.stderr
        err = r.stderr.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("punctkit: error: "), r.stderr
        assert f"host {socket.gethostname()}" in err[0] and f"pid {holder.pid}" in err[0]
        with pytest.raises(PunctkitError, match=f"pid {holder.pid}"):
            train(one_epoch(), *dirs, exp, quiet=True)
        assert snapshot(exp) == before
    finally:
        holder.kill()
        holder.wait()


def _conf_file(tmp_path: Path) -> Path:
    """TINY as a YAML file for the CLI, with a model the `punctkit` process knows."""
    import yaml

    p = tmp_path / "train.yaml"
    p.write_text(yaml.safe_dump(builtin_model()))
    return p


def builtin_model() -> dict:
    """One epoch of a tiny model that processes other than pytest's know (test_tagger is registered here only)."""
    conf = one_epoch()
    conf["model"] = {"type": "transformer_tagger", "n_layers": 1, "d_model": 16, "n_heads": 2, "d_ff": 32}
    return conf


def test_a_lock_left_by_a_dead_process_is_taken_over(dirs, tmp_path):
    exp = tmp_path / "exp"
    exp.mkdir()
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    (exp / ".lock").write_text(f"host {socket.gethostname()}\npid {gone.pid}\nstarted 2026-01-01 00:00:00 UTC\n")
    st = train(one_epoch(), *dirs, exp, quiet=True)
    assert st.epoch == 1
    assert f"taking over the lock {exp / '.lock'} of host {socket.gethostname()}, pid {gone.pid}" in \
        (exp / "train.log").read_text()
    assert not (exp / ".lock").exists()


def test_another_hosts_lock_is_reported_and_force_takes_it(dirs, tmp_path):
    exp = tmp_path / "exp"
    exp.mkdir()
    shutil.copy(BAD / "other_host.lock", exp / ".lock")
    with pytest.raises(PunctkitError, match="host elsewhere.example.org, pid 4242.*--force"):
        train(one_epoch(), *dirs, exp, quiet=True)
    assert (exp / ".lock").read_bytes() == (BAD / "other_host.lock").read_bytes()
    assert sorted(p.name for p in exp.iterdir()) == [".lock"]
    st = train(one_epoch(), *dirs, exp, quiet=True, force=True)
    assert st.epoch == 1 and not (exp / ".lock").exists()
    assert "(--force)" in (exp / "train.log").read_text()


def test_the_lock_is_released_on_error_and_held_while_training(dirs, tmp_path):
    exp = tmp_path / "exp"
    seen = []

    def look(trainer) -> None:
        seen.append((exp / ".lock").read_text())

    train(one_epoch(), *dirs, exp, quiet=True, on_epoch_end=[look])
    assert seen and f"pid {os.getpid()}" in seen[0] and not (exp / ".lock").exists()
    bad = one_epoch()
    bad["train"]["optimizer"] = "sgd-nonexistent"
    with pytest.raises(PunctkitError, match="unknown optimizer"):
        train(bad, *dirs, tmp_path / "exp2", quiet=True)
    assert not (tmp_path / "exp2" / ".lock").exists()


def test_dir_lock_in_one_process(tmp_path):
    with DirLock(tmp_path / "x"):
        with pytest.raises(PunctkitError, match=f"pid {os.getpid()}"):
            DirLock(tmp_path / "x").acquire()
    assert not (tmp_path / "x" / ".lock").exists()
    lock = DirLock(tmp_path / "x")
    lock.acquire()
    (tmp_path / "x" / ".lock").write_text("host h\npid 1\n")  # someone else's now: release leaves it
    lock.release()
    assert (tmp_path / "x" / ".lock").read_text() == "host h\npid 1\n"
    shutil.copy(BAD / "notes.txt", tmp_path / "notes.txt")
    with pytest.raises(PunctkitError, match="not a directory"):
        DirLock(tmp_path / "notes.txt").acquire()
    assert (tmp_path / "notes.txt").read_bytes() == (BAD / "notes.txt").read_bytes()


def test_ddp_launcher_holds_the_lock_for_its_processes(dirs, tmp_path):
    exp = tmp_path / "exp"
    exp.mkdir()
    holder = _holder(exp)
    try:
        with pytest.raises(PunctkitError, match=f"pid {holder.pid}"):
            train(one_epoch(), *dirs, exp, quiet=True, nproc=2)
    finally:
        holder.kill()
        holder.wait()
    st = train(builtin_model(), *dirs, tmp_path / "exp2", quiet=True, nproc=2)  # rank 0 does not lock again
    assert st.epoch == 1 and not (tmp_path / "exp2" / ".lock").exists()
