"""Per-word fusion of a lexical and an acoustic vector (Klejch 2017, "pooling" modes).

`concat` keeps both (output size dim_l + dim_a); the other modes need equal sizes:
`add`, `max` (elementwise), `average`, and `stochastic` mask pooling: at training
R = P*X_L + (1-P)*X_A with P ~ Bernoulli(p) drawn per element, at test its
expectation R = p*X_L + (1-p)*X_A, so the model cannot rely on either modality alone.
"""
from __future__ import annotations

import torch
from torch import nn

from punctkit.files import PunctkitError

MODES = ("concat", "add", "max", "average", "stochastic")


class Fusion(nn.Module):
    """Combine X_L (..., dim_l) and X_A (..., dim_a) by `mode`; `p` is the lexical keep probability."""

    def __init__(self, mode: str, dim_l: int, dim_a: int, p: float = 0.5) -> None:
        super().__init__()
        if mode not in MODES:
            raise PunctkitError(f"unknown fusion mode '{mode}' (known: {', '.join(MODES)})")
        if mode != "concat" and dim_l != dim_a:
            raise PunctkitError(f"fusion '{mode}' needs equal lexical and acoustic sizes (got {dim_l}, {dim_a})")
        if not 0.0 <= p <= 1.0:
            raise PunctkitError(f"stochastic pooling probability must be in [0, 1], got {p}")
        self.mode, self.p = mode, p
        self.out_dim = dim_l + dim_a if mode == "concat" else dim_l

    def forward(self, x_l: torch.Tensor, x_a: torch.Tensor) -> torch.Tensor:
        if self.mode == "concat":
            return torch.cat([x_l, x_a], dim=-1)
        if self.mode == "add":
            return x_l + x_a
        if self.mode == "max":
            return torch.maximum(x_l, x_a)
        if self.mode == "average":
            return 0.5 * (x_l + x_a)
        if self.training:
            keep = torch.bernoulli(torch.full_like(x_l, self.p))
            return keep * x_l + (1.0 - keep) * x_a
        return self.p * x_l + (1.0 - self.p) * x_a
