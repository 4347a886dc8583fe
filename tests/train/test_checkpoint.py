"""Checkpoints hold tensors and plain data only.

Every checkpoint is loaded with `torch.load(weights_only=True)`: one whose pickle calls
code (tests/bad_inputs/packages/code_checkpoint.pt: `os.system("touch punctkit-pwned")`)
is refused in one line by decode, pack, average-checkpoints and resume, and the command
never runs. RNG states are saved as tensors, lists and numbers; checkpoints written
before (tests/fixtures/legacy/exp, numpy's state as an ndarray) still load and resume.
"""
from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from legacy_util import LEGACY, prepare_data
from punctkit.files import PunctkitError
from punctkit.train import checkpoint as ckpt

ROOT = Path(__file__).resolve().parents[2]
CODE = ROOT / "tests" / "bad_inputs" / "packages" / "code_checkpoint.pt"
MARKER = "punctkit-pwned"


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> tuple[Path, Path]:
    """The generated train/valid data dirs the legacy model was trained on."""
    return prepare_data(tmp_path_factory.mktemp("legacy_data"))


def legacy_exp(d: Path) -> Path:
    exp = d / "exp"
    shutil.copytree(LEGACY / "exp", exp)
    return exp


@pytest.mark.parametrize("name", ["code_checkpoint.pt", "code_checkpoint_raw.pt"])
def test_code_checkpoint_is_refused_in_one_line(name, tmp_path, monkeypatch):
    """torch's zip format or a raw pickle of protocol 4: refused, naming the global it would import."""
    monkeypatch.chdir(tmp_path)
    path = CODE.with_name(name)
    with pytest.raises(PunctkitError) as e:
        ckpt.load_checkpoint(path)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"{path}: not a plain-data checkpoint (needs GLOBAL ")
    assert msg.endswith("punctkit loads no code") and "system" in msg
    assert not (tmp_path / MARKER).exists()


@pytest.mark.parametrize("command", ["decode", "pack", "average-checkpoints", "resume"])
def test_code_checkpoint_is_refused_by_every_command(command, data, tmp_path):
    """The hostile file as the model dir's only epoch checkpoint: exit 1, one line, the code never runs."""
    exp = legacy_exp(tmp_path)
    (exp / "model.avg.pt").unlink()
    shutil.copyfile(CODE, exp / "checkpoints" / "epoch_2.pt")
    train, valid = data
    args = {"decode": ["decode", exp, valid, tmp_path / "out"],
            "pack": ["pack", exp, "-o", tmp_path / "m.pkt"],
            "average-checkpoints": ["average-checkpoints", exp],
            "resume": ["train", "--config", exp / "config.yaml", "--train-dir", train, "--valid-dir", valid,
                       "--exp", exp, "--set", "train.epochs=3"]}[command]
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    r = subprocess.run([sys.executable, "-m", "punctkit.cli", *map(str, args)], capture_output=True, text=True,
                       cwd=cwd, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert not (cwd / MARKER).exists()
    assert r.returncode == 1, r.stderr
    err = [ln for ln in r.stderr.splitlines() if ln.startswith("punctkit: error:")]
    assert len(err) == 1 and "epoch_2.pt: not a plain-data checkpoint (needs GLOBAL " in err[0], r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "out").exists() and not (tmp_path / "m.pkt").exists()
    assert not (exp / "model.avg.pt").exists() and not (exp / "checkpoints" / "epoch_3.pt").exists()


def test_garbage_is_a_corrupt_checkpoint(tmp_path):
    (tmp_path / "g.pt").write_bytes(b"garbage")
    with pytest.raises(PunctkitError, match=r"g\.pt: corrupt or unreadable checkpoint"):
        ckpt.load_checkpoint(tmp_path / "g.pt")


def test_new_checkpoints_are_plain_data_and_restore_the_generators(tmp_path):
    """What rng_state saves loads with no allowlist at all and restores every generator."""
    random.seed(1), np.random.seed(2), torch.manual_seed(3)
    ckpt.save_checkpoint(tmp_path / "c.pt", {"model": {"w": torch.ones(2)}, "rng": ckpt.rng_state()})
    want = (random.random(), np.random.rand(), torch.rand(1).item())
    assert torch.serialization.get_unsafe_globals_in_checkpoint(tmp_path / "c.pt") == []
    state = torch.load(tmp_path / "c.pt", weights_only=True)  # no safe_globals
    random.seed(9), np.random.seed(9), torch.manual_seed(9)
    ckpt.set_rng_state(ckpt.load_checkpoint(tmp_path / "c.pt")["rng"])
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == want
    assert isinstance(state["rng"]["python"], list) and isinstance(state["rng"]["numpy"]["key"], torch.Tensor)


def test_legacy_checkpoint_loads_and_resumes(data, tmp_path):
    """An epoch checkpoint written before the change (numpy RNG state as an ndarray) restores its
    generators, and training resumes from it; the new epoch's checkpoint is plain data."""
    from punctkit.expdir import load_experiment_model
    from punctkit.fit import train

    exp = legacy_exp(tmp_path)
    old = ckpt.load_checkpoint(exp / "checkpoints" / "epoch_2.pt")
    assert isinstance(old["rng"]["numpy"][1], np.ndarray)  # the legacy layout, read through LEGACY_GLOBALS
    ckpt.set_rng_state(old["rng"])
    assert np.array_equal(np.random.get_state()[1], old["rng"]["numpy"][1])
    load_experiment_model(exp)  # model.avg.pt of the same run
    conf = yaml.safe_load((exp / "config.yaml").read_text())
    conf.pop("resolved")
    conf["train"]["epochs"] = 3
    st = train(conf, *data, exp, quiet=True)
    assert st.epoch == 3 and re.search(r"resumed from .*epoch_2\.pt \(epoch 2", (exp / "train.log").read_text())
    new = exp / "checkpoints" / "epoch_3.pt"
    assert torch.serialization.get_unsafe_globals_in_checkpoint(new) == []
    assert torch.load(new, weights_only=True)["state"]["epoch"] == 3


def test_every_torch_load_is_weights_only():
    """No punctkit module calls torch.load without weights_only=True."""
    calls = []
    for py in (ROOT / "punctkit").rglob("*.py"):
        calls += [(py.name, m.group(0)) for m in re.finditer(r"torch\.load\([^)]*\)", py.read_text())]
    assert calls and all("weights_only=True" in c for _, c in calls), calls


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (a resume on a GPU)")
def test_generators_restore_from_a_checkpoint_loaded_onto_the_gpu(tmp_path):
    """A GPU run resumes with load_checkpoint(path, cuda): every saved RNG state then lies on the GPU,
    and set_rng_state must hand the setters CPU bytes (a resume on an H200 failed so, session 31)."""
    torch.manual_seed(3), torch.cuda.manual_seed_all(4)
    ckpt.save_checkpoint(tmp_path / "c.pt", {"rng": ckpt.rng_state()})
    want = (torch.rand(1).item(), torch.rand(1, device="cuda").item())
    torch.manual_seed(9), torch.cuda.manual_seed_all(9)
    ckpt.set_rng_state(ckpt.load_checkpoint(tmp_path / "c.pt", torch.device("cuda"))["rng"])
    assert (torch.rand(1).item(), torch.rand(1, device="cuda").item()) == want
