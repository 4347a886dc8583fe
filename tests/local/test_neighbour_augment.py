"""local/iwslt/neighbour_augment.py: a data dir's copy with words swapped for their nearest
neighbours (TinyBERT-style augmentation, for a teacher to label)."""
from __future__ import annotations

import subprocess
import sys
from collections import Counter

import numpy as np
import pytest

from conftest import ROOT
from punctkit.data.datadir import read_data_dir
from punctkit.data.prepare import prepare

SCRIPT = ROOT / "local" / "iwslt" / "neighbour_augment.py"


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """test2011's first 3,000 words as a data dir, its words' vocabulary by count, and random 8-d vectors."""
    from conftest import IWSLT

    if not (IWSLT / "test2011").is_file():
        pytest.skip(f"IWSLT reference data not found at {IWSLT}")
    d = tmp_path_factory.mktemp("nbr")
    prepare([IWSLT / "test2011"], d / "data", lines=(1, 3000), block_len=100)
    dd = read_data_dir(d / "data")
    counts = Counter(w for u in dd.utterances for w in u.words)
    ranked = [w for w, _ in counts.most_common()]
    (d / "vocab.txt").write_text("\n".join(["<pad>", "<unk>"] + ranked) + "\n")
    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(len(ranked), 8)).astype(np.float32)
    with open(d / "vectors.txt", "w") as f:
        f.write(f"{len(ranked)} 8\n")
        for w, v in zip(ranked, vecs):
            f.write(w + " " + " ".join(f"{x:.6f}" for x in v) + "\n")
    return d, dd, ranked, vecs


def run(d, out, *args):
    return subprocess.run([sys.executable, SCRIPT, d / "data", d / "vectors.txt", d / "vocab.txt", out,
                           *map(str, args)], capture_output=True, text=True)


def nearest(ranked, vecs, k):
    """Brute force: each word's k nearest alphabetic words by cosine (not itself)."""
    unit = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    ok = np.array([w.isascii() and w.isalpha() for w in ranked])
    sims = unit @ unit.T
    sims[:, ~ok] = -np.inf
    np.fill_diagonal(sims, -np.inf)
    return {w: {ranked[j] for j in np.argsort(-sims[i])[:k]} for i, w in enumerate(ranked)}


def test_swaps_are_neighbours_labels_and_lengths_kept(setup, tmp_path):
    d, dd, ranked, vecs = setup
    r = run(d, tmp_path / "aug", "--rate", 0.5, "--neighbours", 3, "--keep-top", 20, "--prefix", "augx")
    assert r.returncode == 0, r.stderr
    aug = read_data_dir(tmp_path / "aug")
    near, top = nearest(ranked, vecs, 3), set(ranked[:20])
    assert len(aug.utterances) == len(dd.utterances)
    swapped = eligible = 0
    for u, a in zip(dd.utterances, aug.utterances):
        assert a.uttid.startswith("augx-") and aug.utt2spk[a.uttid] == "augx"
        assert a.labels == u.labels and len(a.words) == len(u.words)
        for w, x in zip(u.words, a.words):
            eligible += w not in top
            if x != w:
                swapped += 1
                assert w not in top and x in near[w], (w, x)
    assert 0.4 < swapped / eligible < 0.6  # rate 0.5 of the words that may be swapped
    assert f"{swapped} of {dd.words()} words swapped" in r.stdout


def test_rate_zero_copies_and_the_output_is_never_an_existing_dir(setup, tmp_path):
    d, dd, _, _ = setup
    assert run(d, tmp_path / "same", "--rate", 0).returncode == 0
    assert [u.words for u in read_data_dir(tmp_path / "same").utterances] == [u.words for u in dd.utterances]
    before = (d / "data" / "text").read_bytes()
    r = run(d, d / "data", "--rate", 0.5)
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert (d / "data" / "text").read_bytes() == before
    for bad in (["--neighbours", 0], ["--keep-top", -1], ["--rate", 1.5]):
        r = run(d, tmp_path / "bad", *bad)
        assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "bad").exists()
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine")
    r = run(d, tmp_path / "mine", "--rate", 0.5)
    assert r.returncode == 1 and (tmp_path / "mine" / "notes.txt").read_text() == "mine"
    assert not (tmp_path / "mine" / "text").exists()
