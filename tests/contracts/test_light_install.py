"""A light install: `pip install` of a built wheel into an empty virtual environment brings no torch, and
punctuates with both shipped models, scores, converts and lists the models; a command that needs torch fails
in one line naming the extra that brings it (`pip install 'punctkit[train]'`, punctkit/extras.py).

Its dependencies come from the package index (pip's cache where it has them); README.md ("Install") quotes
the size and install time of such an environment."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

TRAIN_MODULES = ("torch", "kaldiio", "sentencepiece", "subword_nmt", "gensim", "kaldi_native_fbank", "transformers")


def _run(cmd: list[str], cwd: Path, timeout: int = 240, **kwargs) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PUNCTKIT_DEBUG")}
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, **kwargs)


@pytest.fixture(scope="module")
def light(tmp_path_factory, wheel) -> Path:
    """The `bin` directory of a fresh venv holding punctkit's wheel (conftest's `wheel`) and its install
    requirements only."""
    d = tmp_path_factory.mktemp("light")
    r = _run([sys.executable, "-m", "venv", str(d / "venv")], d)
    assert r.returncode == 0, r.stderr
    start = time.monotonic()
    r = _run([str(d / "venv" / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)], d, timeout=600)
    if r.returncode != 0 and ("No matching distribution" in r.stderr or "Could not find a version" in r.stderr):
        pytest.skip(f"the package index does not have punctkit's requirements here: {r.stderr.strip()[-300:]}")
    assert r.returncode == 0, r.stderr
    print(f"light install: {time.monotonic() - start:.0f} s")  # README.md quotes it (pytest -s shows it)
    return d / "venv" / "bin"


def test_the_wheel_installs_without_torch_or_the_train_extra(light):
    code = ("import importlib.util, json; print(json.dumps([m for m in %r if importlib.util.find_spec(m)]))"
            % (TRAIN_MODULES,))
    r = _run([str(light / "python"), "-c", code], light)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"  # none of the `train` (or `plm`) extra's modules
    r = _run([str(light / "python"), "-c", "import onnxruntime, tokenizers, aiohttp, typer, yaml, tqdm, numpy"],
             light)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("model", ["fast", "accurate"])
def test_both_shipped_models_punctuate_in_a_light_install(light, tmp_path, model):
    words = "so what do you think nasa will do next i think they will go back to the moon"
    (tmp_path / "in.txt").write_text(words + "\n", encoding="utf-8")
    r = _run([str(light / "punctkit"), "punctuate", "-m", model, "--threads", "1", "in.txt", "-o", "out.txt"],
             tmp_path)
    assert r.returncode == 0, r.stderr
    out = (tmp_path / "out.txt").read_text(encoding="utf-8").split()
    assert [w.strip(",.?!").lower() for w in out] == words.split()  # words pass through
    assert out[0][0].isupper() and out[-1][-1] in ".?!"


def test_score_convert_and_models_run_in_a_light_install(light, tmp_path):
    (tmp_path / "ref.txt").write_text("So, what do you think? I think so.\n", encoding="utf-8")
    (tmp_path / "hyp.txt").write_text("So what do you think? I think so.\n", encoding="utf-8")
    r = _run([str(light / "punctkit"), "score", "ref.txt", "hyp.txt"], tmp_path)
    assert r.returncode == 0 and "COMMA" in r.stdout and "overall" in r.stdout, r.stderr
    r = _run([str(light / "punctkit"), "convert", "ref.txt", "ref.tc", "--to", "twocol"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "ref.tc").read_text(encoding="utf-8").splitlines()[0].split() == ["So", "COMMA"]
    r = _run([str(light / "punctkit"), "models"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("fast (default)") and any(ln.startswith("accurate") for ln in r.stdout.splitlines())


@pytest.mark.parametrize("args, needs", [
    (["train", "--config", "c.yaml", "--train-dir", "data", "--exp", "exp"], "torch"),
    (["w2v-train", "data", "w2v.txt"], "gensim"),
    (["extract-feats", "data", "feats"], "kaldi-native-fbank"),
])
def test_a_command_that_needs_the_train_extra_says_so_in_one_line(light, tmp_path, args, needs):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "text").write_text("u1 so what do you think\nu2 i think so\n", encoding="utf-8")
    (tmp_path / "data" / "labels").write_text("u1 COMMA O O O QUESTION\nu2 O O PERIOD\n", encoding="utf-8")
    (tmp_path / "data" / "wav.scp").write_text("u1 a.wav\nu2 b.wav\n", encoding="utf-8")
    (tmp_path / "c.yaml").write_text("model: {type: drnn_lwma}\n", encoding="utf-8")
    r = _run([str(light / "punctkit"), *args], tmp_path)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr == (f"punctkit: error: punctkit {args[0]} needs {needs}, which is not installed: "
                        f"pip install 'punctkit[train]'\n")
