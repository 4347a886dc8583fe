"""The models that ship with punctkit (punctkit/pretrained, `fast` and `accurate`): in a built wheel, the
fast one used when no model is named, each at most 30 MB, true-case, ONNX only, carded, and a one-line
error when an installation lacks one."""
from __future__ import annotations

import json
import subprocess
import sys
import zipfile

import pytest

from conftest import ROOT
from punct_util import PK

MODEL = ROOT / "punctkit" / "pretrained" / "fast.pkt"
MODELS = [MODEL, ROOT / "punctkit" / "pretrained" / "accurate.pkt"]


@pytest.mark.parametrize("model", MODELS, ids=lambda p: p.stem)
def test_each_shipped_model_is_small_true_case_onnx_only_and_carded(model):
    with zipfile.ZipFile(model) as z:
        names = set(z.namelist())
        card = json.loads(z.read("punctkit.json"))["card"]
    assert "model.onnx" in names and "model.pt" not in names and "frontend/case_prior.txt" in names
    assert model.stat().st_size <= 30 * 2 ** 20
    assert card["inventory"] == "truecase4"
    assert "CC BY-NC-ND" in card["licence"] and "CC BY-SA" in card["licence"] and "recipes/ted" in card["rebuild"]
    assert "calls" in card["training_data"]  # the data it learned from, and every source's licence
    assert "meetings" not in card["training_data"] or "AMI Meeting Corpus, CC BY 4.0" in card["licence"]


@pytest.mark.slow  # builds a wheel
def test_a_built_wheel_contains_both_models(wheel):
    """`pip wheel .` (what `pip install .` installs; conftest's `wheel`) carries punctkit/pretrained/*.pkt as
    package data, and the page of `punctkit serve` (punctkit/serve/page.html)."""
    with zipfile.ZipFile(wheel) as z:
        for model in MODELS:
            assert z.getinfo(f"punctkit/pretrained/{model.name}").file_size == model.stat().st_size
        page = ROOT / "punctkit" / "serve" / "page.html"
        assert z.read("punctkit/serve/page.html") == page.read_bytes()


def test_no_model_named_uses_the_default(tmp_path):
    """The README's first command: a cased line from the installed model, the words passed through."""
    r = subprocess.run(PK + ["punctuate", "--threads", "1"], input="so what do you think nasa will do next\n",
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = r.stdout.strip()
    assert out.startswith("So") and [w.strip(",.?").lower() for w in out.split()] == \
        "so what do you think nasa will do next".split()
    assert out[-1] in ".?!"  # the end of the input ends a sentence (decode/stream_end.py)


def test_a_missing_default_model_is_one_line(tmp_path):
    """An installation without the file (a copy of the package without it): one line, no traceback."""
    pkg = tmp_path / "site" / "punctkit"
    pkg.parent.mkdir()
    subprocess.run(["cp", "-r", str(ROOT / "punctkit"), str(pkg.parent)], check=True)
    (pkg / "pretrained" / "fast.pkt").unlink()
    r = subprocess.run([sys.executable, "-m", "punctkit.cli", "punctuate"], input="so what\n", capture_output=True,
                       text=True, env={"PYTHONPATH": str(pkg.parent), "PATH": "/usr/bin:/bin"}, cwd=tmp_path,
                       timeout=120)
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
    assert "the shipped model 'fast'" in r.stderr and "missing" in r.stderr, r.stderr


def test_the_fast_model_punctuates_without_torch_or_tqdm():
    """What `punctkit punctuate` with the default model imports is what its start-up pays for: neither
    torch nor transformers (ONNX only) nor tqdm (no bar is shown: utils/bench_punctuate.sh times the
    whole process). The words pass through; the first is capitalised, the last ends a sentence."""
    from punct_util import json_without

    words = "so what do you think about the new york office".split()
    shown = json_without("from punctkit import load_model\n"
                         "p = load_model('fast')\n"
                         f"print(json.dumps(next(p.label([{words!r}])).shown))",
                         blocked=("torch", "transformers", "tqdm"))
    assert [w.strip(".,?!").lower() for w in shown] == words
    assert shown[0][0].isupper() and shown[-1][-1] in ".?!"


def test_the_fast_models_gru_gates_are_clipped():
    """The fast model's graph was exported with its GRU gates clipped (punctkit/onnx.py, `clipped_grus`:
    the same labels on its valid and test sets, 8 % less time in its GRUs)."""
    onnx = pytest.importorskip("onnx")
    from punctkit.onnx import GRU_CLIP

    with zipfile.ZipFile(MODEL) as z:
        graph = onnx.load_from_string(z.read("model.onnx"))
    clips = [next((onnx.helper.get_attribute_value(a) for a in n.attribute if a.name == "clip"), None)
             for n in graph.graph.node if n.op_type == "GRU"]
    assert len(clips) == 3 and clips == [GRU_CLIP] * 3
