"""R-Drop (Liang et al. 2021): two dropout passes, their losses, and a symmetric KL between them.

    loss = (L(p1, y) + L(p2, y)) / 2 + alpha * (KL(p1 || p2) + KL(p2 || p1)) / 2

where p1, p2 are the word-label distributions of two forward passes of the
same batch with different dropout masks, L the trainer's word loss, and the KL
is averaged over the words that are learnt (label != -100). The two passes are
two calls of the model (on 2 CPU cores this measured slightly faster than one
call on the batch stacked twice); any model works, the trainer only passes `alpha`.
"""
from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F

from punctkit.data.streams import IGNORE

Batch = dict[str, torch.Tensor]
LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def symmetric_kl(logits1: torch.Tensor, logits2: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """(KL(p1||p2) + KL(p2||p1)) / 2 averaged over positions where `keep` (B, W) is True."""
    lp1 = F.log_softmax(logits1[keep].float(), dim=-1)
    lp2 = F.log_softmax(logits2[keep].float(), dim=-1)
    if lp1.numel() == 0:
        return logits1.sum() * 0
    kl = (lp1.exp() * (lp1 - lp2)).sum(-1) + (lp2.exp() * (lp2 - lp1)).sum(-1)
    return kl.mean() / 2


def rdrop_loss(model: torch.nn.Module, batch: Batch, loss_fn: LossFn, alpha: float
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """(R-Drop loss, logits of the first pass) for one training batch (model in train mode)."""
    l1, l2 = model(batch), model(batch)
    labels = batch["labels"]
    loss = (loss_fn(l1, labels) + loss_fn(l2, labels)) / 2
    if alpha:
        loss = loss + alpha * symmetric_kl(l1, l2, labels != IGNORE)
    return loss, l1
