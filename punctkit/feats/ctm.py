"""Word timings (CTM) -> per-word frame indices and pauses, the acoustic models' word alignment.

`DATA/ctm` has one line per word, `uttid chan start dur word [conf]`, in text
order, with times in seconds from the start of the utterance (as Kaldi's
`lattice-align-words | nbest-to-ctm` writes them per utterance). Its words
must be the words of `DATA/text`.

Frame t covers the time from t * shift; with subsampling factor s, the kept
frames are 0, s, 2s, ... (every third as in Klejch 2017) and kept frame k is
frame k * s. A word's last frame is the last kept frame that starts before the
word ends, which is where a hierarchical encoder reads its word-level state.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from punctkit.data.datadir import read_table
from punctkit.data.timing import CtmWord, ctm_text_problems, read_ctm
from punctkit.files import PunctkitError, positive_number, where


@dataclass
class WordTiming:
    """Per word of one utterance: last (subsampled) frame and pauses before/after in seconds."""

    word_end_frame: list[int]
    pause_before: list[float]
    pause_after: list[float]

    def pauses(self) -> np.ndarray:
        """(words, 2) array of pause-before and pause-after, the optional extra input."""
        return np.array([self.pause_before, self.pause_after], dtype=np.float32).T.reshape(-1, 2)


def word_timing(words: list[CtmWord], frame_shift: float = 0.01, subsample: int = 3,
                num_frames: int | None = None, duration: float | None = None) -> WordTiming:
    """Last kept frame of each word and the pauses around it (`num_frames` at the full rate)."""
    ends = []
    for w in words:
        t = math.ceil(round(w.end / frame_shift, 6)) - 1  # last full-rate frame starting before the end
        ends.append(max(0, t) // subsample)
    ends = list(np.maximum.accumulate(ends)) if ends else []
    if num_frames is not None:
        last = max(0, math.ceil(num_frames / subsample) - 1)
        ends = [min(e, last) for e in ends]
    if duration is None and num_frames is not None:
        duration = num_frames * frame_shift
    before = [max(0.0, w.start - (words[k - 1].end if k else 0.0)) for k, w in enumerate(words)]
    after = [max(0.0, words[k + 1].start - w.end) for k, w in enumerate(words[:-1])]
    if words:
        after.append(max(0.0, duration - words[-1].end) if duration is not None else 0.0)
    return WordTiming([int(e) for e in ends], [round(x, 4) for x in before], [round(x, 4) for x in after])


def data_word_timing(data: str | Path, subsample: int | None = None,
                     frame_shift: float | None = None) -> dict[str, WordTiming]:
    """Word timing of every utterance of a data directory (the batcher's word alignment).

    `subsample` and `frame_shift` default to DATA/feats.info (else 3 and 0.01 s);
    utt2num_frames, when present, bounds the frame indices and the last pause.
    """
    from punctkit.feats.fbank_pitch import info_number, read_info

    d = Path(data)
    for name in ("ctm", "text"):
        if not (d / name).is_file():
            raise PunctkitError(f"{d}: no '{name}' file")
    info = read_info(d)
    subsample = subsample or int(info_number(d, "subsample", 3, integer=True, info=info))
    frame_shift = frame_shift or info_number(d, "frame_shift", 0.01, info=info)
    ctm, text = read_ctm(d / "ctm"), dict(read_table(d / "text"))
    problems = ctm_text_problems(ctm, text, d / "ctm", d / "text")
    if problems:
        raise PunctkitError(problems[0] + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""))
    frames = {k: positive_number(v, where(d / "utt2num_frames", None, k), "the frame count", integer=True)
              for k, v in read_table(d / "utt2num_frames").items()} if (d / "utt2num_frames").is_file() else {}
    durs = {k: positive_number(v, where(d / "utt2dur", None, k), "the duration")
            for k, v in read_table(d / "utt2dur").items()} if (d / "utt2dur").is_file() else {}
    return {u: word_timing(ws, frame_shift, subsample, frames.get(u), durs.get(u)) for u, ws in ctm.items()}
