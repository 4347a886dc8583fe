"""The contract between models, the trainer and the decoder.

Every model maps a batch to one score vector per *word* (not per token), so the
trainer and the scorer never care whether the input was words, BPE pieces,
word-pieces of a pre-trained LM, or words plus audio frames.

Batch keys (torch tensors; B batch, T tokens, W words, F frames):
- `tokens` (B, T) long: input token ids, `pad_id` where padded
- `token_mask` (B, T) bool: True on real tokens
- `word_pos` (B, W) long: index into `tokens` of the token that carries each
  word's label (the last BPE piece, or the first word-piece for a PLM)
- `word_mask` (B, W) bool: True on real words
- `labels` (B, W) long: label ids, -100 where nothing is to be learnt/scored
- audio (optional): `feats` (B, F, D) float, `feat_mask` (B, F) bool,
  `word_end_frame` (B, W) long (after subsampling), `pauses` (B, W, 2) float
A model lists the keys it needs in `needs`; the batcher provides them.
"""
from __future__ import annotations

from typing import Any

import torch
from torch import nn

Batch = dict[str, torch.Tensor]


class PunctModel(nn.Module):
    """Base class: `forward` returns logits (B, W, n_labels) for every word.

    Taggers need only `forward`. Encoder-decoders (`seq2seq = True`) compute
    `forward` with teacher forcing on `batch["labels"]` and implement
    `encode`/`step` so that decode/search.py can run beam search over labels.
    """

    needs: tuple[str, ...] = ("tokens", "token_mask", "word_pos", "word_mask")
    seq2seq: bool = False

    def forward(self, batch: Batch) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    # --- encoder-decoder interface (seq2seq models only) ---
    def encode(self, batch: Batch) -> Any:
        """Run the encoder once; the returned state is given back to `step`."""
        raise NotImplementedError

    def step(self, memory: Any, prev: torch.Tensor, state: Any, t: int) -> tuple[torch.Tensor, Any]:
        """One decoder step for every hypothesis.

        `prev` (N,) is the previous label id per hypothesis (`bos_id` at t=0),
        `state` the decoder state (None at t=0), `memory` the encoder output
        already expanded to N hypotheses. Returns log-probabilities (N, n_labels)
        for word t and the new state.
        """
        raise NotImplementedError

    def expand_memory(self, memory: Any, index: torch.Tensor) -> Any:
        """Select/repeat encoder memory rows by `index` (N,) (beam expansion/reordering)."""
        raise NotImplementedError

    def reorder_state(self, state: Any, index: torch.Tensor) -> Any:
        """Select decoder state rows by `index` (N,) after a beam step."""
        raise NotImplementedError


def gather_words(hidden: torch.Tensor, word_pos: torch.Tensor) -> torch.Tensor:
    """(B, T, D) token states -> (B, W, D) states at each word's label-carrying token."""
    idx = word_pos.clamp(min=0).unsqueeze(-1).expand(-1, -1, hidden.size(-1))
    return hidden.gather(1, idx)


def token_boundaries(batch: Batch) -> torch.Tensor:
    """(B, T) boundary id per token (data/boundaries.py): word t's (batch["boundaries"] (B, W)) at its label-carrying
    token (batch["word_pos"]), NOTHING (0) at every other token and for padded words: what a model with a boundary
    input adds its table's row at."""
    ids = batch["boundaries"].long() * batch["word_mask"].long()  # (B, W): padded words add nothing
    # scatter_add: padded words share word_pos 0 with the first word; adding their 0 leaves its id as it is
    return torch.zeros_like(batch["tokens"]).scatter_add(1, batch["word_pos"], ids)


def select_rows(obj: Any, index: torch.Tensor) -> Any:
    """Rows `index` of every tensor in a nest of dicts, lists and tuples (None stays None)."""
    if isinstance(obj, torch.Tensor):
        return obj.index_select(0, index)
    if isinstance(obj, dict):
        return {k: select_rows(v, index) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(select_rows(v, index) for v in obj)
    return obj
