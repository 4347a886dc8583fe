"""Greedy and beam search over label sequences, one label per real word.

Works for every `PunctModel`: a tagger's per-word log-probabilities are searched as
if they came from a decoder that ignores its history (its best hypothesis is then
the per-word argmax), an encoder-decoder (`seq2seq = True`) is stepped through
`encode`/`step`/`expand_memory`/`reorder_state`. The beam search is batched: the
hypotheses of all items advance together, and an item whose words are all labelled
keeps its hypotheses unchanged (score + 0) until the longest item is done.
Words are assumed to be left-aligned: `word_mask` is True on a prefix of each row.

Both searches also give each chosen label's step distribution (`greedy_rows`,
`beam_search_rows`): the probabilities over all labels of the decoder step that
emitted it, given the labels chosen before it (a tagger's: the softmax of its logits).
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

import numpy as np
import torch

from punctkit.data.streams import IGNORE
from punctkit.models.base import Batch, PunctModel


@contextlib.contextmanager
def _inference(model: PunctModel) -> Iterator[None]:
    """Evaluation mode without gradients; the model's previous mode is restored after."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        model.train(was_training)


class _TaggerSteps:
    """Presents a tagger's per-word log-probabilities through the encoder-decoder interface."""

    bos_id = 0

    def __init__(self, model: PunctModel) -> None:
        self.model = model

    def encode(self, batch: Batch) -> torch.Tensor:
        return torch.log_softmax(self.model(batch).float(), dim=-1)

    def step(self, memory: torch.Tensor, prev: torch.Tensor, state: Any, t: int) -> tuple[torch.Tensor, Any]:
        return memory[:, t], None

    def expand_memory(self, memory: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        return memory.index_select(0, index)

    def reorder_state(self, state: Any, index: torch.Tensor) -> Any:
        return state


def _steps(model: PunctModel) -> Any:
    return model if model.seq2seq else _TaggerSteps(model)


def greedy(model: PunctModel, batch: Batch) -> torch.Tensor:
    """Best label per word (B, W): greedy step decoding (a tagger's steps ignore the history,
    so this is its per-word arg-max).

    Positions without a word hold IGNORE (-100).
    """
    return greedy_rows(model, batch)[0]


def greedy_rows(model: PunctModel, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
    """`greedy`'s labels (B, W) and, per word, the distribution of the step that chose its label
    (B, W, n_labels; rows of positions without a word are meaningless)."""
    mask = batch["word_mask"]
    steps = _steps(model)
    with _inference(model):
        memory = steps.encode(batch)
        prev = torch.full((mask.size(0),), steps.bos_id, dtype=torch.long, device=mask.device)
        state, out, dists = None, [], []
        for t in range(mask.size(1)):
            logp, state = steps.step(memory, prev, state, t)
            prev = logp.argmax(-1)
            out.append(prev)
            dists.append(logp.float().exp())
        pred = torch.stack(out, dim=1) if out else mask.long()
        rows = torch.stack(dists, dim=1) if dists else mask.new_zeros(mask.size(0), 0, 0, dtype=torch.float)
    return pred.masked_fill(~mask, IGNORE), rows


def beam_search(
    model: PunctModel, batch: Batch, beam: int = 6, nbest: int = 1
) -> list[list[tuple[list[int], float]]]:
    """The `nbest` best label sequences of every item, one label per real word.

    Returns, per item, up to `nbest` (labels, score) pairs sorted by score (the sum of
    the words' log-probabilities), best first; fewer when the item has fewer distinct
    label sequences than asked for.
    """
    return [hyps for hyps, _ in beam_search_rows(model, batch, beam, nbest)]


def beam_search_rows(
    model: PunctModel, batch: Batch, beam: int = 6, nbest: int = 1
) -> list[tuple[list[tuple[list[int], float]], np.ndarray]]:
    """`beam_search`'s n-best of every item, with the step distributions of its best hypothesis:
    (n_words, n_labels), row t the probabilities of the decoder step that emitted label t,
    given the hypothesis' labels before it."""
    if beam < 1 or nbest < 1:
        raise ValueError(f"beam ({beam}) and nbest ({nbest}) must be at least 1")
    nbest = min(nbest, beam)
    steps = _steps(model)
    mask = batch["word_mask"]
    n_words = mask.sum(1)
    b, w, k, dev = mask.size(0), mask.size(1), beam, mask.device
    with _inference(model):
        memory = steps.encode(batch)
        memory = steps.expand_memory(memory, torch.arange(b, device=dev).repeat_interleave(k))
        scores = torch.full((b, k), float("-inf"), device=dev)
        scores[:, 0] = 0.0  # one live hypothesis at the start, so the beam holds no duplicates
        prev = torch.full((b * k,), steps.bos_id, dtype=torch.long, device=dev)
        state, origins, labels, dists = None, [], [], []
        for t in range(w):
            logp, state = steps.step(memory, prev, state, t)
            logp = logp.float().view(b, k, -1)
            dists.append(logp.exp())  # before freezing: rows past an item's words are dropped anyway
            n_labels = logp.size(-1)
            done = t >= n_words  # (B,) items with no word t: extend with a free, fixed label
            if done.any():
                frozen = torch.full_like(logp[0], float("-inf"))
                frozen[:, 0] = 0.0
                logp = torch.where(done[:, None, None], frozen, logp)
            top, flat = (scores[:, :, None] + logp).view(b, -1).topk(k, dim=1)
            origin, label = flat // n_labels, flat % n_labels
            scores = top
            origins.append(origin)
            labels.append(label)
            state = steps.reorder_state(state, (torch.arange(b, device=dev)[:, None] * k + origin).view(-1))
            prev = label.view(-1)
    return _backtrack(origins, labels, dists, scores, n_words, nbest)


def _backtrack(
    origins: list[torch.Tensor], labels: list[torch.Tensor], dists: list[torch.Tensor], scores: torch.Tensor,
    n_words: torch.Tensor, nbest: int
) -> list[tuple[list[tuple[list[int], float]], np.ndarray]]:
    """Follow the back-pointers from the final beams; keep each item's first n_words labels, and
    the best hypothesis' step distributions (step t's row of the beam it extended)."""
    b, k = scores.shape
    seqs = torch.zeros(b, k, len(labels), dtype=torch.long)
    n_labels = dists[0].size(-1) if dists else 0
    rows = torch.zeros(b, len(labels), n_labels)
    beam_idx = torch.arange(k).expand(b, k).clone()
    for t in range(len(labels) - 1, -1, -1):
        seqs[:, :, t] = labels[t].cpu().gather(1, beam_idx)
        beam_idx = origins[t].cpu().gather(1, beam_idx)
        best_from = beam_idx[:, 0]  # the slot at step t-1 that the best hypothesis extended at step t
        rows[:, t] = dists[t].cpu()[torch.arange(b), best_from]
    scores = scores.cpu()
    out = []
    for i in range(b):
        n = int(n_words[i])
        hyps = [(seqs[i, j, :n].tolist(), float(scores[i, j])) for j in range(k) if torch.isfinite(scores[i, j])]
        out.append((hyps[:nbest], rows[i, :n].double().numpy()))
    return out
