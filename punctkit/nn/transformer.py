"""Transformer building blocks: positional encodings, an encoder, and a decoder that can step.

The encoder is torch's own `nn.TransformerEncoder`. The decoder is written here
because beam search needs incremental decoding: layer l's output at position t
depends only on layer l-1's outputs at positions <= t, so the decoder caches, per
layer, the self-attention keys/values of earlier positions (and the cross-attention
keys/values of the encoder output, once) and computes one new position per step.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from punctkit.files import PunctkitError
from punctkit.nn.attention import MultiHeadAttention, causal_mask


class PositionalEncoding(nn.Module):
    """Adds sinusoidal (any length) or learned (up to `max_len`) position vectors."""

    def __init__(self, d_model: int, kind: str = "sinusoidal", max_len: int = 1024, dropout: float = 0.0) -> None:
        super().__init__()
        if kind not in ("sinusoidal", "learned"):
            raise ValueError(f"positions must be 'sinusoidal' or 'learned', not {kind!r}")
        self.kind, self.d_model, self.max_len = kind, d_model, max_len
        self.drop = nn.Dropout(dropout)
        if kind == "learned":
            self.table = nn.Embedding(max_len, d_model)
            nn.init.normal_(self.table.weight, std=0.02)
        else:
            # a build on the meta device (registry.misfit's check) has shapes, no values to compute
            meta = torch.empty(0).is_meta
            self.register_buffer("table_", torch.zeros(max_len, d_model) if meta else self._sinusoid(max_len),
                                 persistent=False)

    def _sinusoid(self, n: int) -> torch.Tensor:
        pos = torch.arange(n, dtype=torch.float32)[:, None]
        div = torch.exp(torch.arange(0, self.d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / self.d_model))
        pe = torch.zeros(n, self.d_model)
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div)[:, : self.d_model // 2]
        return pe

    def positions(self, start: int, n: int, device: torch.device) -> torch.Tensor:
        """Position vectors (n, d_model) for positions start .. start+n-1."""
        end = start + n
        if self.kind == "learned":
            if end > self.max_len:
                raise PunctkitError(f"sequence of {end} positions is longer than max_len {self.max_len} of the model")
            return self.table(torch.arange(start, end, device=device))
        if end > self.table_.size(0):
            self.table_ = self._sinusoid(max(end, 2 * self.table_.size(0))).to(device)
        return self.table_[start:end].to(device)

    def forward(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:
        """x (B, T, d) + positions start .., then dropout."""
        return self.drop(x + self.positions(start, x.size(1), x.device))


def transformer_encoder(
    d_model: int, n_heads: int, d_ff: int, n_layers: int, dropout: float, norm_first: bool
) -> nn.TransformerEncoder:
    """A stack of torch encoder layers (batch first, ReLU feed-forward as in Vaswani 2017)."""
    layer = nn.TransformerEncoderLayer(
        d_model, n_heads, d_ff, dropout, batch_first=True, norm_first=norm_first
    )
    final_norm = nn.LayerNorm(d_model) if norm_first else None
    return nn.TransformerEncoder(layer, n_layers, norm=final_norm, enable_nested_tensor=False)


KV = tuple[torch.Tensor, torch.Tensor]


class DecoderLayer(nn.Module):
    """Causal self-attention, cross-attention over the encoder, feed-forward; residual + LayerNorm."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float, norm_first: bool) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, n_heads=n_heads, d_out=d_model, dropout=dropout)
        self.cross_attn = MultiHeadAttention(d_model, n_heads=n_heads, d_out=d_model, dropout=dropout)
        self.ff = nn.Sequential(
            nn.Linear(d_model, d_ff), nn.ReLU(), nn.Dropout(dropout), nn.Linear(d_ff, d_model)
        )
        self.norms = nn.ModuleList(nn.LayerNorm(d_model) for _ in range(3))
        self.drop = nn.Dropout(dropout)
        self.norm_first = norm_first

    def _pre(self, i: int, x: torch.Tensor) -> torch.Tensor:
        """The input of sub-layer i: normalised first (pre-LN) or as it is (post-LN)."""
        return self.norms[i](x) if self.norm_first else x

    def _post(self, i: int, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Residual connection around sub-layer i (normalised after it in post-LN)."""
        x = x + self.drop(y)
        return x if self.norm_first else self.norms[i](x)

    def memory_kv(self, memory: torch.Tensor) -> KV:
        """Cross-attention keys/values of the encoder output, computed once per sequence."""
        return self.cross_attn.project_kv(memory)

    def forward(
        self, x: torch.Tensor, memory_kv: KV, memory_mask: torch.Tensor, past: KV | None = None
    ) -> tuple[torch.Tensor, KV]:
        """New positions x (B, Tn, d) after the cached self-attention keys/values `past` of earlier ones.

        Without `past`, all positions at once with a causal mask; with it, Tn must be 1.
        Returns the outputs and the self-attention keys/values of all positions so far.
        """
        h = self._pre(0, x)
        k, v = self.self_attn.project_kv(h)
        mask = None
        if past is None:
            mask = causal_mask(x.size(1), x.device)
        else:
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
        x = self._post(0, x, self.self_attn.attend(h, k, v, attn_mask=mask))
        x = self._post(1, x, self.cross_attn.attend(self._pre(1, x), *memory_kv, key_mask=memory_mask))
        return self._post(2, x, self.ff(self._pre(2, x))), (k, v)


class TransformerDecoder(nn.Module):
    """A stack of `DecoderLayer`s with a full (teacher-forced) and an incremental mode."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, n_layers: int, dropout: float, norm_first: bool) -> None:
        super().__init__()
        self.layers = nn.ModuleList(
            DecoderLayer(d_model, n_heads, d_ff, dropout, norm_first) for _ in range(n_layers)
        )
        self.final_norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()

    def memory_kv(self, memory: torch.Tensor) -> list[KV]:
        """Every layer's cross-attention keys/values of the encoder output."""
        return [layer.memory_kv(memory) for layer in self.layers]

    def forward(self, x: torch.Tensor, memory: torch.Tensor, memory_mask: torch.Tensor) -> torch.Tensor:
        """All positions at once with a causal mask: (B, W, d) -> (B, W, d)."""
        for layer, kv in zip(self.layers, self.memory_kv(memory)):
            x, _ = layer(x, kv, memory_mask)
        return self.final_norm(x)

    def step(
        self, x: torch.Tensor, cache: list[KV] | None, memory_kv: list[KV], memory_mask: torch.Tensor
    ) -> tuple[torch.Tensor, list[KV]]:
        """One new position x (N, 1, d); `cache[l]` holds layer l's self-attention keys/values so far."""
        new_cache = []
        for i, layer in enumerate(self.layers):
            x, kv = layer(x, memory_kv[i], memory_mask, None if cache is None else cache[i])
            new_cache.append(kv)
        return self.final_norm(x), new_cache
