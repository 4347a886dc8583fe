"""A spawned DDP process's exception reaches the launcher as it was raised (punctkit/train/ddp.py):
a user error is the one line the single-process run shows, anything else an internal error naming
the process and the exception; the child's traceback is kept for --debug, no traceback text parsed."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from punct_util import PK
from punctkit.files import PunctkitError
from punctkit.train.ddp import RemoteTraceback, TrainProcessError, raise_reported

ROOT = Path(__file__).resolve().parents[2]
TINY_YAML = ROOT / "recipes" / "iwslt" / "conf" / "train_tiny.yaml"


def fail_on_rank_1(trainer) -> None:
    """An `on_step` callback (pickled by name into the spawned processes): a user error in rank 1 only."""
    if trainer.rank == 1:
        raise PunctkitError("rank 1 refuses: a user error raised in one process")


def crash_on_rank_1(trainer) -> None:
    """An `on_step` callback: a bug in rank 1 only."""
    if trainer.rank == 1:
        raise ValueError("rank 1 crashed")


def train_cmd(train_dir: Path, exp: Path, nproc: int, debug: bool = False) -> subprocess.CompletedProcess:
    env = dict(os.environ, PUNCTKIT_DEBUG="1" if debug else "0")
    return subprocess.run(PK + ["train", "--config", str(TINY_YAML), "--train-dir", str(train_dir),
                                "--exp", str(exp), "--nproc", str(nproc)],
                          capture_output=True, text=True, env=env, timeout=300)


def test_a_child_s_user_error_is_the_one_line_of_a_single_process_run(tmp_path):
    # a data dir that only reading it finds wrong, in the child (a missing one is refused before any process)
    missing = tmp_path / "bad_data"
    missing.mkdir()
    (missing / "text").write_text("u1 a b c\n")
    (missing / "labels").write_text("u1 O O\n")
    one = train_cmd(missing, tmp_path / "exp1", 1)
    two = train_cmd(missing, tmp_path / "exp2", 2)
    assert one.returncode == two.returncode == 1, two.stderr
    line = two.stderr.strip().splitlines()[-1]
    assert line == one.stderr.strip().splitlines()[-1]
    assert line.startswith("punctkit: error: ") and str(missing) in line
    assert [ln for ln in two.stderr.splitlines() if ln.startswith("punctkit:")] == [line]
    assert "Traceback" not in two.stderr and "internal error" not in two.stderr
    # --debug: the child's own traceback (where read_data_dir raised), then the same one line
    dbg = train_cmd(missing, tmp_path / "exp3", 2, debug=True)
    assert dbg.returncode == 1
    assert "RemoteTraceback" in dbg.stderr and "read_data_dir" in dbg.stderr
    assert dbg.stderr.strip().splitlines()[-1] == line


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    from conftest import IWSLT
    from engine_util import make_dirs

    if not (IWSLT / "dev2012").is_file():
        pytest.skip(f"IWSLT reference data not found at {IWSLT}")
    return make_dirs(IWSLT, tmp_path_factory.mktemp("ddperr"), "1:400", "401:500")


def one_step_conf() -> dict:
    """A tiny built-in model (spawned processes know only the registry's models)."""
    return {"frontend": {"kind": "word", "min_count": 1},
            "model": {"type": "transformer_tagger", "n_layers": 1, "d_model": 16, "n_heads": 2, "d_ff": 32},
            "train": {"batch_size": 8, "window": 40, "epochs": 1, "seed": 3, "threads": 1},
            "decode": {"window": 40, "step": 20, "batch_size": 16}}


def test_a_user_error_in_one_rank_is_raised_as_it_was(dirs, tmp_path):
    from punctkit.train.trainer import train

    with pytest.raises(PunctkitError) as info:
        train(one_step_conf(), *dirs, tmp_path / "exp", quiet=True, nproc=2, on_step=[fail_on_rank_1])
    assert str(info.value) == "rank 1 refuses: a user error raised in one process"
    assert isinstance(info.value.__cause__, RemoteTraceback) and "fail_on_rank_1" in info.value.__cause__.text
    assert not (tmp_path / "exp" / ".lock").exists()


def test_a_bug_in_one_rank_is_an_internal_error_naming_it(dirs, tmp_path):
    from punctkit.train.trainer import train

    with pytest.raises(TrainProcessError, match=r"^training process 1: ValueError: rank 1 crashed$") as info:
        train(one_step_conf(), *dirs, tmp_path / "exp", quiet=True, nproc=2, on_step=[crash_on_rank_1])
    assert not isinstance(info.value, PunctkitError)
    assert "crash_on_rank_1" in info.value.__cause__.text


def report(rank: int, t: float, user: bool, kind: str = "RuntimeError", message: str = "m") -> dict:
    return {"rank": rank, "time": t, "type": kind, "message": message, "user_error": user,
            "traceback": f"Traceback (rank {rank})\n"}


def test_which_report_the_launcher_raises():
    # a user error wins over an earlier internal error (a peer's collective failing after it)
    with pytest.raises(PunctkitError, match="^bad data$"):
        raise_reported([report(0, 1.0, False), report(1, 2.0, True, "PunctkitError", "bad data")], 0)
    # else the earliest exception, once the process torch saw fail has reported
    with pytest.raises(TrainProcessError, match="^training process 1: ValueError: boom$"):
        raise_reported([report(0, 2.0, False), report(1, 1.0, False, "ValueError", "boom")], 0)
    with pytest.raises(TrainProcessError, match="^training process 0: KeyError$"):
        raise_reported([report(0, 1.0, False, "KeyError", "")], 0)
    # the failed process reported nothing (killed by a signal): torch's own exception stands
    assert raise_reported([report(0, 1.0, False)], 1) is None
    assert raise_reported([], None) is None
