"""local/iwslt/soft_labels.py: distillation's soft labels from gold labels and a teacher's probs."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT
from punctkit.data.datadir import read_data_dir, write_data_dir
from punctkit.data.labels import inventory_for
from punctkit.data.probs import read_probs, write_probs
from punctkit.data.utterance import Utterance

SCRIPT = ROOT / "local" / "iwslt" / "soft_labels.py"
LABELS = ["O", "COMMA", "PERIOD", "QUESTION"]


@pytest.fixture
def setup(tmp_path):
    """A 3-utterance data dir with every mark, and a teacher's random distributions over it."""
    rng = np.random.default_rng(0)
    utts = []
    for i in range(3):
        labs = list(rng.choice(LABELS, size=12, p=[0.6, 0.2, 0.1, 0.1]))
        labs[-1], labs[0] = "QUESTION", "PERIOD"
        utts.append(Utterance(f"u{i}", [f"w{j}" for j in range(12)], labs))
    write_data_dir(tmp_path / "data", utts, inventory_for(set(LABELS)))
    teacher = {u.uttid: rng.dirichlet(np.ones(4), size=12) for u in utts}
    write_probs(tmp_path / "teacher", sorted(teacher.items()))
    return tmp_path, read_data_dir(tmp_path / "data"), read_probs(tmp_path / "teacher", 4)


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *map(str, args)], capture_output=True, text=True)


def test_gold_rows_are_one_hot_of_the_labels(setup):
    d, dd, _ = setup
    r = run(d / "data", d / "gold")
    assert r.returncode == 0, r.stderr
    gold = read_probs(d / "gold" / "probs", 4)
    assert (d / "gold" / "inventory").read_text().strip() == dd.inventory.name
    for u in dd.utterances:
        rows = gold[u.uttid]
        assert np.allclose(rows.sum(1), 1) and set(np.unique(rows)) == {0.0, 1.0}
        assert [dd.inventory.labels[i] for i in rows.argmax(1)] == list(u.labels)


def test_teacher_rows_kept_except_gold_marks_named(setup):
    d, dd, teacher = setup
    r = run(d / "data", d / "q", "--probs", d / "teacher", "--keep", "QUESTION")
    assert r.returncode == 0, r.stderr
    out = read_probs(d / "q" / "probs", 4)
    q = dd.inventory.labels.index("QUESTION")
    n_kept = 0
    for u in dd.utterances:
        for lab, row, t in zip(u.labels, out[u.uttid], teacher[u.uttid]):
            if lab == "QUESTION":
                assert row[q] == 1.0 and row.sum() == 1.0
                n_kept += 1
            else:
                assert np.allclose(row, t, atol=1e-4)
    assert n_kept >= 3


def test_bad_inputs_are_one_line_and_write_nothing(setup):
    d, dd, teacher = setup
    short = {k: v[:-1] if k == "u1" else v for k, v in teacher.items()}
    write_probs(d / "short", sorted(short.items()))
    write_probs(d / "missing", [(k, v) for k, v in sorted(teacher.items()) if k != "u2"])
    for args in (["--keep", "QUESTION"], ["--probs", d / "teacher", "--keep", "EXCLAMATION"],
                 ["--probs", d / "short"], ["--probs", d / "missing"]):
        r = run(d / "data", d / "bad", *args)
        assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert "Traceback" not in r.stderr and not (d / "bad").exists()
    (d / "t6").mkdir()
    write_probs(d / "t6" / "probs", sorted(teacher.items()))
    (d / "t6" / "inventory").write_text("6class\n")
    r = run(d / "data", d / "bad", "--probs", d / "t6" / "probs")
    assert r.returncode == 1 and "teacher's labels are 6class" in r.stderr and not (d / "bad").exists()
    before = (d / "data" / "text").read_bytes()
    r = run(d / "data", d / "data")
    assert r.returncode == 1 and (d / "data" / "text").read_bytes() == before
    (d / "mine").mkdir()
    (d / "mine" / "notes.txt").write_text("mine")
    assert run(d / "data", d / "mine").returncode == 1 and not (d / "mine" / "probs").exists()
