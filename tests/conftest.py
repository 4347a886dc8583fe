"""Shared fixtures: where the shared reference data lives, the run's tiny package, and small helpers."""
from __future__ import annotations

import fcntl
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

if os.environ.get("PYTEST_XDIST_WORKER"):
    # xdist runs one worker per core: one math thread each (and in the commands they start),
    # so that two workers do not fight over the same cores
    os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]
IWSLT = ROOT.parent / "shared" / "data" / "iwslt"
RECIPE_TESTS = ROOT / "tests" / "recipes"


def pytest_collection_modifyitems(config, items) -> None:
    """Every test under tests/recipes runs a tiny recipe end to end: each is marked `slow` (setup.cfg), as the
    other end-to-end tests are where they are written."""
    for item in items:
        if RECIPE_TESTS in item.path.parents:
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def iwslt() -> Path:
    """The shared IWSLT reference copy (skips only when the checkout has no ../shared)."""
    if not (IWSLT / "test2011").is_file():
        pytest.skip(f"IWSLT reference data not found at {IWSLT}")
    return IWSLT


@pytest.fixture(scope="session")
def punct():
    """The shipped `fast` model's engine (one thread), loaded once per run: `punct` is this model in every test; a
    test that needs another model names its fixture after that model (`tiny_engine`, ...)."""
    from punctkit import load_model

    return load_model("fast", threads=1)


@pytest.fixture
def one_torch_thread():
    """One torch thread while a test runs (tiny models run faster so on a shared, busy CPU)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


# the run's one tiny package (`tiny_package`): a DRNN-LWMA trained with look-ahead windows (so that the streaming
# tests also show that the training option runs end to end), packed with its ONNX graph
TINY_MODEL = {"type": "drnn_lwma", "n_layers": 2, "n_heads": 2, "d_model": 32, "dropout": 0.1}
TINY_EPOCHS = 4
TINY_LOOKAHEAD = {"max": 4, "p": 0.5}


@dataclass(frozen=True)
class TinyPackage:
    """A directory holding a trained tiny model (exp/), its package with an ONNX graph (m.pkt) and test2011's first
    3000 words as a data directory (test/)."""

    dir: Path

    @property
    def exp(self) -> Path:
        return self.dir / "exp"

    @property
    def pkt(self) -> Path:
        return self.dir / "m.pkt"

    @property
    def test(self) -> Path:
        return self.dir / "test"

    def copy_to(self, d: Path, utts: int | None = None) -> Path:
        """`d` holding a copy of exp/, m.pkt and test/ (a test may write beside them) and words.txt: the first
        `utts` test utterances (all: None), one a line; `d`."""
        from punctkit.data.formats import read

        shutil.copytree(self.exp, d / "exp")
        shutil.copytree(self.test, d / "test")
        shutil.copy(self.pkt, d / "m.pkt")
        test, _ = read(d / "test")
        (d / "words.txt").write_text("".join(" ".join(u.words) + "\n" for u in test[:utts]))
        return d


def build_tiny_package(d: Path) -> None:
    """Train TINY_MODEL on 8000 words of dev2012 into d/exp and pack it with --onnx as d/m.pkt (punct_util.train_tiny;
    skips when the IWSLT copy is missing)."""
    from punct_util import cli, tiny_conf, train_tiny

    conf = tiny_conf(dict(TINY_MODEL), epochs=TINY_EPOCHS)
    conf["train"]["lookahead"] = dict(TINY_LOOKAHEAD)
    cli("pack", train_tiny(d, conf), "-o", d / "m.pkt", "--onnx")


@pytest.fixture(scope="session")
def tiny_package(tmp_path_factory) -> TinyPackage:
    """The run's tiny package, trained once per test run: under xdist the first worker that asks builds it in the
    run's temporary directory (shared by the workers, under a file lock) and the others wait for it and read it.
    Tests must not write into it: `TinyPackage.copy_to` gives a module a copy of its own."""
    return TinyPackage(built_once(tmp_path_factory, "tiny_package", build_tiny_package))


def built_once(tmp_path_factory, name: str, build: Callable[[Path], None]) -> Path:
    """The directory NAME of the test run's temporary directory (shared by the xdist workers), filled by
    `build(directory)` once per run: the first worker that asks builds it under a file lock, the others wait for it
    and read it; a half-built one (a worker whose build failed or skipped) is built again."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the run's directory, above each worker's own
    d = root / name
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also when the build fails or skips
        if not (d / "built").is_file():
            shutil.rmtree(d, ignore_errors=True)
            d.mkdir()
            build(d)
            (d / "built").touch()
    return d


def build_wheel(d: Path) -> None:
    """`pip wheel .` of the checkout into `d`, without the test run's PYTHONPATH or virtual environment."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PUNCTKIT_DEBUG")}
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation", "-q",
                        "-w", str(d)], cwd=d, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    """punctkit's wheel (`pip wheel .`, what `pip install .` installs), built once per test run (`built_once`):
    setuptools builds in the checkout's build/ directory, so two workers building at once collide on it (`File
    exists: build/bdist...`)."""
    found = sorted(built_once(tmp_path_factory, "wheel", build_wheel).glob("punctkit-*.whl"))
    assert len(found) == 1, found
    return found[0]


@pytest.fixture(scope="session")
def tiny_engine(tiny_package):
    """The engine of the run's tiny package (`tiny_package`; its ONNX graph where onnxruntime is installed), one
    thread."""
    from punctkit import load_model

    return load_model(tiny_package.pkt, threads=1)
