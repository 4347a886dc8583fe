"""`punctkit recognize`: pocketsphinx turns synthesized speech into a data directory of recognized words."""
from __future__ import annotations

import json
import shutil
import subprocess
import wave
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from punct_util import cli
from punctkit.data.datadir import read_data_dir, read_table, write_data_dir
from punctkit.data.labels import get_inventory
from punctkit.data.timing import ctm_text_problems, read_ctm
from punctkit.data.utterance import Utterance
from punctkit.files import PunctkitError
from punctkit.recognize import iwslt_split, recognize_data_dir

pytest.importorskip("pocketsphinx")
pytestmark = pytest.mark.skipif(shutil.which("flite") is None or shutil.which("sox") is None,
                                reason="flite or sox not installed (apt-get install -y flite sox)")

# Clear short sentences of common words, spoken by flite's `rms` voice (pocketsphinx hears it well).
UTTS = [
    ("g1", "the weather is very nice today , so we will go to the park .",),
    ("g2", "i do n't know what they want from us ?",),
]


def flite_wav(text: str, path: Path) -> Path:
    subprocess.run(["flite", "-voice", "rms", "-t", text, "-o", str(path)], check=True, capture_output=True)
    return path


@pytest.fixture(scope="module")
def speech(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """DATA (text, labels, wav.scp as `sox ... |` commands) and OUT recognized from it with one job."""
    d = tmp_path_factory.mktemp("rec")
    utts, wavs = [], []
    for uttid, punctuated in UTTS:
        toks = punctuated.split()
        words = [t for t in toks if t not in ",.?"]
        labels = [{",": "COMMA", ".": "PERIOD", "?": "QUESTION"}.get(nxt, "O")
                  for t, nxt in zip(toks, toks[1:] + [""]) if t not in ",.?"]
        utts.append(Utterance(uttid, words, labels))
        spoken = punctuated.replace(" n't", "n't").replace(" ,", ",").replace(" .", ".").replace(" ?", "?")
        wavs.append(f"{uttid} sox {flite_wav(spoken, d / f'{uttid}.wav')} -r 16000 -t wav - |")
    write_data_dir(d / "data", utts, get_inventory("4class"), extra={"wav.scp": wavs})
    recognize_data_dir(d / "data", d / "out", show_progress=False)
    return d


def test_recognize_synthesized_speech(speech: Path) -> None:
    out = speech / "out"
    rep = json.loads((out / "recognize.json").read_text())
    assert rep["wer"]["percent"] < 50 and rep["wer"]["N"] == 22, rep
    assert (rep["recognized"], rep["skipped"]) == (2, 0) and 0 < rep["rtf_per_core"] < 5
    assert rep["marks"]["reference"] == 3 and 0 <= rep["marks"]["not_projected"] <= 3
    rec, ref = read_data_dir(out), read_data_dir(speech / "data")
    for u, r in zip(rec.utterances, ref.utterances):
        if u.words == r.words:  # recognized exactly: the marks are the reference's
            assert u.labels == r.labels
    assert [u.uttid for u in rec.utterances] == ["g1", "g2"]
    for u in rec.utterances:  # lower-cased words, contractions split as IWSLT's, one projected label each
        assert all(w == w.lower() for w in u.words) and "don't" not in u.words
        assert len(u.labels) == len(u.words) and rec.inventory.name == "4class"
    assert rec.utterances[1].labels[-1] == "QUESTION"  # the last word's mark follows the last word
    text = dict(read_table(out / "text"))
    assert ctm_text_problems(read_ctm(out / "ctm"), text, out / "ctm", out / "text") == []
    assert (out / "wav.scp").read_text() == (speech / "data" / "wav.scp").read_text()
    assert (out / "utt2spk").is_file() and (out / "spk2utt").is_file()
    assert f"WER {rep['wer']['percent']:.1f} %" in (out / "recognize.log").read_text()


def test_iwslt_split() -> None:
    assert iwslt_split("don't") == ["do", "n't"] and iwslt_split("can't") == ["ca", "n't"]
    assert iwslt_split("It's") == ["it", "'s"] and iwslt_split("we're") == ["we", "'re"]
    assert iwslt_split("o'clock") == ["o'clock"] and iwslt_split("n't") == ["n't"]
    assert iwslt_split("we've") == ["we've"] and iwslt_split("I'd") == ["i'd"]  # whole, as in IWSLT's files


@given(st.text(alphabet="abcdnt'", min_size=1, max_size=10))
def test_iwslt_split_keeps_the_word(word: str) -> None:
    parts = iwslt_split(word)
    assert "".join(parts) == word.lower() and all(parts) and len(parts) <= 2


def test_jobs_then_merge_equal_one_job(speech: Path) -> None:
    two = speech / "two"
    for j in (1, 2):
        s = recognize_data_dir(speech / "data", two, nj=2, job=j, show_progress=False)
        assert s.stats.done == 1 and not (two / "text").exists()
    r = cli("recognize", speech / "data", two, "--nj", 2, "--merge")
    assert "2 of 2 utterances" in r.stderr and "WER" in r.stderr
    for name in ("text", "labels", "ctm", "utt2spk", "wav.scp"):
        assert (two / name).read_text() == (speech / "out" / name).read_text(), name
    assert json.loads((two / "recognize.json").read_text())["wer"] == \
        json.loads((speech / "out" / "recognize.json").read_text())["wer"]


def write_wav(path: Path, samples: np.ndarray) -> Path:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(np.clip(samples, -32768, 32767).astype("<i2").tobytes())
    return path


def test_no_speech_and_no_words_reported_or_skipped(speech: Path, tmp_path: Path) -> None:
    noise = np.random.default_rng(0).normal(0, 3000, 16000)  # speech to the detector, no words to the recognizer
    entries = {"g1": speech / "g1.wav", "n1": write_wav(tmp_path / "noise.wav", noise),
               "s1": write_wav(tmp_path / "silence.wav", np.zeros(16000))}
    reasons = {"n1": "the recognizer returned no words", "s1": "no speech in the audio"}
    for uttid, reason in reasons.items():
        d = tmp_path / f"only_{uttid}"
        d.mkdir()
        (d / "wav.scp").write_text(f"{uttid} {entries[uttid]}\n")
        with pytest.raises(PunctkitError) as e:
            recognize_data_dir(d, tmp_path / f"out_{uttid}", show_progress=False)
        assert str(e.value).startswith(f"{d / 'wav.scp'}:1 (utterance {uttid}): {reason}"), e.value
        assert not (tmp_path / f"out_{uttid}" / "text").exists()
    d = tmp_path / "mixed"  # audio only: no reference, so no WER and no labels
    d.mkdir()
    (d / "wav.scp").write_text("".join(f"{u} {p}\n" for u, p in entries.items()))
    r = cli("recognize", d, tmp_path / "out", ok=False)
    assert r.returncode == 1 and r.stderr.rstrip().splitlines()[-1].startswith(
        f"punctkit: error: {d / 'wav.scp'}:2 (utterance n1): the recognizer returned no words")
    r = cli("recognize", d, tmp_path / "out", "--skip-bad")
    assert "1 of 3 utterances" in r.stderr and "2 skipped" in r.stderr
    out = tmp_path / "out"
    assert list(read_table(out / "text")) == ["g1"] and not (out / "labels").exists()
    assert list(read_table(out / "wav.scp")) == ["g1"]
    rep = json.loads((out / "recognize.json").read_text())
    assert rep["skipped"] == 2 and rep["wer"] is None and len(rep["skipped_reports"]) == 2
    log = (out / "recognize.log").read_text()
    assert all(f"(utterance {u}): {r}" in log for u, r in reasons.items())


def test_output_holding_other_files_refused(speech: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine\n")
    with pytest.raises(PunctkitError, match="notes.txt.*--overwrite"):
        recognize_data_dir(speech / "data", out, show_progress=False)
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    with pytest.raises(PunctkitError, match="is also an input"):
        recognize_data_dir(speech / "data", speech / "data", overwrite=True)
