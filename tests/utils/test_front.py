"""The speed/accuracy front (issue 36): utils/bench_punctuate.sh --score true times a package and
scores its shipped path on test2011; utils/plot_front.py draws F1 against words/s and names the front."""
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "punctkit" / "pretrained" / "fast.pkt"


def front_module():
    spec = importlib.util.spec_from_file_location("plot_front", ROOT / "utils" / "plot_front.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_scores_the_shipped_path_and_the_plot_names_the_front(iwslt, tmp_path):
    """punctuate --format twocol over test2011 as 100-word lines, scored against it (the true-case
    model writes test2011's mojibake words Capitalized: they must still read the same), twice: each
    word read twice (the package's step) and once (--step = window)."""
    tsv = tmp_path / "front.tsv"
    for extra in ([], ["--punctuate-args", "--step 100"]):
        r = subprocess.run(["bash", str(ROOT / "utils" / "bench_punctuate.sh"), "--repeat", "1", "--threads", "1",
                            "--score", "true", "--data", str(iwslt / "test2011"), "--out", str(tsv), *extra,
                            str(MODEL)], capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr
        fields = r.stdout.splitlines()[1].split("\t")
        assert fields[1] == "12626" and 30 < float(fields[5]) <= 100 and "F1" in fields[6]
    rows = [line.split("\t") for line in tsv.read_text().splitlines() if not line.startswith("#")]
    assert len(rows) == 2 and all(len(f) == 6 for f in rows)
    r = subprocess.run([sys.executable, str(ROOT / "utils" / "plot_front.py"), str(tsv), "--out", str(tmp_path / "f"),
                        "--name", f"{MODEL}=shipped"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    got = json.loads((tmp_path / "f.json").read_text())
    assert got["cpu"][0].startswith("# cpu: ") and [p["name"] for p in got["points"]] == ["shipped", "shipped"]
    a, b = got["points"]
    faster_and_better = [p for p, q in ((a, b), (b, a)) if p["words_per_s"] >= q["words_per_s"] and p["f1"] >= q["f1"]]
    assert sum(p["front"] for p in got["points"]) == (1 if faster_and_better else 2)
    assert (tmp_path / "f.png").read_bytes()[:4] == b"\x89PNG" and "| shipped |" in r.stdout


def test_the_front_is_the_points_no_other_dominates():
    m = front_module()
    pts = m.mark_front([{"name": n, "words_per_s": w, "f1": f} for n, w, f in
                        (("fast", 14000, 64.7), ("slow", 258, 73.8), ("middle", 538, 65.1), ("worse", 500, 60.0),
                         ("tie", 14000, 64.7))])
    assert [p["name"] for p in pts if p["front"]] == ["fast", "slow", "middle", "tie"]


@pytest.mark.parametrize("content, says", [
    ("m.pkt\t12626\t1.0\t12626\t20000\n", "5 fields, expected 6"),
    ("m.pkt\t12626\t1.0\tfast\t20000\t60.0\n", "is not a number"),
    ("# cpu: x\n", "no timed packages"),
])
def test_a_bad_bench_file_is_one_line(tmp_path, content, says):
    (tmp_path / "b.tsv").write_text(content)
    r = subprocess.run([sys.executable, str(ROOT / "utils" / "plot_front.py"), str(tmp_path / "b.tsv"), "--out",
                        str(tmp_path / "f")], capture_output=True, text=True)
    assert r.returncode == 1 and says in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "f.png").exists()
