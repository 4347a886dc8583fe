"""What training and decoding both feed a model (torch side; the numpy side is data/streams.py):
padded batches as tensors (`collate`), and the audio inputs of a window (`AudioExtra`).

The audio inputs of a window of a stream: the frames of the utterance(s) it covers
(CMVN applied, subsampled; punctkit/feats/loader.py), cut to the window's words when it
starts or ends inside an utterance, concatenated when it spans several utterances, with
each word's last frame re-based to the window, and the pauses around each word.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from punctkit.data.streams import Stream, Window, pad_batch
from punctkit.feats.loader import AcousticData, AcousticUtterance
from punctkit.files import PunctkitError


def collate(examples: list[dict[str, Any]], pad_id: int = 0,
            pad_values: dict[str, float] | None = None) -> dict[str, torch.Tensor]:
    """`pad_batch` as tensors: `tokens, token_mask, word_pos, word_mask, labels, index` and every
    extra key padded along its first dimension."""
    return {k: torch.from_numpy(v) for k, v in pad_batch(examples, pad_id, pad_values).items()}


def wants_audio(conf: dict[str, Any], needs: tuple[str, ...] = ()) -> bool:
    """True when the config says `audio: {use: true}`, or it leaves `use` unset and the model needs `feats`."""
    use = (conf.get("audio") or {}).get("use")
    return bool(use) if use is not None else "feats" in needs


class AudioExtra:
    """`extra(stream, window) -> {feats, feat_mask, word_end_frame, pauses}` over one or more data dirs."""

    def __init__(self, data_dirs: list[str | Path], cache: bool = True) -> None:
        self.sources = [AcousticData(d) for d in data_dirs]
        self.cache: dict[str, AcousticUtterance] | None = {} if cache else None

    @property
    def feat_dim(self) -> int:
        """Feature dimension (from the first utterance)."""
        for src in self.sources:
            for uttid in src.keys()[:1]:
                return int(src[uttid].feats.shape[1])
        raise PunctkitError(f"{self.sources[0].path / 'feats.scp'}: no utterances")

    def utterance(self, uttid: str) -> AcousticUtterance:
        """An utterance's features and word alignment, from whichever data dir has it."""
        if self.cache is not None and uttid in self.cache:
            return self.cache[uttid]
        for src in self.sources:
            if uttid in src.feats:
                u = src[uttid]
                break
        else:
            raise PunctkitError(f"{self.sources[0].path / 'feats.scp'}: no features for utterance {uttid}")
        if self.cache is not None:
            self.cache[uttid] = u
        return u

    def __call__(self, stream: Stream, window: Window) -> dict[str, np.ndarray]:
        feats, ends, pauses, offset = [], [], [], 0
        for uttid, a, b in stream.utt_spans():
            lo, hi = max(a, window.start), min(b, window.end)
            if lo >= hi:
                continue
            u = self.utterance(uttid)
            if len(u.word_end_frame) != b - a:
                raise PunctkitError(f"utterance {uttid}: {b - a} words but {len(u.word_end_frame)} word timings "
                                    f"(ctm and text disagree)")
            first = u.word_end_frame[lo - a - 1] + 1 if lo > a else 0
            last = u.word_end_frame[hi - a - 1] + 1 if hi < b else len(u.feats)
            first = min(first, max(last - 1, 0))
            feats.append(u.feats[first:last])
            ends += [offset + min(max(e - first, 0), last - first - 1) for e in u.word_end_frame[lo - a:hi - a]]
            pauses.append(u.pauses[lo - a:hi - a])
            offset += last - first
        x = np.concatenate(feats).astype(np.float32)
        return {"feats": x, "feat_mask": np.ones(len(x), dtype=bool),
                "word_end_frame": np.asarray(ends, dtype=np.int64),
                "pauses": np.concatenate(pauses).astype(np.float32)}


def audio_extra(*data_dirs: str | Path | None) -> AudioExtra:
    """An AudioExtra over the given data dirs (None entries are skipped)."""
    return AudioExtra([d for d in data_dirs if d])

