"""Interaction multi-head attention (FF2 2022, §3.1) and a Transformer layer using it.

Standard multi-head attention computes per-head scores J^(k) = Q^(k) K^(k)ᵀ and
attends with softmax(J^(k) / √(d/H)) V^(k). Interaction attention first lets
the heads talk: the h score maps are mixed by a learned h×h matrix P_λ,

    Ĵ^(k) = Σ_g P_λ[k, g] J^(g) + J^(k),

then softmax(Ĵ^(k) / √(d/H)) V^(k) as usual. With P_λ = 0 it *is* standard
multi-head attention (the projections are laid out like `nn.MultiheadAttention`:
one packed `in_proj` (3d × d) and an `out_proj`, so weights can be copied over).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


def mix_heads(scores: torch.Tensor, mix: torch.Tensor) -> torch.Tensor:
    """Ĵ = P_λ J + J: score maps (B, H, T, T) mixed across heads by the (H, H) matrix `mix`."""
    return torch.einsum("kg,bgij->bkij", mix, scores) + scores


class InteractionAttention(nn.Module):
    """Self-attention whose head score maps are mixed by a learned h×h matrix.

    `interaction=False` gives plain multi-head attention (no P_λ parameter);
    it then runs through `scaled_dot_product_attention` (fused kernels).
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0,
                 interaction: bool = True, bias: bool = True) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model {d_model} is not divisible by n_heads {n_heads}")
        self.d_model, self.n_heads, self.d_head = d_model, n_heads, d_model // n_heads
        self.dropout = dropout
        self.in_proj = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)
        self.interaction = interaction
        if interaction:
            # paper: P_λ initialised with standard deviation 0.1/√d_emb
            self.mix = nn.Parameter(torch.randn(n_heads, n_heads) * (0.1 / math.sqrt(d_model)))
        else:
            self.register_parameter("mix", None)
        nn.init.xavier_uniform_(self.in_proj.weight)
        if bias:
            nn.init.zeros_(self.in_proj.bias)
            nn.init.zeros_(self.out_proj.bias)

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        """(B, T, d) -> (B, H, T, d/H)."""
        b, t, _ = x.shape
        return x.view(b, t, self.n_heads, self.d_head).transpose(1, 2)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """x (B, T, d), mask (B, T) bool True on real tokens -> (B, T, d)."""
        b, t, _ = x.shape
        q, k, v = (self._heads(z) for z in self.in_proj(x).chunk(3, dim=-1))
        drop = self.dropout if self.training else 0.0
        if self.mix is None:
            attn_mask = None if mask is None else mask[:, None, None, :]
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=drop)
        else:
            scores = q @ k.transpose(-1, -2)                      # J: (B, H, T, T)
            scores = mix_heads(scores, self.mix)
            scores = scores / math.sqrt(self.d_head)
            if mask is not None:
                scores = scores.masked_fill(~mask[:, None, None, :], float("-inf"))
            probs = F.dropout(scores.softmax(dim=-1), p=drop)
            out = probs @ v
        return self.out_proj(out.transpose(1, 2).reshape(b, t, self.d_model))


class InteractionEncoderLayer(nn.Module):
    """A pre-norm Transformer encoder layer with (interaction) self-attention.

    Pre-norm (x + Attn(LN(x)), then x + FFN(LN(x))) rather than the paper's
    post-norm: the TNP stream is trained from scratch next to a pre-trained
    encoder, and pre-norm stacks train without warm-up tuning. A stack of these
    needs a final LayerNorm (see `InteractionEncoder`).
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1,
                 interaction: bool = True, attention_dropout: float | None = None) -> None:
        super().__init__()
        self.attn = InteractionAttention(d_model, n_heads, dropout if attention_dropout is None else attention_dropout,
                                         interaction)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.ff = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Dropout(dropout),
                                nn.Linear(d_ff, d_model))
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """x (B, T, d), mask (B, T) True on real tokens."""
        x = x + self.drop(self.attn(self.norm1(x), mask))
        return x + self.drop(self.ff(self.norm2(x)))


class InteractionEncoder(nn.Module):
    """N `InteractionEncoderLayer`s and the final LayerNorm of a pre-norm stack."""

    def __init__(self, n_layers: int, d_model: int, n_heads: int, d_ff: int,
                 dropout: float = 0.1, interaction: bool = True, attention_dropout: float | None = None) -> None:
        super().__init__()
        self.layers = nn.ModuleList(InteractionEncoderLayer(d_model, n_heads, d_ff, dropout, interaction,
                                                            attention_dropout) for _ in range(n_layers))
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x, mask)
        return self.norm(x)
