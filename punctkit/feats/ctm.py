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
from punctkit.data.formats.asr import read_ctm as read_ctm_lines
from punctkit.files import PunctkitError, positive_number, where


@dataclass(frozen=True)
class CtmWord:
    """One CTM line."""

    start: float
    dur: float
    word: str
    line: int

    @property
    def end(self) -> float:
        return self.start + self.dur


@dataclass
class WordTiming:
    """Per word of one utterance: last (subsampled) frame and pauses before/after in seconds."""

    word_end_frame: list[int]
    pause_before: list[float]
    pause_after: list[float]

    def pauses(self) -> np.ndarray:
        """(words, 2) array of pause-before and pause-after, the optional extra input."""
        return np.array([self.pause_before, self.pause_after], dtype=np.float32).T.reshape(-1, 2)


def read_ctm(path: str | Path) -> dict[str, list[CtmWord]]:
    """A whole CTM by utterance (through the format registry's one CTM reader, which checks that each
    utterance's lines are together); the words of an utterance must be in time order."""
    out: dict[str, list[CtmWord]] = {}
    for uttid, lines in read_ctm_lines(path):
        words = out[uttid] = []
        for ln in lines:
            if words and ln.start_s < words[-1].start:
                raise PunctkitError(f"{where(path, ln.lineno, uttid)}: start {ln.start_s} before the previous "
                                    f"word's {words[-1].start}")
            words.append(CtmWord(ln.start_s, ln.dur_s, ln.word, ln.lineno))
    return out


def ctm_text_problems(ctm: dict[str, list[CtmWord]], text: dict[str, str], ctm_path: str | Path,
                      text_path: str | Path) -> list[str]:
    """One message per utterance whose CTM words differ from its text (or that is missing)."""
    problems = []
    for uttid, words in ctm.items():
        if uttid not in text:
            problems.append(f"{where(ctm_path, words[0].line, uttid)}: utterance is not in {text_path}")
            continue
        ref = text[uttid].split()
        hyp = [w.word for w in words]
        if hyp == ref:
            continue
        k = next((j for j, (a, b) in enumerate(zip(hyp, ref)) if a != b), min(len(hyp), len(ref)))
        line = words[min(k, len(words) - 1)].line
        what = (f"word {k + 1} is '{hyp[k]}' but text has '{ref[k]}'" if k < min(len(hyp), len(ref))
                else f"{len(hyp)} words but text has {len(ref)}")
        problems.append(f"{where(ctm_path, line, uttid)}: CTM disagrees with {text_path}: {what}")
    for uttid in text:
        if uttid not in ctm:
            problems.append(f"{where(ctm_path, None, uttid)}: no CTM lines for this utterance of {text_path}")
    return problems


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
