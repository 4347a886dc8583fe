"""Word-level losses: cross-entropy (label smoothing, class weights) and focal loss."""
from __future__ import annotations

from typing import Callable, Sequence

import torch
import torch.nn.functional as F

from punctkit.data.streams import IGNORE
from punctkit.files import PunctkitError

LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def class_weights(counts: Sequence[int], power: float = 0.5) -> torch.Tensor:
    """Weights proportional to (1/frequency)^power, normalised so the mean weight over the data is 1."""
    c = torch.tensor([max(int(x), 1) for x in counts], dtype=torch.float)
    w = (c.sum() / c) ** power
    return w * c.sum() / (w * c).sum()


def focal_loss(logits: torch.Tensor, labels: torch.Tensor, gamma: float = 2.0,
               weight: torch.Tensor | None = None) -> torch.Tensor:
    """Focal loss (Lin et al. 2017) averaged over the words whose label is not IGNORE."""
    keep = labels != IGNORE
    lp = F.log_softmax(logits[keep].float(), dim=-1)
    y = labels[keep]
    lpt = lp.gather(1, y[:, None]).squeeze(1)
    loss = -((1 - lpt.exp()) ** gamma) * lpt
    if weight is not None:
        loss = loss * weight.to(loss.device)[y]
    return loss.mean() if loss.numel() else logits.sum() * 0


def make_loss(kind: str = "ce", label_smoothing: float = 0.0, weight: torch.Tensor | None = None,
              gamma: float = 2.0) -> LossFn:
    """`fn(logits (B, W, C), labels (B, W)) -> scalar`, ignoring labels equal to IGNORE."""
    if kind == "ce":
        def ce(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
            w = weight.to(logits.device) if weight is not None else None
            return F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), labels.reshape(-1), weight=w,
                                   ignore_index=IGNORE, label_smoothing=label_smoothing)
        return ce
    if kind == "focal":
        return lambda logits, labels: focal_loss(logits, labels, gamma, weight)
    raise PunctkitError(f"unknown loss '{kind}' (known: ce, focal)")
