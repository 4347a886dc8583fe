"""Audio of a data directory: `wav.scp` entries and `segments`, read into float samples.

`wav.scp` lines are `recid path` or `recid command |` (the command's standard
output is a WAV file, e.g. `sox x.flac -t wav - |`). Samples keep Kaldi's scale
(raw 16-bit magnitudes as float32, not divided by 32768), which is what
kaldi-native-fbank and Kaldi's pitch tracker expect.

`segments` lines are `uttid recid start end` (seconds); without `segments`
each recording is one utterance with the recording id as utterance id.
"""
from __future__ import annotations

import io
import subprocess
import wave
from pathlib import Path
from typing import Iterator

import numpy as np

from punctkit.data.datadir import read_table
from punctkit.data.timing import Segment, read_segments
from punctkit.files import PunctkitError, where

# A segment may end this far past its recording (rounding in segment times); it is cut at the end.
MAX_OVERSHOOT = 0.05


def read_wav_scp(path: str | Path) -> dict[str, str]:
    """`recid -> path or command |`, checked for sorting and duplicates."""
    table = read_table(path)
    for i, (recid, spec) in enumerate(table.items(), 1):
        if not spec:
            raise PunctkitError(f"{where(path, i)}: recording '{recid}' has no path or command")
    return dict(table)


def data_segments(data: str | Path) -> list[Segment]:
    """The utterances of a data directory as segments (whole recordings without `segments`)."""
    d = Path(data)
    if (d / "segments").is_file():
        return read_segments(d / "segments")
    return [Segment(recid, recid, 0.0, None) for recid in read_wav_scp(d / "wav.scp")]


def _open_bytes(spec: str) -> bytes:
    spec = spec.strip()
    if spec.endswith("|"):
        proc = subprocess.run(spec[:-1], shell=True, capture_output=True)
        if proc.returncode != 0:
            err = proc.stderr.decode(errors="replace").strip().splitlines()
            raise PunctkitError(f"command '{spec[:-1].strip()}' failed (status {proc.returncode})"
                                f"{': ' + err[-1] if err else ''}")
        return proc.stdout
    try:
        return Path(spec).read_bytes()
    except OSError as e:
        raise PunctkitError(f"cannot read '{spec}': {e.strerror}") from None


def read_wav(spec: str) -> tuple[int, np.ndarray]:
    """(sample rate, float32 samples at 16-bit scale) of a wav.scp entry; first channel only."""
    data = _open_bytes(spec)
    try:
        with wave.open(io.BytesIO(data)) as w:
            rate, width, channels = w.getframerate(), w.getsampwidth(), w.getnchannels()
            raw = w.readframes(w.getnframes())
    except (wave.Error, EOFError) as e:
        raise PunctkitError(f"'{spec}' is not a readable PCM WAV file ({e})") from None
    if width == 1:
        x = (np.frombuffer(raw, dtype=np.uint8).astype(np.float32) - 128.0) * 256.0
    elif width == 2:
        x = np.frombuffer(raw, dtype="<i2").astype(np.float32)
    elif width == 4:
        x = np.frombuffer(raw, dtype="<i4").astype(np.float32) / 65536.0
    else:
        raise PunctkitError(f"'{spec}': {8 * width}-bit samples are not supported (use 16-bit PCM)")
    return rate, x[::channels].copy() if channels > 1 else x


def wav_duration(spec: str) -> float | None:
    """Duration in seconds from the WAV header of a plain path; None for commands."""
    if spec.strip().endswith("|"):
        return None
    try:
        with wave.open(spec.strip()) as w:
            return w.getnframes() / w.getframerate()
    except (OSError, wave.Error, EOFError):
        return None


def cut_segment(seg: Segment, rate: int, samples: np.ndarray) -> np.ndarray:
    """The samples of `seg`; a segment ending past its recording is an error."""
    n = len(samples)
    dur = n / rate
    end = dur if seg.end is None else seg.end
    if end > dur + MAX_OVERSHOOT or seg.start >= dur:
        raise PunctkitError(f"segment {seg.start:.2f}..{end:.2f} s is past the end of recording "
                            f"'{seg.recid}' ({dur:.2f} s)")
    return samples[int(round(seg.start * rate)):min(n, int(round(end * rate)))]


def iter_audio(data: str | Path, keep: set[str] | None = None,
               ) -> Iterator[tuple[Segment, int, np.ndarray | PunctkitError]]:
    """Yield (segment, rate, samples) per utterance (only those in `keep` if given), in order.

    A failure is yielded in place of the samples, not raised, so the caller
    decides whether to stop. Each recording is read once for its consecutive segments.
    """
    d = Path(data)
    wavs = read_wav_scp(d / "wav.scp")
    cache: tuple[str, int, np.ndarray] | None = None
    for seg in data_segments(d):
        if keep is not None and seg.uttid not in keep:
            continue
        if seg.recid not in wavs:
            yield seg, 0, PunctkitError(f"{where(d / 'segments', seg.line, seg.uttid)}: "
                                        f"recording '{seg.recid}' is not in {d / 'wav.scp'}")
            continue
        try:
            if cache is None or cache[0] != seg.recid:
                cache = None
                cache = (seg.recid, *read_wav(wavs[seg.recid]))
            rate, x = cache[1], cache[2]
            yield seg, rate, cut_segment(seg, rate, x)
        except PunctkitError as e:
            loc = where(d / "segments", seg.line, seg.uttid) if seg.line else where(d / "wav.scp", None, seg.uttid)
            yield seg, 0, PunctkitError(f"{loc}: {e}")
