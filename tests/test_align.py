"""`punctkit align`: pocketsphinx forced alignment against espeak-ng's own word events, bad inputs, jobs."""
from __future__ import annotations

import shutil
import subprocess
import sys
import wave
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from punct_util import cli
from punctkit.align import IPA_TO_CMU, Aligner, align_data_dir, boundary_errors, ipa_to_cmu, new_decoder
from punctkit.data.datadir import write_data_dir
from punctkit.data.labels import get_inventory
from punctkit.data.timing import read_ctm
from punctkit.data.utterance import Utterance
from punctkit.feats.synth import synthesize_data_dir
from punctkit.files import PunctkitError

pytest.importorskip("pocketsphinx")
pytestmark = pytest.mark.skipif(shutil.which("espeak-ng") is None or shutil.which("sox") is None,
                                reason="espeak-ng or sox not installed (apt-get install -y espeak-ng sox)")

# `blicketstan` is in no dictionary: its pronunciation comes from espeak-ng.
UTTS = [
    ("e1", "the blicketstan said hello to my friends", "O O O COMMA O O PERIOD"),
    ("e2", "and then it ended but nobody knew why", "O O O COMMA O O O QUESTION"),
]


@pytest.fixture(scope="module")
def audio(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two espeak-ng utterances with their exact word CTM (DATA/ctm)."""
    d = tmp_path_factory.mktemp("align")
    write_data_dir(d / "text", [Utterance(u, w.split(), lab.split()) for u, w, lab in UTTS], get_inventory("4class"))
    synthesize_data_dir(d / "text", d / "audio", seed=2, show_progress=False)
    return d / "audio"


def wav_of(audio: Path, uttid: str) -> str:
    return dict(ln.split(" ", 1) for ln in (audio / "wav.scp").read_text().splitlines())[uttid]


def make_data(d: Path, utts: list[tuple[str, str, str]]) -> Path:
    """A data directory of (uttid, text, wav.scp entry)."""
    d.mkdir(parents=True)
    (d / "text").write_text("".join(f"{u} {t}\n" for u, t, _ in utts))
    (d / "wav.scp").write_text("".join(f"{u} {w}\n" for u, _, w in utts))
    return d


def error_line(stderr: str) -> str:
    """The one error line (progress bars may come before it)."""
    lines = [ln for ln in stderr.splitlines() if ln.startswith("punctkit:")]
    assert len(lines) == 1 and stderr.rstrip("\n").endswith(lines[0]), stderr
    return lines[0]


def write_wav(path: Path, samples: np.ndarray, rate: int = 16000) -> str:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.clip(samples, -32768, 32767).astype("<i2").tobytes())
    return str(path)


def test_alignment_within_50ms_of_espeak_word_events(audio: Path, tmp_path: Path) -> None:
    s = align_data_dir(audio, tmp_path / "ali.ctm", show_progress=False)
    assert (s.stats.done, s.stats.bad) == (2, []) and s.stats.rtf > 0
    ref, hyp = read_ctm(audio / "ctm"), read_ctm(tmp_path / "ali.ctm")
    assert {u: [w.word for w in ws] for u, ws in hyp.items()} == {u: w.split() for u, w, _ in UTTS}
    err = boundary_errors(ref, hyp)
    assert len(err) == 2 * 15
    assert err.mean() < 0.05, err
    # the out-of-dictionary word got espeak-ng's pronunciation, and the log says so
    assert "pronunciation from espeak-ng: blicketstan B L IH K IH T S T AA N" in \
        (tmp_path / "log" / "align_ali.ctm.1.log").read_text()
    assert "0 skipped" in (tmp_path / "log" / "align_ali.ctm.log").read_text()


def test_ipa_mapping_and_clitics() -> None:
    assert ipa_to_cmu("h ˈaɪ f ˈʌ ŋ k ʃ ə n ɪ ŋ") == "HH AY F AH NG K SH AH N IH NG"
    assert ipa_to_cmu("s ˈɛ l f ɐ w ˈɛɹ n ə s") == "S EH L F AH W EH R N AH S"  # ɛɹ split greedily
    assert ipa_to_cmu("t͡ʃ ˈaɪ n") == "CH AY N"
    assert ipa_to_cmu("q ʘ") is None and ipa_to_cmu("") is None
    al = Aligner()
    for dec in al.decoders:
        assert dec.lookup_word("n't") == "N T" and dec.lookup_word("'s(2)") == "Z"
    assert al.entry("Hello") == "hello" and al.added == {}
    assert al.entry("♪") is None  # espeak-ng says nothing for it: no pronunciation
    assert al.entry("blicketstan") == "blicketstan" and al.decoders[1].lookup_word("blicketstan") == \
        "B L IH K IH T S T AA N"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.sampled_from(sorted(IPA_TO_CMU)), min_size=1, max_size=4), min_size=1, max_size=8),
       st.sampled_from(["", "ˈ", "ˌ"]))
def test_ipa_phonemes_map_to_their_cmu_phones(words: list[list[str]], stress: str) -> None:
    """Any phonemes of the table, stressed or not, spaced as espeak-ng's --sep=' ' output, map one by one."""
    ipa = "  ".join(" ".join(stress + p for p in w) for w in words)
    assert ipa_to_cmu(ipa) == " ".join(IPA_TO_CMU[p] for w in words for p in w)


def test_jobs_then_merge_equal_one_job(audio: Path, tmp_path: Path) -> None:
    align_data_dir(audio, tmp_path / "one.ctm", show_progress=False)
    for j in (1, 2):
        s = align_data_dir(audio, tmp_path / "two.ctm", nj=2, job=j, show_progress=False)
        assert not s.merged and s.stats.done == 1 and not (tmp_path / "two.ctm").exists()
    with pytest.raises(PunctkitError, match="--nj 2, not 3"):
        align_data_dir(audio, tmp_path / "two.ctm", nj=3, merge_only=True)
    other = make_data(tmp_path / "other", [("e1", UTTS[0][1], wav_of(audio, "e1"))])  # the data changed since
    with pytest.raises(PunctkitError, match=r"job 2 ran over utterances e2..e2 \(1\), but part 2 .* is now \(0\)"):
        align_data_dir(other, tmp_path / "two.ctm", nj=2, merge_only=True)
    s = align_data_dir(audio, tmp_path / "two.ctm", nj=2, merge_only=True)
    assert s.merged and s.stats.done == 2
    assert (tmp_path / "two.ctm").read_text() == (tmp_path / "one.ctm").read_text()


def test_existing_ctm_refused_unchanged(audio: Path, tmp_path: Path) -> None:
    before = (audio / "ctm").read_bytes()
    r = cli("align", audio, ok=False)
    assert r.returncode == 1
    assert error_line(r.stderr).startswith(f"punctkit: error: {audio / 'ctm'}: exists; pass --overwrite")
    assert (audio / "ctm").read_bytes() == before
    with pytest.raises(PunctkitError, match="is also an input"):
        align_data_dir(audio, audio / "text", overwrite=True)
    assert (audio / "ctm").read_bytes() == before


def test_bad_utterances_reported_or_skipped(audio: Path, tmp_path: Path) -> None:
    silent = write_wav(tmp_path / "silent.wav", np.zeros(16000))
    long_text = " ".join(["and then it ended but nobody knew why"] * 6)
    utts = [
        ("b1", "a song ♪ for you", wav_of(audio, "e2")),             # no pronunciation for ♪
        ("b2", "and then it ended but nobody knew why", f"sox {wav_of(audio, 'e2')} -t wav - |"),  # good
        ("b3", "hello there", silent),                                # no speech
        ("b4", long_text, wav_of(audio, "e2")),                       # cannot be aligned
    ]
    reasons = {"b1": "no pronunciation for '♪'", "b3": "no speech in the audio",
               "b4": "the aligner could not align the text to the audio"}
    for utt in utts:
        if utt[0] in reasons:
            one = make_data(tmp_path / f"only_{utt[0]}", [utt])
            with pytest.raises(PunctkitError) as e:
                align_data_dir(one, show_progress=False)
            assert str(e.value).startswith(f"{one / 'wav.scp'}:1 (utterance {utt[0]}): {reasons[utt[0]]}"), e.value
            assert not (one / "ctm").exists()
    d = make_data(tmp_path / "bad", utts)
    s = align_data_dir(d, skip_bad=True, show_progress=False)
    assert s.stats.done == 1 and len(s.stats.bad) == 3
    assert "1 of 4 utterances aligned" in s.line() and "3 skipped" in s.line()
    assert [ln.split()[0] for ln in (d / "ctm").read_text().splitlines()] == ["b2"] * 8
    log = (d / "log" / "align_ctm.log").read_text()
    assert all(f"(utterance {u}): {r}" in log for u, r in reasons.items()) and "3 skipped" in log


def test_cli_one_line_error_for_bad_utterance(audio: Path, tmp_path: Path) -> None:
    d = make_data(tmp_path / "d", [("s1", "hello there", write_wav(tmp_path / "s.wav", np.zeros(8000)))])
    r = cli("align", d, ok=False)
    assert r.returncode == 1
    assert error_line(r.stderr) == (f"punctkit: error: {d / 'wav.scp'}:1 (utterance s1): no speech in the audio "
                                    f"(pocketsphinx's voice activity detector)")
    assert not (d / "ctm").exists()
    r = cli("align", d, "--skip-bad", "-o", tmp_path / "x.ctm", ok=False)  # every utterance skipped: empty CTM
    assert r.returncode == 0 and "0 of 1 utterances aligned" in r.stderr and "1 skipped" in r.stderr


def test_missing_pocketsphinx_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pocketsphinx", None)  # `import pocketsphinx` raises ImportError
    with pytest.raises(PunctkitError, match=r"pip install 'punctkit\[speech\]'"):
        new_decoder()


def test_sample_rate_must_be_16k(audio: Path, tmp_path: Path) -> None:
    d = make_data(tmp_path / "d8", [("r1", "hello", write_wav(tmp_path / "8k.wav", np.zeros(8000), rate=8000))])
    with pytest.raises(PunctkitError, match="sample rate 8000 Hz.*sox x.wav -r 16000"):
        align_data_dir(d, show_progress=False)


def test_segments_of_one_recording(audio: Path, tmp_path: Path) -> None:
    """Two utterances cut from one recording by `segments`: times are from each segment's start."""
    rec = tmp_path / "rec.wav"
    subprocess.run(["sox", wav_of(audio, "e1"), wav_of(audio, "e2"), str(rec)], check=True)
    dur1 = float(subprocess.run(["soxi", "-D", wav_of(audio, "e1")], capture_output=True, text=True).stdout)
    d = tmp_path / "seg"
    d.mkdir()
    (d / "text").write_text("".join(f"{u} {w}\n" for u, w, _ in UTTS))
    (d / "wav.scp").write_text(f"rec {rec}\n")
    (d / "segments").write_text(f"e1 rec 0 {dur1:.4f}\ne2 rec {dur1:.4f} -1\n")
    align_data_dir(d, show_progress=False)
    err = boundary_errors(read_ctm(audio / "ctm"), read_ctm(d / "ctm"))
    assert len(err) == 30 and err.mean() < 0.05
