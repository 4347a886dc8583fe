"""Padded batches as torch tensors, for training and decoding (the numpy side: data/streams.py)."""
from __future__ import annotations

from typing import Any

import torch

from punctkit.data.streams import pad_batch


def collate(examples: list[dict[str, Any]], pad_id: int = 0,
            pad_values: dict[str, float] | None = None) -> dict[str, torch.Tensor]:
    """`pad_batch` as tensors: `tokens, token_mask, word_pos, word_mask, labels, index` and every
    extra key padded along its first dimension."""
    return {k: torch.from_numpy(v) for k, v in pad_batch(examples, pad_id, pad_values).items()}

