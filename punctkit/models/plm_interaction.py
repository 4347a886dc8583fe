"""Interaction attention inside a pre-trained encoder: FF2's Interaction Transformer Encoder (ITE).

FF2 (2022, §3.1) changes the self-attention of the pre-trained stream as of its small one: each
layer's h score maps J^(k) = Q^(k) K^(k)ᵀ are mixed by a learned h×h matrix before the softmax,

    Ĵ = P_λ J + J,    Attn^(k) = softmax(Ĵ^(k) · scaling + mask) V^(k),

P_λ initialised with standard deviation 0.1/√d_emb, so the encoder starts close to its pre-trained self.
`add_interaction(encoder)` gives every self-attention module of a Hugging Face encoder its own P_λ
(`interaction_mix`, saved with the model's weights) and switches the encoder to the attention function
registered here, through transformers' attention interface (`AttentionInterface`): the encoder's own
projections, dropout and masks are kept. Encoders whose attention does not go through that interface
(`_supports_attention_backend` false, e.g. MPNet's relative-position attention) get a one-line error.
"""
from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from punctkit.files import PunctkitError
from punctkit.nn.interaction import mix_heads

NAME = "punctkit_interaction"
MIX = "interaction_mix"


def interaction_attention(module: nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                          attention_mask: torch.Tensor | None, scaling: float | None = None, dropout: float = 0.0,
                          **_: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """Transformers' attention-function signature. query/key/value (B, H, T, d_head); the mask is
    additive (B, 1, T|1, T) (the eager mask, registered with this name). -> ((B, T, H, d_head), probs)."""
    scaling = query.size(-1) ** -0.5 if scaling is None else scaling
    scores = query @ key.transpose(2, 3)                               # J: (B, H, T, T)
    mix = getattr(module, MIX, None)
    if mix is not None:
        scores = mix_heads(scores, mix)                                 # Ĵ = P_λ J + J
    scores = scores * scaling
    if attention_mask is not None:
        scores = scores + attention_mask                                 # additive: eager_mask, registered below
    probs = nn.functional.dropout(scores.softmax(dim=-1), p=dropout, training=module.training)
    return (probs @ value).transpose(1, 2).contiguous(), probs


def _register() -> None:
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    AttentionInterface.register(NAME, interaction_attention)
    AttentionMaskInterface.register(NAME, eager_mask)


def add_interaction(encoder: nn.Module, where: str = "plm") -> int:
    """Give each self-attention module of `encoder` a P_λ and attend through `interaction_attention`;
    returns how many modules got one. One-line error for an encoder that cannot take it."""
    if not getattr(type(encoder), "_supports_attention_backend", False):
        raise PunctkitError(f"{where}: plm_interaction needs an encoder whose attention goes through "
                            f"transformers' attention interface (BERT, MiniLM, ELECTRA, RoBERTa); "
                            f"this {encoder.config.model_type} encoder's does not")
    d_emb = encoder.config.hidden_size
    n = 0
    for m in encoder.modules():
        heads = getattr(m, "num_attention_heads", None)
        if heads and all(hasattr(m, a) for a in ("query", "key", "value")):
            m.register_parameter(MIX, nn.Parameter(torch.randn(heads, heads) * (0.1 / math.sqrt(d_emb))))
            n += 1
    if not n:
        raise PunctkitError(f"{where}: plm_interaction found no self-attention module (query/key/value) "
                            f"in this {encoder.config.model_type} encoder")
    _register()
    encoder.set_attn_implementation(NAME)
    return n
