"""Distillation (Hinton et al. 2015): train on a teacher's per-word label distributions.

    loss = weight * T^2 * KL(teacher_T || student_T) + (1 - weight) * L(student, hard labels)

where student_T = softmax(logits / T), teacher_T the teacher's probabilities
re-tempered the same way (p^(1/T), renormalised: the probs file holds
probabilities, not logits; T = 1 leaves them as they are), L the trainer's word
loss, and the KL is averaged over the words that have a teacher row.

The teacher's distributions are a `probs` file (punctkit/data/probs.py) written by
`punctkit decode --probs` over the training data dir itself, so its utterances are
keyed as that dir's `text`: `train.distill: {probs: PATH, weight: 0.7, temperature: 1.0}`.
They travel with the training windows as `soft` (words x labels; rows of IGNORE
where a window has no word or no teacher row, e.g. a word inserted by augmentation).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from punctkit.data.probs import check_inventory, read_probs
from punctkit.data.streams import IGNORE, Stream
from punctkit.files import PunctkitError, finite_number, iter_lines, require_file, where


@dataclass(frozen=True)
class DistillOptions:
    """The `train.distill:` section: where the soft labels are and how much they count."""

    probs: str
    weight: float = 0.7
    temperature: float = 1.0

    @classmethod
    def from_section(cls, section: dict[str, Any] | None) -> "DistillOptions | None":
        """The options of a `train.distill:` section; None when it names no probs file (off)."""
        section = dict(section or {})
        known = ("probs", "weight", "temperature")
        bad = [k for k in section if k not in known]
        if bad:
            raise PunctkitError(f"train.distill: unknown option(s) {', '.join(bad)} (known: {', '.join(known)})")
        if not section.get("probs"):
            return None
        opts = cls(str(section["probs"]), finite_number(section.get("weight", 0.7), "train.distill", "weight"),
                   finite_number(section.get("temperature", 1.0), "train.distill", "temperature"))
        if not 0.0 <= opts.weight <= 1.0:
            raise PunctkitError(f"train.distill.weight must lie in [0, 1], got {opts.weight}")
        if opts.temperature <= 0:
            raise PunctkitError(f"train.distill.temperature must be positive, got {opts.temperature}")
        return opts


def line_of(path: Path, key: str) -> int | None:
    """The line number of `key`'s line in a keyed file (for error messages only)."""
    for i, line in iter_lines(path):
        if line.split(maxsplit=1)[:1] == [key]:
            return i
    return None


def soft_labels(probs_path: str | Path, streams: list[Stream], n_labels: int, data_dir: str | Path,
                inventory: str | None = None) -> list[np.ndarray]:
    """Per stream, its words' teacher distributions (words x n_labels, float32), from a probs
    file keyed as the data dir `data_dir`'s utterances; a missing utterance or a row count
    that differs from the utterance's words is a one-line error naming the probs file. An
    `inventory` file beside it (a decode dir's) must name `inventory`, the data's labels."""
    path = require_file(probs_path, "probs file (train.distill.probs)")
    if inventory:
        check_inventory(path, inventory, "the training data")
    table = read_probs(path, n_labels)
    out = []
    for s in streams:
        rows = []
        for utt, a, b in s.utt_spans():
            if utt not in table:
                raise PunctkitError(f"{path}: no line for utterance '{utt}' of {Path(data_dir) / 'text'}: "
                                    f"decode the teacher over this training data dir with --probs")
            p = table[utt]
            if len(p) != b - a:
                raise PunctkitError(f"{where(path, line_of(path, utt), utt)}: {len(p)} words' probabilities, "
                                    f"but {Path(data_dir) / 'text'} has {b - a} words for it: decode the "
                                    f"teacher over this training data dir")
            rows.append(p)
        out.append(np.concatenate(rows).astype(np.float32))
    return out


def distill_kl(logits: torch.Tensor, soft: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """T^2 * KL(teacher_T || student_T) averaged over the words whose `soft` row is not IGNORE
    (`logits`, `soft`: B x W x C)."""
    keep = soft[..., 0] != IGNORE
    if not bool(keep.any()):
        return logits.sum() * 0
    t = soft[keep].float().clamp_min(0)
    if temperature != 1.0:
        t = t ** (1.0 / temperature)
    t = t / t.sum(-1, keepdim=True).clamp_min(1e-12)
    log_s = F.log_softmax(logits[keep].float() / temperature, dim=-1)
    kl = F.kl_div(log_s, t, reduction="none").sum(-1)  # xlogy: teacher zeros add nothing
    return kl.mean() * temperature ** 2


def distill_loss(hard_loss: torch.Tensor, logits: torch.Tensor, soft: torch.Tensor,
                 opts: DistillOptions) -> torch.Tensor:
    """weight * the KL term + (1 - weight) * the hard-label loss (see the module docstring)."""
    if opts.weight == 0:
        return hard_loss
    return opts.weight * distill_kl(logits, soft, opts.temperature) + (1 - opts.weight) * hard_loss
