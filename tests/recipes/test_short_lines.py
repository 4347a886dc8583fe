"""local/ted/short_lines.py: a data directory's words as a recognizer's short lines (lower case, no marks) and the
reference cut the same, as plain text and Kaldi text, IWSLT's split contractions written whole when asked."""
import re
import subprocess
from pathlib import Path

from engine_util import make_dirs

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "recipes" / "ted" / "local" / "short_lines.py"


def test_lines_of_the_asked_length_words_as_the_reference_has_them(iwslt, tmp_path):
    data, _ = make_dirs(iwslt, tmp_path, "1:600", "601:700")
    out = tmp_path / "lines"
    r = subprocess.run(["python", str(SCRIPT), str(data), str(out), "--min", "3", "--max", "5",
                        "--whole-contractions"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    given = (out / "in.txt").read_text().splitlines()
    ref = (out / "ref.txt").read_text().splitlines()
    assert len(given) == len(ref) > 100
    for g, w in zip(given, ref):
        assert 1 <= len(g.split()) <= 5 and g == g.lower() and not re.search(r"[.,?!](\s|$)", g)
        assert [re.sub(r"[.,?!]+$", "", x).lower() for x in w.split()] == g.split()
    assert sum(3 <= len(g.split()) for g in given) > 0.9 * len(given)  # only an utterance's last line is shorter
    words = " ".join(given).split()
    assert "we're" in words and "'re" not in words and "'s" not in words  # written whole
    assert any(x[-1] in ".?" for x in " ".join(ref).split())  # the reference keeps its marks
    # Kaldi text: the same lines, an id each, the same ids on both sides
    kin, kref = ((out / n).read_text().splitlines() for n in ("in.kt", "ref.kt"))
    assert [ln.split(" ", 1)[1] for ln in kin] == given and [ln.split(" ", 1)[1] for ln in kref] == ref
    ids = [ln.split()[0] for ln in kin]
    assert ids == [ln.split()[0] for ln in kref] and len(set(ids)) == len(ids)
    # without --whole-contractions the data's own words
    r = subprocess.run(["python", str(SCRIPT), str(data), str(tmp_path / "split")], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and "'re" in (tmp_path / "split" / "in.txt").read_text().split()
    r = subprocess.run(["python", str(SCRIPT), str(data), str(tmp_path / "bad"), "--min", "5", "--max", "2"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1
    # a rerun replaces its own files; a user's file in OUT is kept, and nothing is written
    r = subprocess.run(["python", str(SCRIPT), str(data), str(out)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "in.kt").write_text("my notes\n")
    r = subprocess.run(["python", str(SCRIPT), str(data), str(mine)], capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1 and "in.kt" in r.stderr
    assert (mine / "in.kt").read_text() == "my notes\n" and sorted(p.name for p in mine.iterdir()) == ["in.kt"]
    r = subprocess.run(["python", str(SCRIPT), str(tmp_path / "nowhere"), str(tmp_path / "bad")], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1 and "nowhere" in r.stderr
