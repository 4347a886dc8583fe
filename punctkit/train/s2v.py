"""Training Speech2Vec on a data directory's words and writing each word type's mean vector.

Each word's segment is its frames (features after CMVN, subsampled as DATA/feats.info
says) from its CTM start to its last frame (`word_timing`), at most `max_frames`.
Skip-gram pairs: every word with each word at most `window` words away in its
utterance. The vectors file is word2vec text, as `embeddings: {speech: FILE}` reads it.
"""
from __future__ import annotations

import math
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from punctkit.data.timing import read_ctm
from punctkit.feats.ctm import word_timing
from punctkit.feats.fbank_pitch import info_number
from punctkit.feats.loader import AcousticData
from punctkit.files import PunctkitError, atomic_write, check_not_input
from punctkit.models.speech2vec import Speech2Vec, pad_segments
from punctkit.progress import progress


@dataclass
class S2vOptions:
    """Speech2Vec training options (the `s2v-train` command's)."""

    dim: int = 50
    hidden: int = 64
    window: int = 2
    epochs: int = 5
    batch_size: int = 64
    lr: float = 0.002
    max_frames: int = 50
    seed: int = 1
    threads: int = 1


@dataclass
class S2vResult:
    """What training did: segments, word types, the mean loss of each epoch, and the log's lines."""

    segments: int
    types: int
    losses: list[float] = field(default_factory=list)
    log: list[str] = field(default_factory=list)


def word_segments(data: str | Path, max_frames: int = 50) -> tuple[list[str], list[np.ndarray], list[list[int]]]:
    """Words, their segments (frames, D) and, per utterance, the indices of its words' segments."""
    d = Path(data)
    ac = AcousticData(d, with_timing=False)
    shift = info_number(d, "frame_shift", 0.01)
    ctm = read_ctm(d / "ctm")
    words: list[str] = []
    segs: list[np.ndarray] = []
    utts: list[list[int]] = []
    for uttid in sorted(ctm):
        if uttid not in ac.feats:
            raise PunctkitError(f"{d / 'feats.scp'}: no features for utterance {uttid} of {d / 'ctm'}")
        x = ac[uttid].feats
        ends = word_timing(ctm[uttid], shift, ac.subsample, len(x) * ac.subsample).word_end_frame
        idx = []
        for w, end in zip(ctm[uttid], ends):
            start = min(int(w.start / shift) // ac.subsample, end)
            seg = x[start:end + 1][:max_frames]
            if len(seg) == 0:
                continue
            idx.append(len(segs))
            words.append(w.word)
            segs.append(seg)
        utts.append(idx)
    if not segs:
        raise PunctkitError(f"{d}: no word segments (are ctm and feats.scp of the same utterances?)")
    return words, segs, utts


def skipgram_pairs(utts: list[list[int]], window: int) -> list[tuple[int, int]]:
    """(centre, neighbour) segment indices: each word with every word at most `window` away."""
    return [(u[i], u[j]) for u in utts for i in range(len(u))
            for j in range(max(0, i - window), min(len(u), i + window + 1)) if j != i]


def train_speech2vec(data: str | Path, out: str | Path, opts: S2vOptions, show_progress: bool = True,
                     echo=lambda s: print(s, file=sys.stderr)) -> S2vResult:
    """Train on DATA (feats.scp, cmvn.scp, ctm) and write the word-type vectors to `out`."""
    from gensim.models import KeyedVectors

    from punctkit.text.embeddings import write_vectors

    d = Path(data)
    check_not_input(out, [d / n for n in ("ctm", "text", "feats.scp", "cmvn.scp")])
    torch.manual_seed(opts.seed)
    torch.set_num_threads(opts.threads)
    rng = random.Random(opts.seed)
    words, segs_np, utts = word_segments(d, opts.max_frames)
    segs = [torch.from_numpy(np.ascontiguousarray(s)) for s in segs_np]
    pairs = skipgram_pairs(utts, opts.window)
    if not pairs:
        raise PunctkitError(f"{d}: no utterance has two words: nothing to train Speech2Vec on")
    res = S2vResult(len(segs), len(set(words)))

    def log(line: str) -> None:
        res.log.append(line)
        echo(f"s2v-train: {line}")

    log(f"{d}: {len(segs)} word segments, {res.types} word types, {len(pairs)} skip-gram pairs (window "
        f"{opts.window}), feature dim {segs[0].shape[1]}; dim {opts.dim}, hidden {opts.hidden}")
    model = Speech2Vec(segs[0].shape[1], opts.dim, opts.hidden)
    optim = torch.optim.Adam(model.parameters(), lr=opts.lr)
    steps = math.ceil(len(pairs) / opts.batch_size)
    for epoch in range(1, opts.epochs + 1):
        t0, total = time.time(), 0.0
        rng.shuffle(pairs)
        model.train()
        bar = progress(range(steps), show=show_progress, desc=f"s2v epoch {epoch}", unit="batch")
        for b in bar:
            batch = pairs[b * opts.batch_size:(b + 1) * opts.batch_size]
            x, x_len = pad_segments([segs[i] for i, _ in batch])
            y, y_len = pad_segments([segs[j] for _, j in batch])
            loss = model.loss(x, x_len, y, y_len)
            optim.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            optim.step()
            total += loss.item() * len(batch)
        res.losses.append(total / len(pairs))
        log(f"epoch {epoch}: reconstruction loss {res.losses[-1]:.4f} ({time.time() - t0:.1f} s)")
    vocab, vecs = type_vectors(model, words, segs, opts.batch_size)
    kv = KeyedVectors(vector_size=opts.dim)
    kv.add_vectors(vocab, vecs)
    write_vectors(kv, out)
    log(f"{len(vocab)} word vectors of dim {opts.dim} -> {out}")
    return res


@torch.no_grad()
def type_vectors(model: Speech2Vec, words: list[str], segs: list[torch.Tensor],
                 batch_size: int = 64) -> tuple[list[str], np.ndarray]:
    """Each word type (sorted) and the mean of its tokens' encodings."""
    model.eval()
    vocab = sorted(set(words))
    index = {w: i for i, w in enumerate(vocab)}
    sums = np.zeros((len(vocab), model.to_vec.out_features), dtype=np.float64)
    counts = np.zeros(len(vocab))
    for b in range(0, len(segs), batch_size):
        x, x_len = pad_segments(segs[b:b + batch_size])
        z = model.encode(x, x_len).numpy()
        for w, v in zip(words[b:b + batch_size], z):
            sums[index[w]] += v
            counts[index[w]] += 1
    return vocab, (sums / counts[:, None]).astype(np.float32)


def write_log(path: str | Path, lines: list[str]) -> None:
    """The training log, atomically."""
    with atomic_write(path) as f:
        f.writelines(ln + "\n" for ln in lines)
