"""Acoustic inputs of a data directory as the batcher needs them, one utterance at a time.

Per utterance: features with CMVN applied and frames subsampled (factor from
DATA/feats.info unless given), each word's last kept frame, and the pauses
before/after each word. No torch here; the batcher turns these into tensors.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import kaldiio
import numpy as np

from punctkit.feats.cmvn import Cmvn
from punctkit.feats.ctm import WordTiming, data_word_timing
from punctkit.feats.fbank_pitch import info_number
from punctkit.files import PunctkitError


@dataclass
class AcousticUtterance:
    """Features (frames, dim) after CMVN and subsampling, with the word alignment."""

    uttid: str
    feats: np.ndarray
    word_end_frame: list[int]
    pauses: np.ndarray  # (words, 2): pause before, pause after (seconds)


def subsample_frames(feats: np.ndarray, factor: int) -> np.ndarray:
    """Keep frames 0, factor, 2*factor, ... (Klejch 2017 keeps every third)."""
    return feats[::factor]


class AcousticData:
    """Lazy access to DATA/feats.scp with CMVN (DATA/cmvn.scp when present) and word timing."""

    def __init__(self, data: str | Path, subsample: int | None = None, cmvn: bool = True,
                 norm_vars: bool = True, with_timing: bool = True) -> None:
        d = Path(data)
        if not (d / "feats.scp").is_file():
            raise PunctkitError(f"{d}: no feats.scp (run extract-feats first)")
        self.path = d
        self.subsample = subsample or int(info_number(d, "subsample", 1, integer=True))
        self.feats = kaldiio.load_scp(str(d / "feats.scp"))
        self.cmvn = Cmvn.load(d, norm_vars) if cmvn and (d / "cmvn.scp").is_file() else None
        self.timing: dict[str, WordTiming] = data_word_timing(d, self.subsample) if with_timing else {}

    def __len__(self) -> int:
        return len(self.feats)

    def keys(self) -> list[str]:
        return list(self.feats.keys())

    def __getitem__(self, uttid: str) -> AcousticUtterance:
        if uttid not in self.feats:
            raise PunctkitError(f"{self.path / 'feats.scp'}: no features for utterance {uttid}")
        x = np.asarray(self.feats[uttid], dtype=np.float32)
        if self.cmvn is not None:
            x = self.cmvn.apply(uttid, x)
        x = subsample_frames(x, self.subsample)
        t = self.timing.get(uttid)
        ends = t.word_end_frame if t else []
        return AcousticUtterance(uttid, x, ends, t.pauses() if t else np.zeros((0, 2), np.float32))
