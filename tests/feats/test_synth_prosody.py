"""Prosody that is evidence, not an answer key: marks reach the synthesizer with a fixed
probability per class, hesitations at a fixed rate, from (seed, uttid) only; and flite voices."""
from __future__ import annotations

import math
import shutil
import wave
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from punct_util import cli
from punctkit.data.datadir import write_data_dir
from punctkit.data.formats import Utterance
from punctkit.data.labels import O, get_inventory, mark_of
from punctkit.feats.synth import Prosody, parse_mark_prob, spoken_labels, synthesize_data_dir, voice_for
from punctkit.files import PunctkitError

RECIPE_PROSODY = Prosody({"PERIOD": 0.8, "QUESTION": 0.8, "COMMA": 0.5}, 0.04)
needs_flite = pytest.mark.skipif(shutil.which("flite") is None or shutil.which("sox") is None,
                                 reason="flite or sox not installed (apt-get install -y flite sox)")


def random_labels(rng: np.random.Generator, n: int) -> list[str]:
    marks = ["O"] * 14 + ["COMMA"] * 3 + ["PERIOD"] * 2 + ["QUESTION", "EXCLAMATION"]
    return [marks[i] for i in rng.integers(0, len(marks), n)]


def test_spoken_fractions_near_the_set_probabilities() -> None:
    rng = np.random.default_rng(0)
    kept: dict[str, list[int]] = {}
    hes, slots = 0, 0
    for k in range(1500):
        labels = random_labels(rng, 40)
        spoken = spoken_labels(labels, RECIPE_PROSODY, seed=1, uttid=f"utt{k:05d}")
        assert len(spoken) == len(labels)
        for i, (ref, got) in enumerate(zip(labels, spoken)):
            if ref != O:
                assert got in (ref, O)
                kept.setdefault(ref, [0, 0])[0] += got == ref
                kept[ref][1] += 1
            elif i < len(labels) - 1:
                assert got in (O, "COMMA")
                hes += got == "COMMA"
                slots += 1
            else:
                assert got == O  # no hesitation after the last word: nothing follows it
    expected = {"COMMA": 0.5, "PERIOD": 0.8, "QUESTION": 0.8, "EXCLAMATION": 0.8}  # ! ends a sentence: as PERIOD
    for mark, (k, n) in kept.items():
        p = expected[mark]
        assert n > 2000
        assert abs(k / n - p) < 4 * math.sqrt(p * (1 - p) / n), (mark, k / n)
    assert abs(hes / slots - 0.04) < 4 * math.sqrt(0.04 * 0.96 / slots), hes / slots
    # one hesitation per 25 unmarked slots
    assert 1 / 27 < hes / slots < 1 / 23


def test_same_seed_same_output_and_it_depends_on_seed_and_uttid_only() -> None:
    labels = random_labels(np.random.default_rng(1), 400)
    a = spoken_labels(labels, RECIPE_PROSODY, 7, "talk_0001")
    assert a == spoken_labels(labels, RECIPE_PROSODY, 7, "talk_0001")
    assert a != spoken_labels(labels, RECIPE_PROSODY, 8, "talk_0001")
    assert a != spoken_labels(labels, RECIPE_PROSODY, 7, "talk_0002")


def test_no_hesitation_splits_a_word_from_its_clitic() -> None:
    words = ["do", "n't", "we", "'re", "it", "'s"] * 200
    spoken = spoken_labels(["O"] * len(words), Prosody(hesitation_rate=1.0), 1, "u", words)
    assert spoken == ["O", "COMMA", "O", "COMMA", "O", "COMMA"] * 199 + ["O", "COMMA", "O", "COMMA", "O", "O"]


def test_default_prosody_speaks_every_mark_and_never_hesitates() -> None:
    labels = random_labels(np.random.default_rng(2), 500)
    assert spoken_labels(labels, Prosody(), 1, "u") == labels


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["L_O", "U_O", "L_COMMA", "U_PERIOD", "L_QUESTION"]), max_size=30),
       st.floats(0, 1), st.floats(0, 1), st.integers(0, 5), st.text(min_size=1, max_size=8))
def test_case_aware_labels_keep_their_case_and_only_marks_change(labels, p, rate, seed, uttid) -> None:
    spoken = spoken_labels(labels, Prosody({"COMMA": p, "PERIOD": p, "QUESTION": p}, rate), seed, uttid)
    assert [s[0] for s in spoken] == [lab[0] for lab in labels]
    for ref, got in zip(labels, spoken):
        assert mark_of(got) in ((mark_of(ref), O) if mark_of(ref) != O else (O, "COMMA"))


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.sampled_from(["COMMA", "PERIOD", "QUESTION", "EXCLAMATION"]),
                       st.floats(0, 1, allow_nan=False), max_size=4))
def test_mark_prob_round_trip(probs) -> None:
    spec = ",".join(f"{m.lower() if len(m) % 2 else m}={p!r}" for m, p in probs.items())
    assert parse_mark_prob(spec) == probs


def test_mark_prob_option_parsing_and_bad_values() -> None:
    assert parse_mark_prob("PERIOD=0.8,QUESTION=0.8,COMMA=0.5") == {"PERIOD": 0.8, "QUESTION": 0.8, "COMMA": 0.5}
    assert parse_mark_prob("") == {}
    for bad in ("PERIOD", "PERIOD=x"):
        with pytest.raises(PunctkitError, match="--mark-prob"):
            parse_mark_prob(bad)
    with pytest.raises(PunctkitError, match="unknown mark 'FOO'"):
        Prosody({"FOO": 0.5})
    with pytest.raises(PunctkitError, match=r"\[0, 1\]"):
        Prosody({"COMMA": 1.5})


UTTS = [
    ("a1", "so i do n't think it 's true what about the e-mails they sent",
     "COMMA O O O O O O PERIOD O O O O O QUESTION"),
    ("a2", "well we 're here today to talk about the evolution of a puppet horse",
     "COMMA O O O O O O O O O O O O PERIOD"),
]


@pytest.fixture
def text_dir(tmp_path: Path) -> Path:
    utts = [Utterance(u, w.split(), lab.split()) for u, w, lab in UTTS]
    write_data_dir(tmp_path / "text", utts, get_inventory("4class"))
    return tmp_path / "text"


@needs_flite
def test_flite_voice_writes_a_16k_wav_of_plausible_duration_and_no_ctm(text_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "audio"
    r = cli("synthesize", text_dir, out, "--engine", "flite", "--voices", "rms,slt", "--rates", "150,195",
            "--mark-prob", "PERIOD=0.8,QUESTION=0.8,COMMA=0.5", "--hesitation-rate", "0.04", "--seed", "3")
    assert "2 utterances" in r.stderr
    wavs = dict(ln.split(" ", 1) for ln in (out / "wav.scp").read_text().splitlines())
    voices = {ln.split()[0]: ln.split()[1:] for ln in (out / "utt2voice").read_text().splitlines()}
    durs = dict(ln.split() for ln in (out / "utt2dur").read_text().splitlines())
    logged = {ln.split()[0]: ln.split(" ", 3)[3] for ln in (out / "synthesize.log").read_text().splitlines()}
    for u, words, labels in UTTS:
        with wave.open(wavs[u]) as w:
            assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (16000, 1, 2)
            dur = w.getnframes() / 16000
        n = len(words.split())
        assert 0.15 * n < dur < 0.8 * n  # 75-400 words a minute
        assert abs(float(durs[u]) - dur) < 1e-3
        voice, wpm = voice_for(u, 3, ("flite:rms", "flite:slt"), (150, 195))
        assert voices[u] == [voice, str(wpm)]
        # what was spoken is what spoken_labels chose, not the reference marks
        spoken = spoken_labels(labels.split(), RECIPE_PROSODY, 3, u, words.split())
        assert sum(logged[u].count(c) for c in ",.?") == sum(s != O for s in spoken)
    assert not (out / "ctm").exists()  # flite gives no word events: punctkit align writes the ctm
    # an espeak-ng run's ctm in the same directory is removed, not left to contradict flite's audio
    synthesize_data_dir(text_dir, tmp_path / "again", show_progress=False)
    assert (tmp_path / "again" / "ctm").is_file()
    synthesize_data_dir(text_dir, tmp_path / "again", voices=("flite:rms",), show_progress=False, overwrite=True)
    assert not (tmp_path / "again" / "ctm").exists() and (tmp_path / "again" / "wav.scp").is_file()
    # a slower rate gives longer audio for the same text
    slow, fast = tmp_path / "slow", tmp_path / "fast"
    synthesize_data_dir(text_dir, slow, engine="flite", voices=("rms",), rates=(120,), show_progress=False)
    synthesize_data_dir(text_dir, fast, engine="flite", voices=("rms",), rates=(220,), show_progress=False)
    total = lambda d: sum(float(x.split()[1]) for x in (d / "utt2dur").read_text().splitlines())  # noqa: E731
    assert total(slow) > 1.4 * total(fast)


@needs_flite
def test_bad_flite_voice_and_bad_mark_prob_are_one_line_errors(text_dir: Path, tmp_path: Path) -> None:
    r = cli("synthesize", text_dir, tmp_path / "a", "--voices", "flite:nosuch", ok=False)
    assert r.returncode == 1 and r.stderr.startswith("punctkit: error: flite has no voice 'nosuch'")
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "a").exists()
    r = cli("synthesize", text_dir, tmp_path / "b", "--mark-prob", "COMMA:0.5", ok=False)
    assert r.returncode == 1 and "--mark-prob expects MARK=P" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
