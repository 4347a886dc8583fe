"""Scaled dot-product multi-head attention (Vaswani 2017), usable between any two sequences.

Query and key/value may have different sizes (DRNN-LWMA attends from a d-dim GRU
state over 2d-dim BiGRU outputs), the per-head size is free (Kim 2019 gives every
head the full size d), and the output projection is optional (Kim 2019 concatenates
the raw head outputs). Subclasses can change how per-head scores are formed by
overriding `head_scores` (FF2's interaction attention mixes scores across heads).
"""
from __future__ import annotations

import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    """Multi-head attention: `n_heads` heads of size `d_head` from `d_query` queries over `d_key` keys.

    Args:
        d_query: size of the query vectors.
        d_key: size of the key (and value) vectors; defaults to `d_query`.
        n_heads: number of heads.
        d_head: size of each head; defaults to `d_query // n_heads`.
        d_out: size of the output projection over the concatenated heads; None keeps
            the concatenation itself (size `n_heads * d_head`).
        dropout: dropout on the attention weights.
    """

    def __init__(
        self,
        d_query: int,
        d_key: int | None = None,
        n_heads: int = 1,
        d_head: int | None = None,
        d_out: int | None = None,
        dropout: float = 0.0,
        bias: bool = True,
    ) -> None:
        super().__init__()
        d_key = d_key or d_query
        if d_head is None:
            if d_query % n_heads:
                raise ValueError(f"d_query {d_query} is not divisible by n_heads {n_heads}")
            d_head = d_query // n_heads
        self.n_heads, self.d_head = n_heads, d_head
        inner = n_heads * d_head
        self.q_proj = nn.Linear(d_query, inner, bias=bias)
        self.k_proj = nn.Linear(d_key, inner, bias=bias)
        self.v_proj = nn.Linear(d_key, inner, bias=bias)
        self.out_proj = nn.Linear(inner, d_out, bias=bias) if d_out is not None else None
        self.dropout = nn.Dropout(dropout)
        self.out_dim = d_out if d_out is not None else inner

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        """(B, T, H*Dh) -> (B, H, T, Dh)."""
        b, t, _ = x.shape
        return x.view(b, t, self.n_heads, self.d_head).transpose(1, 2)

    def head_scores(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        """Scaled scores (B, H, Tq, Tk) from per-head queries and keys (B, H, T, Dh)."""
        return q @ k.transpose(-1, -2) / math.sqrt(self.d_head)

    def project_kv(self, key: torch.Tensor, value: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-head keys and values (B, H, Tk, Dh): computed once, they can be cached and reused."""
        return self._split(self.k_proj(key)), self._split(self.v_proj(key if value is None else value))

    def attend(
        self,
        query: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        key_mask: torch.Tensor | None = None,
        attn_mask: torch.Tensor | None = None,
        need_weights: bool = False,
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """Attend from `query` (B, Tq, Dq) over projected keys/values from `project_kv`."""
        q = self._split(self.q_proj(query))
        scores = self.head_scores(q, k)
        allowed = None
        if key_mask is not None:
            allowed = key_mask[:, None, None, :]
        if attn_mask is not None:
            am = attn_mask if attn_mask.dim() == 2 else attn_mask[:, None]
            allowed = am if allowed is None else allowed & am
        if allowed is not None:
            # a large negative instead of -inf: a query with no allowed key (a padded
            # row) gets uniform weights rather than NaN, and its output is ignored anyway
            scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
        weights = torch.softmax(scores, dim=-1)
        out = self.dropout(weights) @ v  # (B, H, Tq, Dh)
        out = out.transpose(1, 2).reshape(query.size(0), query.size(1), -1)
        if self.out_proj is not None:
            out = self.out_proj(out)
        return (out, weights) if need_weights else out

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor | None = None,
        key_mask: torch.Tensor | None = None,
        attn_mask: torch.Tensor | None = None,
        need_weights: bool = False,
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """Attend from `query` (B, Tq, Dq) over `key`/`value` (B, Tk, Dk).

        `key_mask` (B, Tk) is True on real keys; `attn_mask` (Tq, Tk) or (B, Tq, Tk) is
        True where attending is allowed (e.g. causal). Returns (B, Tq, out_dim), and the
        weights (B, H, Tq, Tk) too when `need_weights`.
        """
        k, v = self.project_kv(key, value)
        return self.attend(query, k, v, key_mask, attn_mask, need_weights)


def causal_mask(n: int, device: torch.device | None = None) -> torch.Tensor:
    """(n, n) bool, True where position i may attend to position j (j <= i)."""
    return torch.ones(n, n, dtype=torch.bool, device=device).tril()
