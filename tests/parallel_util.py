"""Helpers of tests/recipes/test_parallel.py that other tests use too: decode_stage, dir_bytes,
multi_doc_dir, need_iwslt, tiny_model."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from punctkit.data.datadir import combine_data_dirs
from punctkit.data.prepare import prepare
from punctkit.fit import train

ROOT = Path(__file__).resolve().parents[1]
RECIPE = ROOT / "recipes" / "iwslt"
TINY = RECIPE / "conf" / "train_tiny.yaml"
IWSLT = ROOT.parent / "shared" / "data" / "iwslt"
OVERRIDES = ["train.batch_size=4", "train.epochs=2"]


def need_iwslt() -> None:
    if not (IWSLT / "dev2012").is_file():
        pytest.skip(f"IWSLT reference data not found at {IWSLT}")


def multi_doc_dir(root: Path, name: str = "test") -> Path:
    """`root/data/name`: three line ranges of test2011 prepared as three documents (speakers)."""
    docs = []
    for k, (a, b) in enumerate([(1, 400), (401, 700), (701, 1200)], 1):
        prepare([IWSLT / "test2011"], root / "docs" / f"doc{k}", block_len=100, lines=(a, b))
        docs.append(root / "docs" / f"doc{k}")
    out = root / "data" / name
    combine_data_dirs(out, docs)
    return out


def tiny_model(root: Path, nproc: int = 1) -> Path:
    """Train conf/train_tiny.yaml (2 epochs, a few seconds) into `root/exp/tiny`."""
    prepare([IWSLT / "dev2012"], root / "data" / "train", block_len=100, lines=(1, 1500))
    prepare([IWSLT / "dev2012"], root / "data" / "valid", block_len=100, lines=(1501, 1800))
    train(TINY, root / "data" / "train", root / "data" / "valid", root / "exp" / "tiny", overrides=OVERRIDES,
          quiet=True, nproc=nproc)
    return root / "exp" / "tiny"


def decode_stage(root: Path, nj: int, backend: str = "local", timeout: int = 300) -> subprocess.CompletedProcess:
    """Run stage 5 of the recipe in place on `root/data/test` with the model `root/exp/tiny`."""
    env = dict(os.environ, cmd_backend=backend)
    return subprocess.run(["./punct.sh", "--stage", "5", "--stop-stage", "5", "--train-config", "conf/train_tiny.yaml",
                           "--test-sets", "test", "--data", str(root / "data"), "--expdir", str(root / "exp"),
                           "--tag", "tiny", "--nj", str(nj)],
                          cwd=RECIPE, env=env, capture_output=True, text=True, timeout=timeout)


def dir_bytes(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.is_file()}
