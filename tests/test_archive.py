"""Tar extraction (punctkit.archive.extract_tar, used by local/ted/gpu_transfer.py) on every Python setup.cfg
declares: through tarfile's `data` filter where it has one, the same rules by hand where it has not (Debian 12's
3.11.2), hostile members refused either way; and the suite's Python-version-sensitive code under the oldest
declared Python where one is installed."""
from __future__ import annotations

import configparser
import glob
import os
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from punctkit.compat import tar_has_data_filter
from tar_util import check_extraction

ROOT = Path(__file__).resolve().parents[1]


def test_extraction_through_tarfiles_data_filter(tmp_path: Path) -> None:
    if not tar_has_data_filter():
        pytest.skip("this Python's tarfile has no data filter (before 3.10.12 / 3.11.4): the other test runs here")
    check_extraction(tmp_path)


def test_extraction_by_hand_where_tarfile_has_no_data_filter(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delattr(tarfile, "data_filter", raising=False)  # Python 3.10.0-3.10.11, 3.11.0-3.11.3
    check_extraction(tmp_path)


def declared_minimum() -> tuple[int, int]:
    """The oldest Python setup.cfg declares (`python_requires = >=3.X`)."""
    conf = configparser.ConfigParser()
    conf.read(ROOT / "setup.cfg")
    m = re.fullmatch(r">=\s*(\d+)\.(\d+)", conf["options"]["python_requires"].strip())
    assert m, conf["options"]["python_requires"]
    return int(m[1]), int(m[2])


def interpreter(version: tuple[int, int]) -> str | None:
    """A working `python3.X` (pyenv's shim on PATH may name one it does not select: each is tried)."""
    name = f"python{version[0]}.{version[1]}"
    found = [shutil.which(name), *sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version[0]}.{version[1]}"
                                                                      f".*/bin/{name}"))),
             *sorted(glob.glob(os.path.expanduser(f"~/.local/share/uv/python/*-{version[0]}.{version[1]}.*/bin/"
                                                  f"{name}")))]
    for exe in filter(None, found):
        r = subprocess.run([exe, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True, text=True)
        if r.returncode == 0 and r.stdout.strip() == str(version):
            return exe
    return None


def test_the_oldest_declared_python_compiles_and_extracts(tmp_path: Path) -> None:
    """Every module of punctkit, the recipes' scripts, utils/ and the tests compiles under the oldest declared
    Python (no newer syntax), and extract_tar works there both ways, with tarfile's data filter and without."""
    version = declared_minimum()
    exe = interpreter(version)
    if exe is None:
        pytest.skip(f"no Python {version[0]}.{version[1]} installed (setup.cfg's oldest; pyenv install "
                    f"{version[0]}.{version[1]} to run this check)")
    sources = [str(p) for d in ("punctkit", "local", "utils", "recipes", "tests")
               for p in sorted((ROOT / d).rglob("*.py"))]
    code = ("import sys\nfor f in sys.argv[1:]:\n    compile(open(f, encoding='utf-8').read(), f, 'exec')\n")
    r = subprocess.run([exe, "-c", code, *sources], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    r = subprocess.run([exe, str(ROOT / "tests" / "tar_util.py"), str(tmp_path)], capture_output=True, text=True,
                       env=env, timeout=120)
    assert r.returncode == 0 and r.stdout.splitlines()[-1] == "ok", r.stdout + r.stderr
