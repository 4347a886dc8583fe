"""local/ted/learning_curve.py: the learning curve's table, JSON and plot from experiments' scores;
case figures only for training text that is cased (issue 34)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import IWSLT, ROOT
from punct_util import cli
from punctkit.data.prepare import prepare

TED = ROOT.parent / "shared" / "data" / "ted" / "talks"
SCRIPT = ROOT / "local" / "ted" / "learning_curve.py"


def _exp(tmp: Path, name: str, data: Path) -> Path:
    """An experiment dir whose decode_test_cased/score.json scores `data` against itself."""
    d = tmp / name / "decode_test_cased"
    d.mkdir(parents=True)
    cli("score", data, data, "-o", d)  # writes score.txt and score.json there
    return tmp / name


def test_table_json_and_plot_with_case_only_for_cased_text(tmp_path):
    if not TED.is_dir() or not (IWSLT / "dev2012").is_file():
        pytest.skip("the shared TED talks or IWSLT data are not there")
    talk = sorted(TED.iterdir())[0]
    prepare([talk], tmp_path / "cased", inventory="truecase4", block_len=100)
    prepare([IWSLT / "dev2012"], tmp_path / "lower", inventory="truecase4", block_len=100, lines=(1, 300))
    lower, cased = _exp(tmp_path, "exp_lower", tmp_path / "lower"), _exp(tmp_path, "exp_cased", tmp_path / "cased")
    out = tmp_path / "curve"
    r = subprocess.run([sys.executable, SCRIPT, f"{tmp_path / 'cased'}={cased}", f"{tmp_path / 'lower'}={lower}",
                        "--out", out], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    points = json.loads(Path(f"{out}.json").read_text())
    n_words = [sum(len(line.split()) - 1 for line in (tmp_path / s / "text").read_text().splitlines())
               for s in ("lower", "cased")]
    assert [p["words"] for p in points] == sorted(n_words)  # sorted by size, words counted
    by = {Path(p["train"]).name: p for p in points}
    assert by["lower"]["case_exact"] is None and by["cased"]["case_exact"] == pytest.approx(100.0)
    assert by["cased"]["f1"] == pytest.approx(100.0)  # each reference scored against itself
    assert "- (lower-case text)" in r.stdout and Path(f"{out}.png").read_bytes()[:4] == b"\x89PNG"
    bad = subprocess.run([sys.executable, SCRIPT, f"{tmp_path / 'lower'}={tmp_path}", "--out", out],
                         capture_output=True, text=True, cwd=tmp_path)
    assert bad.returncode == 1 and len(bad.stderr.strip().splitlines()) == 1 and "run stages 5-6" in bad.stderr
