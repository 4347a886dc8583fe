"""Cepstral mean and variance normalisation: Kaldi's cmvn stats, computed and applied.

Stats use Kaldi's `cmvn.ark` layout, a 2 x (D+1) matrix per key: row 0 holds
the sums and the frame count, row 1 the sums of squares
(kaldi-native-fbank's `CmvnAccumulator`). `DATA/cmvn.scp` is keyed by speaker
(per-speaker stats, as Kaldi's `compute_cmvn_stats.sh`) or holds the single key
`global`. Normalisation is applied when batches are built (`Cmvn.apply`).
"""
from __future__ import annotations

from pathlib import Path

import kaldi_native_fbank as knf
import kaldiio
import numpy as np

from punctkit.data.datadir import CMVN_GLOBAL, read_table
from punctkit.feats.ark import ArkWriter
from punctkit.files import PunctkitError, where

GLOBAL = CMVN_GLOBAL


def compute_cmvn(data: str | Path, per_spk: bool = False) -> int:
    """Write DATA/cmvn.ark and DATA/cmvn.scp from DATA/feats.scp; returns the number of stats keys."""
    d = Path(data)
    scp = d / "feats.scp"
    if not scp.is_file():
        raise PunctkitError(f"{d}: no feats.scp (run extract-feats first)")
    utt2spk = dict(read_table(d / "utt2spk")) if per_spk else {}
    if per_spk and not utt2spk:
        raise PunctkitError(f"{d / 'utt2spk'}: empty (needed for --per-spk)")
    acc: dict[str, knf.CmvnAccumulator] = {}
    for i, (uttid, feats) in enumerate(kaldiio.load_scp_sequential(str(scp)), 1):
        key = GLOBAL
        if per_spk:
            if uttid not in utt2spk:
                raise PunctkitError(f"{where(scp, i, uttid)}: utterance is not in {d / 'utt2spk'}")
            key = utt2spk[uttid]
        acc.setdefault(key, knf.CmvnAccumulator(feats.shape[1])).accumulate(np.asarray(feats, dtype=np.float32))
    if not acc:
        raise PunctkitError(f"{scp}: no features")
    with ArkWriter(d / "cmvn.ark", d / "cmvn.scp") as w:
        for key in sorted(acc):
            w.write(key, np.asarray(acc[key].stats, dtype=np.float64))
    return len(acc)


class Cmvn:
    """Stats of a data directory, applied per utterance (by speaker, or global)."""

    def __init__(self, stats: dict[str, np.ndarray], utt2spk: dict[str, str], norm_vars: bool = True) -> None:
        self.stats, self.utt2spk = stats, utt2spk
        self.opts = knf.CmvnOptions(norm_vars=norm_vars)

    @classmethod
    def load(cls, data: str | Path, norm_vars: bool = True) -> "Cmvn":
        """Read DATA/cmvn.scp (and utt2spk for per-speaker stats)."""
        d = Path(data)
        if not (d / "cmvn.scp").is_file():
            raise PunctkitError(f"{d}: no cmvn.scp (run compute-cmvn first)")
        stats = {k: np.asarray(v, dtype=np.float64) for k, v in kaldiio.load_scp(str(d / "cmvn.scp")).items()}
        utt2spk = dict(read_table(d / "utt2spk")) if GLOBAL not in stats else {}
        return cls(stats, utt2spk, norm_vars)

    def stats_for(self, uttid: str) -> np.ndarray:
        """The stats that normalise `uttid`."""
        if GLOBAL in self.stats:
            return self.stats[GLOBAL]
        spk = self.utt2spk.get(uttid)
        if spk not in self.stats:
            raise PunctkitError(f"no cmvn stats for utterance {uttid} (speaker {spk})")
        return self.stats[spk]

    def apply(self, uttid: str, feats: np.ndarray) -> np.ndarray:
        """Normalised copy of one utterance's features (Kaldi's apply-cmvn)."""
        return apply_cmvn(feats, self.stats_for(uttid), self.opts.norm_vars)


def apply_cmvn(feats: np.ndarray, stats: np.ndarray, norm_vars: bool = True) -> np.ndarray:
    """Normalise `feats` with 2 x (D+1) stats (means; variances too with `norm_vars`)."""
    if stats.shape[1] != feats.shape[1] + 1:
        raise PunctkitError(f"cmvn stats of dim {stats.shape[1] - 1} for features of dim {feats.shape[1]}")
    return knf.apply_cmvn(stats, knf.CmvnOptions(norm_vars=norm_vars), np.asarray(feats, dtype=np.float32))
