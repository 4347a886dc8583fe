"""Features of audio data directories: fbank+pitch, CMVN, subsampling, CTM word timing, bad input."""
from __future__ import annotations

import shutil
import subprocess
import sys
import wave
from pathlib import Path

import kaldi_native_fbank as knf
import kaldiio
import numpy as np
import pytest

from punctkit.data.timing import CtmWord
from punctkit.feats.cmvn import Cmvn, compute_cmvn
from punctkit.feats.ctm import data_word_timing, word_timing
from punctkit.feats.fbank_pitch import (
    FeatureConfig,
    extract_feats,
    fbank_options,
    pitch_options,
)
from punctkit.feats.loader import AcousticData
from punctkit.feats.wav import data_segments, read_wav
from punctkit.files import PunctkitError

FBANK_CONF = "--sample-frequency=16000\n--num-mel-bins=40\n--dither=0\n--frame-shift=10\n"
PITCH_CONF = "--sample-frequency=16000\n--frame-shift=10\n--min-f0=60\n--max-f0=400\n"


def nccf_from_pov_feature(pov: np.ndarray, pov_scale: float = 2.0) -> np.ndarray:
    """Undo Kaldi's POV warping: the normalised cross-correlation (near 1 when voiced, 0 in silence).

    Kaldi's POV feature is `pov_scale * ((1.0001 - nccf) ** 0.15 - 1)`, which is
    *lower* (near -pov_scale) on voiced frames and near 0 on unvoiced ones.
    """
    return 1.0001 - np.clip(pov / pov_scale + 1.0, 0.0, None) ** (1.0 / 0.15)


def write_wav(path: Path, x: np.ndarray, rate: int = 16000) -> None:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.clip(x, -32768, 32767).astype("<i2").tobytes())


def voiced(seconds: float, f0: float, rate: int = 16000, seed: int = 0) -> np.ndarray:
    """A vowel-like signal (harmonics of f0 with a slow glide) plus a little noise."""
    t = np.arange(int(seconds * rate)) / rate
    f = f0 * (1 + 0.1 * np.sin(2 * np.pi * 0.5 * t))
    phase = 2 * np.pi * np.cumsum(f) / rate
    x = sum(np.sin(k * phase) / k for k in range(1, 8)) * 6000
    return x + np.random.default_rng(seed).normal(0, 30, len(t))


def write_lines(path: Path, lines: list[str]) -> None:
    path.write_text("".join(ln + "\n" for ln in lines))


@pytest.fixture
def audio_dir(tmp_path: Path) -> Path:
    """Two recordings (a path and a command), three segments, text/labels/ctm/speakers, conf files."""
    wav = tmp_path / "wav"
    wav.mkdir()
    write_wav(wav / "r1.wav", np.concatenate([voiced(1.5, 120), np.zeros(8000), voiced(1.0, 200, seed=1)]))
    write_wav(wav / "r2.wav", voiced(1.2, 160, seed=2))
    d = tmp_path / "data"
    d.mkdir()
    write_lines(d / "wav.scp", [f"r1 {wav / 'r1.wav'}", f"r2 cat {wav / 'r2.wav'} |"])
    write_lines(d / "segments", ["r1-a r1 0.00 1.50", "r1-b r1 1.40 3.00", "r2-a r2 0.10 1.20"])
    write_lines(d / "text", ["r1-a hello there", "r1-b so yes", "r2-a ok"])
    write_lines(d / "labels", ["r1-a O COMMA", "r1-b O PERIOD", "r2-a QUESTION"])
    write_lines(d / "utt2spk", ["r1-a s1", "r1-b s1", "r2-a s2"])
    write_lines(d / "spk2utt", ["s1 r1-a r1-b", "s2 r2-a"])
    write_lines(d / "ctm", ["r1-a 1 0.10 0.50 hello", "r1-a 1 0.70 0.55 there", "r1-b 1 0.30 0.20 so",
                            "r1-b 1 0.60 0.80 yes", "r2-a 1 0.05 0.90 ok"])
    (tmp_path / "fbank.conf").write_text(FBANK_CONF)
    (tmp_path / "pitch.conf").write_text(PITCH_CONF)
    return d


def direct_features(d: Path, uttid: str, start: float, end: float) -> np.ndarray:
    """kaldi-native-fbank called directly on the samples of one segment."""
    rate, x = read_wav(str(d.parent / "wav" / f"{uttid.split('-')[0]}.wav"))
    seg = x[int(round(start * rate)):int(round(end * rate))]
    fo = knf.FbankOptions()
    fo.frame_opts.dither = 0.0
    fo.mel_opts.num_bins = 40
    fb = knf.OnlineFbank(fo)
    fb.accept_waveform(16000, seg)
    fb.input_finished()
    fbank = np.stack([fb.get_frame(i) for i in range(fb.num_frames_ready)])
    po = knf.PitchExtractionOptions()
    po.min_f0, po.max_f0 = 60.0, 400.0
    pitch = knf.compute_and_process_kaldi_pitch(po, knf.ProcessPitchOptions(), seg)
    n = min(len(fbank), len(pitch))
    return np.concatenate([fbank[:n], pitch[:n]], axis=1)


def test_extract_cmvn_subsample_equal_knf_direct(audio_dir: Path, tmp_path: Path) -> None:
    d = audio_dir
    s = extract_feats(d, tmp_path / "feats", tmp_path / "fbank.conf", tmp_path / "pitch.conf", nj=2,
                      subsample=3, show_progress=False)
    assert s.utterances == 3 and not s.bad
    assert (tmp_path / "feats" / "raw_fbank_pitch.2.ark").is_file()
    compute_cmvn(d)
    direct = {"r1-a": direct_features(d, "r1-a", 0.0, 1.5), "r1-b": direct_features(d, "r1-b", 1.4, 3.0),
              "r2-a": direct_features(d, "r2-a", 0.1, 1.2)}
    frames = dict(line.split() for line in (d / "utt2num_frames").read_text().splitlines())
    assert {k: int(v) for k, v in frames.items()} == {k: len(v) for k, v in direct.items()}
    # global CMVN from the direct features (mean and variance over all frames), then every third frame
    allf = np.concatenate(list(direct.values())).astype(np.float64)
    mean, std = allf.mean(0), allf.std(0)
    data = AcousticData(d)
    assert data.subsample == 3
    for u, ref in direct.items():
        got = data[u].feats
        want = ((ref - mean) / std)[::3]
        assert got.shape == want.shape == ((len(ref) + 2) // 3, 43)
        np.testing.assert_allclose(got, want, atol=1e-5, rtol=1e-5)
    # without CMVN the stored features are kaldi-native-fbank's, value for value
    raw = kaldiio.load_scp(str(d / "feats.scp"))
    for u, ref in direct.items():
        np.testing.assert_allclose(raw[u], ref, atol=1e-5)


def test_per_speaker_cmvn_and_job_merge(audio_dir: Path, tmp_path: Path) -> None:
    d = audio_dir
    for j in (1, 2):
        extract_feats(d, tmp_path / "f", tmp_path / "fbank.conf", tmp_path / "pitch.conf", nj=2, job=j,
                      show_progress=False)
    assert not (d / "feats.scp").exists()  # a job alone does not touch DATA
    extract_feats(d, tmp_path / "f", nj=2, merge_only=True)
    assert sorted(line.split()[0] for line in (d / "feats.scp").read_text().splitlines()) == ["r1-a", "r1-b", "r2-a"]
    assert compute_cmvn(d, per_spk=True) == 2
    cmvn = Cmvn.load(d)
    feats = kaldiio.load_scp(str(d / "feats.scp"))
    s1 = np.concatenate([feats["r1-a"], feats["r1-b"]]).astype(np.float64)
    assert cmvn.stats_for("r1-b")[0, -1] == len(s1)
    np.testing.assert_allclose(cmvn.stats_for("r1-a")[0, :-1], s1.sum(0), rtol=1e-5)
    normed = np.concatenate([cmvn.apply("r1-a", feats["r1-a"]), cmvn.apply("r1-b", feats["r1-b"])])
    np.testing.assert_allclose(normed.mean(0), 0, atol=1e-3)


def test_kinds_and_conf_errors(audio_dir: Path, tmp_path: Path) -> None:
    cfg = FeatureConfig.from_files("pitch", None, tmp_path / "pitch.conf")
    assert cfg.dim == 3
    assert FeatureConfig.from_files("fbank", tmp_path / "fbank.conf").dim == 40
    extract_feats(audio_dir, tmp_path / "p", kind="pitch", show_progress=False)
    assert kaldiio.load_scp(str(audio_dir / "feats.scp"))["r2-a"].shape[1] == 3
    bad = tmp_path / "bad.conf"
    bad.write_text("--num-mel-bins=40\n--no-such-option=1\n")
    with pytest.raises(PunctkitError, match=r"bad.conf:2: unknown option --no-such-option"):
        fbank_options(bad)
    bad.write_text("--num-mel-bins=forty\n")
    with pytest.raises(PunctkitError, match=r"bad.conf:1: --num-mel-bins expects int"):
        fbank_options(bad)
    assert pitch_options(tmp_path / "pitch.conf")[0].min_f0 == 60.0


def test_pov_higher_on_vowel_than_silence(tmp_path: Path) -> None:
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng not installed")
    wavf = tmp_path / "ah.wav"
    subprocess.run(["espeak-ng", "-v", "en-us", "-w", str(wavf), "aaah"], check=True)
    rate, x = read_wav(f"sox {wavf} -r 16000 -t wav - |")
    x = np.concatenate([np.zeros(rate // 2), x, np.zeros(rate // 2)]).astype(np.float32)
    x += np.random.default_rng(0).normal(0, 1, len(x)).astype(np.float32)  # not pure digital silence
    po, pp = pitch_options()
    pov = nccf_from_pov_feature(knf.compute_and_process_kaldi_pitch(po, pp, x)[:, 0], pp.pov_scale)
    energy = np.array([np.sum(x[i * 160:i * 160 + 400] ** 2) for i in range(len(pov))])
    loud = energy > 0.1 * energy.max()
    assert loud.sum() > 10
    silence = np.arange(len(pov)) < 40  # the first 0.4 s is the padding
    assert pov[loud].mean() > 0.7 and pov[silence].mean() < 0.3


def test_bad_input_errors_and_skip_bad(audio_dir: Path, tmp_path: Path) -> None:
    d = audio_dir
    # a segment past the end of its recording (r2 is 1.2 s long)
    write_lines(d / "segments", ["r1-a r1 0.00 1.50", "r1-b r1 1.40 3.00", "r2-a r2 0.10 4.00"])
    with pytest.raises(PunctkitError, match=r"segments:3 \(utterance r2-a\): segment 0.10..4.00 s is past the end"):
        extract_feats(d, tmp_path / "f", show_progress=False)
    assert not (d / "feats.scp").exists()
    s = extract_feats(d, tmp_path / "f", skip_bad=True, show_progress=False)
    assert s.bad == ["r2-a"] and s.utterances == 2
    assert "r2-a" in (tmp_path / "f" / "log" / "make_fbank_pitch.1.log").read_text()
    # an utterance with no frames
    write_lines(d / "segments", ["r1-a r1 0.00 1.50", "r1-b r1 1.40 1.41", "r2-a r2 0.10 1.20"])
    with pytest.raises(PunctkitError, match=r"segments:2 \(utterance r1-b\): no frames"):
        extract_feats(d, tmp_path / "f", show_progress=False)
    # unreadable wav: a missing file and a failing command
    write_lines(d / "segments", ["r1-a r1 0.00 1.50", "r2-a r2 0.10 1.20"])
    write_lines(d / "wav.scp", [f"r1 {tmp_path}/missing.wav", "r2 false |"])
    with pytest.raises(PunctkitError, match=r"utterance r1-a\): cannot read .*missing.wav"):
        extract_feats(d, tmp_path / "f", show_progress=False)
    with pytest.raises(PunctkitError, match=r"no utterance has features \(all skipped"):
        extract_feats(d, tmp_path / "f", skip_bad=True, show_progress=False)
    write_lines(d / "wav.scp", [f"r1 {d.parent / 'wav' / 'r1.wav'}", "r2 false |"])
    with pytest.raises(PunctkitError, match=r"segments:2 \(utterance r2-a\): command 'false' failed"):
        extract_feats(d, tmp_path / "f", show_progress=False)


def test_sample_rate_mismatch(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    write_wav(tmp_path / "a.wav", voiced(1.0, 150, rate=8000), rate=8000)
    write_wav(tmp_path / "b.wav", voiced(1.0, 150))
    write_lines(d / "wav.scp", [f"a {tmp_path / 'a.wav'}", f"b {tmp_path / 'b.wav'}"])
    with pytest.raises(PunctkitError, match=r"wav.scp \(utterance a\): sample rate 8000 Hz does not match"):
        extract_feats(d, tmp_path / "f", show_progress=False)
    s = extract_feats(d, tmp_path / "f", skip_bad=True, show_progress=False)
    assert s.bad == ["a"] and (d / "feats.scp").read_text().startswith("b ")


def test_word_timing_frames_and_pauses(audio_dir: Path) -> None:
    words = [CtmWord(0.10, 0.50, "hello", 1), CtmWord(0.70, 0.55, "there", 2)]
    t = word_timing(words, frame_shift=0.01, subsample=3, num_frames=148)
    # "hello" ends at 0.60 s: last full-rate frame 59, kept frame 59 // 3 = 19; "there" at 1.25 s -> 124 // 3
    assert t.word_end_frame == [19, 41]
    assert t.pause_before == [0.1, 0.1] and t.pause_after == [0.1, 0.23]
    assert word_timing(words, subsample=3, num_frames=90).word_end_frame == [19, 29]  # clipped to the last
    timing = data_word_timing(audio_dir)
    assert timing["r1-b"].word_end_frame == [16, 46] and timing["r1-a"].pauses().shape == (2, 2)


def test_ctm_text_disagreement_names_utterance(audio_dir: Path) -> None:
    write_lines(audio_dir / "ctm", ["r1-a 1 0.10 0.50 hello", "r1-a 1 0.70 0.55 where", "r1-b 1 0.30 0.20 so",
                                    "r1-b 1 0.60 0.80 yes", "r2-a 1 0.05 0.90 ok"])
    with pytest.raises(PunctkitError, match=r"ctm:2 \(utterance r1-a\): CTM disagrees with .*text: word 2 is 'where'"):
        data_word_timing(audio_dir)


@pytest.mark.parametrize("name, lines, says", [
    ("utt2num_frames", ["r1-a 12.5"],
     "utt2num_frames (utterance r1-a): the frame count must be a positive whole number"),
    ("utt2dur", ["r1-a nan"], "utt2dur (utterance r1-a): the duration must be a finite number"),
    ("feats.info", ["frame_shift 0", "subsample 3"], "feats.info: frame_shift must be a positive number"),
    ("segments", ["r1-a r1 0.0 inf"], "segments:1 (utterance r1-a): end must be a finite number"),
])
def test_tables_of_times_and_counts_need_finite_numbers(audio_dir: Path, name: str, lines: list[str],
                                                        says: str) -> None:
    write_lines(audio_dir / name, lines)
    read = data_segments if name == "segments" else data_word_timing
    with pytest.raises(PunctkitError) as e:
        read(audio_dir)
    assert str(e.value).startswith(f"{audio_dir / says.split(' ')[0].split(':')[0]}") and says in str(e.value)


def test_cli_extract_and_cmvn(audio_dir: Path, tmp_path: Path) -> None:
    run = [sys.executable, "-c", "from punctkit.cli import main; main()"]
    p = subprocess.run(run + ["extract-feats", str(audio_dir), str(tmp_path / "f"), "--fbank-conf",
                              str(tmp_path / "fbank.conf"), "--pitch-conf", str(tmp_path / "pitch.conf")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "3 utterances" in p.stderr and (audio_dir / "feats.info").read_text().count("dim 43") == 1
    p = subprocess.run(run + ["compute-cmvn", str(audio_dir), "--per-spk"], capture_output=True, text=True)
    assert p.returncode == 0 and "2 speakers" in p.stderr
    (audio_dir / "segments").write_text("r1-a r1 0.00 9.00\n")
    p = subprocess.run(run + ["extract-feats", str(audio_dir), str(tmp_path / "g")], capture_output=True, text=True)
    assert p.returncode == 1 and p.stderr.strip().splitlines()[-1].startswith("punctkit: error:")
