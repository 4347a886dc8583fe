"""Token embeddings: learned from scratch, or pre-trained vectors (frozen or fine-tuned).

Pre-trained vectors whose size differs from the model size are projected linearly
to `d_model` (Yi & Tao 2019 project frozen 50-d GloVe/Speech2Vec vectors to 512).
"""
from __future__ import annotations

import numpy as np
import torch
from torch import nn

from punctkit.files import PunctkitError


class InputEmbedding(nn.Module):
    """(B, T) token ids -> (B, T, d_model) vectors.

    Args:
        vocab_size: number of token ids (including padding and `<unk>`).
        d_model: output size.
        pad_id: padding id; its vector is zero and never trained.
        pretrained: optional (vocab_size, dim) matrix of pre-trained vectors.
        freeze: keep the pre-trained vectors fixed (the projection, if any, still trains).
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        pad_id: int = 0,
        pretrained: np.ndarray | None = None,
        freeze: bool = True,
    ) -> None:
        super().__init__()
        self.proj: nn.Module | None = None
        if pretrained is None:
            self.embed = nn.Embedding(vocab_size, d_model, padding_idx=pad_id)
        else:
            mat = np.asarray(pretrained, dtype=np.float32)
            if mat.ndim != 2 or mat.shape[0] != vocab_size:
                raise PunctkitError(
                    f"pre-trained embeddings have shape {mat.shape}, expected ({vocab_size}, dim) for the vocabulary"
                )
            weight = torch.from_numpy(mat.copy())
            weight[pad_id] = 0.0
            self.embed = nn.Embedding.from_pretrained(weight, freeze=freeze, padding_idx=pad_id)
            if mat.shape[1] != d_model:
                self.proj = nn.Linear(mat.shape[1], d_model)
        self.out_dim = d_model

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Embed token ids (and project pre-trained vectors to `d_model`)."""
        x = self.embed(tokens)
        return self.proj(x) if self.proj is not None else x
