"""The `train:` section of a config, typed, and its rules: the range of every number, the
shape of `betas` and `class_weights` (and their count against the data's labels), and
`precision` resolved for a device.

Every rule is a one-line `PunctkitError` naming the option, raised when the options are
made (`TrainOptions.from_section`), so that `punctkit train` refuses a bad config before
it takes the experiment's lock or writes anything.
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import Any, Callable

import torch

from punctkit.config import DEFAULTS
from punctkit.data.labels import LabelSet
from punctkit.data.streams import TimeDelay
from punctkit.files import PunctkitError
from punctkit.train.boundary_input import BoundaryDropout
from punctkit.train.losses import class_weights


@dataclass
class TrainOptions:
    """The `train:` section of a config, typed (its defaults and comments: punctkit/config.py)."""

    optimizer: str
    lr: float
    weight_decay: float
    betas: list[float]
    schedule: str
    warmup: int
    newbob_factor: float
    newbob_threshold: float
    min_lr: float
    batch_size: int
    window: int
    epochs: int
    iters_per_epoch: int | None
    max_minutes: float | None
    patience: int | None
    seed: int
    clip: float
    label_smoothing: float
    loss: str
    focal_gamma: float
    class_weights: str | list[float] | None
    n_average: int
    keep_checkpoints: int | None
    max_tokens: int | None
    threads: int
    rdrop: float
    precision: str
    distill: dict[str, Any]
    augment: dict[str, Any]
    init: Any
    lookahead: dict[str, Any] | None
    boundary_dropout: dict[str, Any]

    def __post_init__(self) -> None:
        check_numbers(self)
        self.time_delay = TimeDelay.from_option(self.lookahead)  # checked before any training
        self.boundary_drop = BoundaryDropout.from_option(self.boundary_dropout)

    @classmethod
    def from_section(cls, section: dict[str, Any]) -> "TrainOptions":
        """The options of a (possibly partial) `train:` section, the rest from the defaults."""
        return cls(**{**DEFAULTS["train"], **section})


# train option -> (whole number?, lowest value, lowest allowed?, highest value or None, may be null?)
NUMBER_RULES: dict[str, tuple[bool, float, bool, float | None, bool]] = {
    "lr": (False, 0, True, None, False), "weight_decay": (False, 0, True, None, False),
    "warmup": (True, 0, True, None, False), "newbob_factor": (False, 0, False, 1, False),
    "newbob_threshold": (False, float("-inf"), False, None, False), "min_lr": (False, 0, True, None, False),
    "batch_size": (True, 1, True, None, False), "window": (True, 1, True, None, False),
    "epochs": (True, 1, True, None, False), "iters_per_epoch": (True, 1, True, None, True),
    "max_minutes": (False, 0, False, None, True),
    "patience": (True, 1, True, None, True), "seed": (True, 0, True, None, False),
    "clip": (False, 0, True, None, False), "label_smoothing": (False, 0, True, 1, False),
    "focal_gamma": (False, 0, True, None, False), "n_average": (True, 1, True, None, False),
    "keep_checkpoints": (True, 1, True, None, True),
    "max_tokens": (True, 1, True, None, True), "threads": (True, 0, True, None, False),
    "rdrop": (False, 0, True, None, False),
}


def check_numbers(opts: TrainOptions) -> None:
    """A one-line error for a numeric `train:` option of the wrong type or out of range."""
    for name, (whole, low, low_ok, high, nullable) in NUMBER_RULES.items():
        v = getattr(opts, name)
        if v is None and nullable:
            continue
        kind = "a whole number" if whole else "a finite number"
        ok_type = isinstance(v, int) if whole else isinstance(v, (int, float)) and math.isfinite(v)
        if isinstance(v, bool) or not ok_type:
            hint = ""
            if isinstance(v, str):
                with contextlib.suppress(ValueError):
                    if math.isfinite(float(v)):
                        hint = f" (YAML reads {v} as text: write it with a point, e.g. {float(v):.1e})"
            raise PunctkitError(f"train.{name} must be {kind}{' or null' if nullable else ''}, got {v!r}{hint}")
        if v < low or (v == low and not low_ok) or (high is not None and v > high):
            span = f"{'>=' if low_ok else '>'} {low:g}" + (f" and <= {high:g}" if high is not None else "")
            raise PunctkitError(f"train.{name} must be {span}, got {v!r}")
    betas = opts.betas
    if not (isinstance(betas, (list, tuple)) and len(betas) == 2
            and all(isinstance(b, (int, float)) and not isinstance(b, bool) and 0 <= b < 1 for b in betas)):
        raise PunctkitError(f"train.betas must be two numbers in [0, 1), got {betas!r}")
    cw = opts.class_weights
    if not (cw is None or cw == "auto" or (isinstance(cw, list) and all(
            isinstance(w, (int, float)) and not isinstance(w, bool) and math.isfinite(w) and w >= 0 for w in cw))):
        raise PunctkitError(f"train.class_weights must be null, auto or a list of numbers >= 0, got {cw!r}")


def loss_weights(opts: TrainOptions, inventory: LabelSet, label_counts: list[int] | None) -> torch.Tensor | None:
    """Class weights of the loss: none, `auto` (from the training labels' counts) or the configured list."""
    if opts.class_weights == "auto":
        return class_weights(label_counts or [1] * len(inventory))
    if opts.class_weights is None:
        return None
    if len(opts.class_weights) != len(inventory):
        raise PunctkitError(f"train.class_weights has {len(opts.class_weights)} values for "
                            f"{len(inventory)} labels ({', '.join(inventory.labels)})")
    return torch.tensor(opts.class_weights, dtype=torch.float)


def native_bf16(device: torch.device) -> bool:
    """Whether `device` computes bfloat16 natively (a CUDA GPU that supports it; a CPU with
    AVX-512 BF16 or AMX). Elsewhere torch emulates it, many times slower than fp32."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    if device.type == "cpu":
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    return False


def resolve_precision(precision: str, device: torch.device, log: Callable[[str], None] = print) -> str:
    """`train.precision` for this device: `auto` becomes bf16 or fp32 by `native_bf16`;
    an explicit bf16 without native support stays, with a warning."""
    native = native_bf16(device)
    if precision == "auto":
        chosen = "bf16" if native else "fp32"
        log(f"precision auto: {chosen} on {device} ({'native' if native else 'no native'} bfloat16)")
        return chosen
    if precision == "bf16" and not native:
        log(f"warning: train.precision bf16 on {device}, which has no native bfloat16: torch emulates it, "
            f"several times slower than fp32 (set train.precision to auto or fp32)")
    return precision
