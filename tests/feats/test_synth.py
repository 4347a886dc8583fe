"""espeak-ng synthesis: valid wavs, an exact word CTM, determinism, and the tiny TTS recipe (stages 1-2)."""
from __future__ import annotations

import os
import shutil
import subprocess
import wave
from pathlib import Path

import numpy as np
import pytest

from punctkit.data.datadir import write_data_dir
from punctkit.data.formats import Utterance
from punctkit.data.labels import get_inventory
from punctkit.data.timing import read_ctm
from punctkit.feats.synth import synthesize_data_dir, voice_for
from punctkit.feats.validate import validate_data_dir
from punctkit.feats.wav import read_wav

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("espeak-ng") is None or shutil.which("sox") is None,
                                reason="espeak-ng or sox not installed (apt-get install -y espeak-ng sox)")

UTTS = [
    ("a1", "so i do n't think it 's true what about the 1,000 e-mails they sent",
     "COMMA O O O O O O PERIOD O O O O O O QUESTION"),
    ("a2", "well we 're here today to talk about the evolution of a puppet horse",
     "COMMA O O O O O O O O O O O O PERIOD"),
    ("a3", "and then it ended but nobody knew why", "O O O COMMA O O O O"),
]


@pytest.fixture
def text_dir(tmp_path: Path) -> Path:
    utts = [Utterance(u, w.split(), lab.split()) for u, w, lab in UTTS]
    write_data_dir(tmp_path / "text", utts, get_inventory("4class"))
    return tmp_path / "text"


def test_synthesis_wav_ctm_exact_and_deterministic(text_dir: Path, tmp_path: Path) -> None:
    n, sec = synthesize_data_dir(text_dir, tmp_path / "audio", seed=3, nj=1, show_progress=False)
    d = tmp_path / "audio"
    assert n == 3 and sec > 5
    assert validate_data_dir(d) == []
    ctm = read_ctm(d / "ctm")
    wavs = dict(line.split(" ", 1) for line in (d / "wav.scp").read_text().splitlines())
    for u, words, labels in UTTS:
        with wave.open(wavs[u]) as w:
            assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (16000, 1, 2)
            dur = w.getnframes() / 16000
        rate, x = read_wav(wavs[u])
        cw = ctm[u]
        assert [c.word for c in cw] == words.split()
        starts = [c.start for c in cw]
        # every word has its own stretch of audio, even those espeak joins to the word before (`of a`)
        assert starts == sorted(starts) and all(c.dur > 0 for c in cw)
        assert all(cw[k].end <= cw[k + 1].start + 1e-4 for k in range(len(cw) - 1))
        assert cw[-1].end <= dur + 0.01
        # exact boundaries: the pauses espeak puts after , and . are near-silent, the words are not
        rms = lambda a, b: float(np.sqrt(np.mean(x[int(a * rate):int(b * rate)] ** 2) + 1e-9))  # noqa: E731
        word_rms = np.median([rms(c.start, c.end) for c in cw if c.dur > 0.1])
        gaps = [(cw[k].end, cw[k + 1].start) for k in range(len(cw) - 1) if cw[k + 1].start - cw[k].end > 0.08]
        marked = [k for k, lab in enumerate(labels.split()[:-1]) if lab != "O"]
        assert len(gaps) >= len(marked) >= 1  # a pause after every inner mark
        for a, b in gaps:
            assert rms(a + 0.01, b - 0.01) < 0.05 * word_rms
    # the voice and rate come from (seed, uttid); the output is the same whatever --nj and order
    assert (d / "utt2voice").read_text().splitlines()[0] == "a1 {} {}".format(*voice_for("a1", 3))
    synthesize_data_dir(text_dir, tmp_path / "again", seed=3, nj=2, show_progress=False)
    assert (tmp_path / "again" / "ctm").read_text() == (d / "ctm").read_text()
    for u, _, _ in UTTS:
        assert Path(f"{tmp_path}/again_wav/{u}.wav").read_bytes() == Path(wavs[u]).read_bytes()


def keys_of(path: Path) -> list[str]:
    return [line.split()[0] for line in path.read_text().splitlines()]


@pytest.mark.slow  # a recipe end to end
def test_tiny_recipe_stages_1_and_2(tmp_path: Path, iwslt: Path) -> None:
    """Stage 1 (local/data.sh: text and synthesis) and the template's stage 2 (features, CMVN, validation)."""
    recipe = ROOT / "recipes" / "tts_iwslt"
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    p = subprocess.run(["./run.sh", "--local-data-opts", "--tiny true", "--nj", "2", "--stop-stage", "2",
                        "--data", str(tmp_path / "data")],
                       cwd=recipe, capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    assert "(punct.sh:" in p.stdout and "stage 2: test: fbank_pitch features (2 job(s))" in p.stdout
    for x in ("train", "valid", "test"):
        d = tmp_path / "data" / x
        assert validate_data_dir(d) == []
        n_utts = len((d / "text").read_text().splitlines())
        assert len((d / "feats.scp").read_text().splitlines()) == n_utts >= 5
        assert "dim 43" in (d / "feats.info").read_text() and "subsample 3" in (d / "feats.info").read_text()
        assert keys_of(d / "cmvn.scp") == ["global"]
        lens = [len(line.split()) - 1 for line in (d / "text").read_text().splitlines()]
        assert min(lens) >= 1 and max(lens) <= 60
    test_ids = (tmp_path / "data" / "test" / "text").read_text()
    assert "tts_test_dev" in test_ids and "tts_test_tst" in test_ids
