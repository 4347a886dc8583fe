"""Speech2Vec: s2v-train on tiny synthesized data writes vectors that `embeddings:` reads, and learns."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from punct_util import cli
from punctkit.data.datadir import write_data_dir
from punctkit.data.formats import Utterance
from punctkit.data.labels import get_inventory
from punctkit.feats.cmvn import compute_cmvn
from punctkit.feats.fbank_pitch import extract_feats
from punctkit.feats.synth import synthesize_data_dir
from punctkit.text.embeddings import build_matrix, load_vectors
from punctkit.train.s2v import S2vOptions, skipgram_pairs, train_speech2vec, word_segments

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "recipes" / "tts_iwslt" / "conf"
pytestmark = pytest.mark.skipif(shutil.which("espeak-ng") is None or shutil.which("sox") is None,
                                reason="espeak-ng or sox not installed (apt-get install -y espeak-ng sox)")

TEXT = [
    "so i do n't think it 's true what about the mails they sent",
    "well we 're here today to talk about the evolution of a puppet horse",
    "and then it ended but nobody knew why the horse was here",
    "we think the puppet is true and the horse is a puppet too",
]


@pytest.fixture(scope="module")
def audio(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four short utterances spoken by espeak-ng, with fbank+pitch features, global CMVN and a ctm."""
    d = tmp_path_factory.mktemp("s2v")
    utts = [Utterance(f"u{k}", t.split(), ["O"] * (len(t.split()) - 1) + ["PERIOD"]) for k, t in enumerate(TEXT)]
    write_data_dir(d / "text", utts, get_inventory("4class"))
    synthesize_data_dir(d / "text", d / "audio", nj=2, show_progress=False)
    extract_feats(d / "audio", d / "audio" / "feats", CONF / "fbank.conf", CONF / "pitch.conf", show_progress=False)
    compute_cmvn(d / "audio")
    return d / "audio"


def test_skipgram_pairs_stay_within_the_window_and_the_utterance() -> None:
    assert skipgram_pairs([[0, 1, 2], [3, 4]], 1) == [(0, 1), (1, 0), (1, 2), (2, 1), (3, 4), (4, 3)]
    assert len(skipgram_pairs([list(range(10))], 2)) == 2 * (10 - 1) + 2 * (10 - 2)


def test_segments_are_the_words_own_frames(audio: Path) -> None:
    words, segs, utts = word_segments(audio, max_frames=50)
    assert words == [w for t in TEXT for w in t.split()]
    assert [len(u) for u in utts] == [len(t.split()) for t in TEXT]
    assert all(1 <= len(s) <= 50 and s.shape[1] == 43 for s in segs)
    # a long word has more frames than `a` in the same utterance
    i = words.index("evolution")
    assert len(segs[i]) > len(segs[words.index("a")])


def test_loss_goes_down_and_same_seed_same_vectors(audio: Path, tmp_path: Path, one_torch_thread) -> None:
    opts = S2vOptions(dim=50, hidden=16, epochs=4, batch_size=16, lr=0.01, seed=3)
    res = train_speech2vec(audio, tmp_path / "a.txt", opts, show_progress=False, echo=lambda s: None)
    assert len(res.losses) == 4 and res.losses[-1] < 0.9 * res.losses[0]
    train_speech2vec(audio, tmp_path / "b.txt", opts, show_progress=False, echo=lambda s: None)
    assert (tmp_path / "a.txt").read_text() == (tmp_path / "b.txt").read_text()


def test_s2v_train_writes_vectors_that_embeddings_reads(audio: Path, tmp_path: Path) -> None:
    out = tmp_path / "s2v.txt"
    r = cli("s2v-train", audio, out, "--epochs", "2", "--hidden", "16", "--window", "2", "--seed", "1")
    types = sorted({w for t in TEXT for w in t.split()})
    assert f"{len(types)} words, dim 50" in r.stderr
    kv = load_vectors(out)  # the reader behind `embeddings: {speech: FILE}`
    assert kv.vector_size == 50 and sorted(kv.key_to_index) == types
    assert np.isfinite(kv.vectors).all() and np.std(kv.vectors) > 0
    log = (tmp_path / "s2v.txt.log").read_text().splitlines()
    assert [ln.split(":")[0] for ln in log if ln.startswith("epoch")] == ["epoch 1", "epoch 2"]
    # Yi & Tao (word + speech, sum) and Faber (W2V + S2V, concatenation) from the embeddings section
    w2v = tmp_path / "w2v.txt"
    cli("w2v-train", audio, w2v, "--dim", "50", "--epochs", "1")
    tokens = ["<pad>", "horse", "puppet", "zebra"]
    summed = build_matrix({"word": str(w2v), "speech": str(out), "combine": "sum"}, tokens)
    joined = build_matrix({"word": str(w2v), "speech": str(out), "combine": "concat"}, tokens)
    assert summed.shape == (4, 50) and joined.shape == (4, 100)
    assert np.allclose(joined[1, 50:], kv["horse"]) and np.allclose(summed[2], joined[2, :50] + joined[2, 50:])
    # an existing output is never replaced without --overwrite
    r = cli("s2v-train", audio, out, ok=False)
    assert r.returncode == 1 and r.stderr.strip() == f"punctkit: error: {out}: exists; use --overwrite to replace it"


def test_data_without_ctm_is_a_one_line_error(audio: Path, tmp_path: Path) -> None:
    d = tmp_path / "noctm"
    shutil.copytree(audio, d)
    (d / "ctm").unlink()
    r = cli("s2v-train", d, tmp_path / "v.txt", ok=False)
    assert r.returncode == 1 and r.stderr.startswith("punctkit: error:") and "ctm" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "v.txt").exists()
