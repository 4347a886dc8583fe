"""Helpers shared by the engine tests: a tiny tagger registered as `test_tagger`, small IWSLT data dirs."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

from punctkit.data.prepare import prepare
from punctkit.models.base import PunctModel, gather_words
from punctkit.models.registry import MODELS, register

if "test_tagger" not in MODELS:
    @register("test_tagger")
    class TestTagger(PunctModel):
        """Embedding -> 1-D convolution over tokens -> linear, read at each word's label token."""

        def __init__(self, vocab_size: int, n_labels: int, pad_id: int = 0, embeddings: np.ndarray | None = None,
                     d: int = 16, dropout: float = 0.1):
            super().__init__()
            self.emb = nn.Embedding(vocab_size, d, padding_idx=pad_id)
            if embeddings is not None:
                self.proj = nn.Linear(embeddings.shape[1], d)
                self.emb = nn.Embedding.from_pretrained(torch.as_tensor(embeddings), freeze=True, padding_idx=pad_id)
            else:
                self.proj = nn.Identity()
            self.conv = nn.Conv1d(d, d, 5, padding=2)
            self.drop = nn.Dropout(dropout)
            self.out = nn.Linear(d, n_labels)

        def forward(self, batch):
            x = self.proj(self.emb(batch["tokens"])) * batch["token_mask"][..., None]
            h = torch.relu(self.conv(x.transpose(1, 2))).transpose(1, 2)
            return self.out(self.drop(gather_words(h, batch["word_pos"])))


TINY = {
    "frontend": {"kind": "word", "min_count": 1},
    "model": {"type": "test_tagger", "d": 16},
    "train": {"optimizer": "adam", "lr": 0.01, "batch_size": 8, "window": 40, "epochs": 3, "seed": 3,
              "n_average": 2, "threads": 1},
    "decode": {"window": 40, "step": 20, "batch_size": 16},
}


def make_dirs(iwslt: Path, out: Path, train_lines: str = "1:3000", valid_lines: str = "3001:4000"):
    """Train/valid data dirs (streams of 100-word blocks) from lines of dev2012."""
    dirs = []
    for name, spec in (("train", train_lines), ("valid", valid_lines)):
        a, b = map(int, spec.split(":"))
        prepare([iwslt / "dev2012"], out / name, block_len=100, lines=(a, b))
        dirs.append(out / name)
    return dirs
