"""Faber et al. 2020: one Transformer encoder over text and audio concatenated in time.

Text tokens (words or BPE) are embedded as in `transformer_seq2seq`; the frames go
through a 2-layer BiLSTM, each layer followed by max-pooling by `pool` in time
(4x fewer frames), are projected to d_model, given their own positions and a
modality embedding, and appended after the text. The decoder (that of
`transformer_seq2seq`, reused here) emits one label per word, its input at word t
aligned to the encoder state of word t's token.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from punctkit.files import PunctkitError
from punctkit.models.base import Batch, gather_words
from punctkit.models.registry import register
from punctkit.models.transformer import TransformerSeq2Seq
from punctkit.nn.rnn import run_masked
from punctkit.nn.transformer import PositionalEncoding


class PooledBLSTM(nn.Module):
    """BiLSTM layers, each followed by max-pooling of `pool` frames: (B, F, D) -> (B, F/pool^n, 2*hidden)."""

    def __init__(self, feat_dim: int, hidden: int, n_layers: int = 2, pool: int = 2) -> None:
        super().__init__()
        self.layers = nn.ModuleList(
            nn.LSTM(feat_dim if i == 0 else 2 * hidden, hidden, batch_first=True, bidirectional=True)
            for i in range(n_layers))
        self.pool = pool

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        for lstm in self.layers:
            h = run_masked(lstm, x, mask).masked_fill(~mask[..., None], float("-inf"))
            n = -(-h.size(1) // self.pool) * self.pool  # pad time to a multiple of pool
            h = nn.functional.pad(h, (0, 0, 0, n - h.size(1)), value=float("-inf"))
            x = h.view(h.size(0), n // self.pool, self.pool, -1).max(dim=2).values
            mask = nn.functional.pad(mask, (0, n - mask.size(1))).view(mask.size(0), -1, self.pool).any(-1)
            x = x.masked_fill(~mask[..., None], 0.0)
        return x, mask


@register("concat_transformer")
class ConcatTransformer(TransformerSeq2Seq):
    """Text + pooled-BLSTM audio, concatenated in time, Transformer encoder-decoder over labels.

    Args: those of `transformer_seq2seq`, plus `audio_hidden` (BLSTM size per direction),
    `audio_layers`, `pool` (max-pooling factor per layer) and `max_frames` (audio positions).
    """

    needs = ("tokens", "token_mask", "word_pos", "word_mask", "feats", "feat_mask")

    def __init__(self, vocab_size: int, n_labels: int, pad_id: int = 0, embeddings: np.ndarray | None = None,
                 feat_dim: int | None = None, n_layers: int = 6, n_dec_layers: int | None = None,
                 d_model: int = 512, n_heads: int = 8, d_ff: int = 2048, dropout: float = 0.1,
                 positions: str = "sinusoidal", max_len: int = 1024, norm_first: bool = True,
                 freeze_embeddings: bool = True, audio_hidden: int = 256, audio_layers: int = 2,
                 pool: int = 2, max_frames: int = 4096, local_conv: int = 0, embed_std: float | None = None,
                 input_norm: bool = False, rnn_layers: int = 0) -> None:
        if not feat_dim:
            raise PunctkitError("concat_transformer needs features (feat_dim unknown: train with "
                                "audio: {use: true} on a data dir with feats.scp)")
        super().__init__(vocab_size, n_labels, pad_id, embeddings, n_layers, n_dec_layers, d_model, n_heads, d_ff,
                         dropout, positions, max_len, norm_first, True, freeze_embeddings,
                         local_conv, embed_std, input_norm, rnn_layers)
        self.audio = PooledBLSTM(int(feat_dim), audio_hidden, audio_layers, pool)
        self.audio_proj = nn.Linear(2 * audio_hidden, d_model)
        self.audio_pos = PositionalEncoding(d_model, "sinusoidal", max_frames, dropout)
        self.modality = nn.Embedding(2, d_model)  # 0 text, 1 audio

    def encode_concat(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """Encoder states over [text; audio] (B, T + F', d_model) and their mask."""
        enc = self.encoder
        text = enc.inputs(batch["tokens"], batch["token_mask"]) + self.modality.weight[0]  # (B, T, d)
        a, a_mask = self.audio(batch["feats"], batch["feat_mask"])
        audio = self.audio_pos(self.audio_proj(a)) + self.modality.weight[1]
        mask = torch.cat([batch["token_mask"], a_mask], dim=1)
        return enc.encoder(torch.cat([text, audio], dim=1), src_key_padding_mask=~mask), mask

    def encode(self, batch: Batch) -> dict[str, Any]:
        h, mask = self.encode_concat(batch)
        return {"kv": self.decoder.memory_kv(h), "mask": mask, "words": gather_words(h, batch["word_pos"])}

    def forward(self, batch: Batch) -> torch.Tensor:
        """Logits (B, W, n_labels), teacher-forced on `labels`; without labels, greedy log-probs."""
        labels = batch.get("labels")
        if labels is None:
            return self._greedy_logprobs(self.encode(batch), batch["word_pos"].size(1))
        h, mask = self.encode_concat(batch)
        bos = torch.full_like(labels[:, :1], self.bos_id)
        prev = torch.cat([bos, labels[:, :-1].clamp(min=0)], dim=1)
        x = self.dec_pos(self.dec_input(prev, gather_words(h, batch["word_pos"])))
        return self.out(self.decoder(x, h, mask))
