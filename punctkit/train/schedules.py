"""Learning-rate schedules: constant, Noam warm-up, newbob (halve when dev F1 stops improving).

A schedule sets the learning rate of every parameter group; the trainer calls
`on_step()` after each optimizer step and `on_epoch(score)` after validation.
"""
from __future__ import annotations

from typing import Any

from torch.optim import Optimizer

from punctkit.files import PunctkitError


class Schedule:
    """Constant learning rate `lr`."""

    def __init__(self, optimizer: Optimizer, lr: float):
        self.optimizer = optimizer
        self.base_lr = lr
        self.step_num = 0
        self.lr = lr
        self._apply()

    def _apply(self) -> None:
        for g in self.optimizer.param_groups:
            g["lr"] = self.lr * g.get("lr_scale", 1.0)

    def on_step(self) -> None:
        """Called after every optimizer step."""
        self.step_num += 1

    def on_epoch(self, score: float | None) -> None:
        """Called after each epoch's validation with the dev score (None without a dev set)."""

    def state_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._apply()


class Noam(Schedule):
    """Linear warm-up to `lr` over `warmup` steps, then decay with 1/sqrt(step) (Vaswani 2017)."""

    def __init__(self, optimizer: Optimizer, lr: float, warmup: int = 4000):
        self.warmup = max(1, int(warmup))
        super().__init__(optimizer, lr)
        self.lr = self._at(1)
        self._apply()

    def _at(self, step: int) -> float:
        return self.base_lr * min(step / self.warmup, (self.warmup / step) ** 0.5)

    def on_step(self) -> None:
        super().on_step()
        self.lr = self._at(self.step_num + 1)
        self._apply()


class Newbob(Schedule):
    """Multiply the rate by `factor` whenever the dev score improves by no more than `threshold`."""

    def __init__(self, optimizer: Optimizer, lr: float, factor: float = 0.5, threshold: float = 0.0,
                 min_lr: float = 1e-6):
        self.factor, self.threshold, self.min_lr = factor, threshold, min_lr
        self.best: float | None = None
        super().__init__(optimizer, lr)

    def on_epoch(self, score: float | None) -> None:
        if score is None:
            return
        if self.best is not None and score - self.best <= self.threshold:
            self.lr = max(self.min_lr, self.lr * self.factor)
            self._apply()
        if self.best is None or score > self.best:
            self.best = score


SCHEDULES = {"constant": Schedule, "noam": Noam, "newbob": Newbob}


def make_schedule(name: str, optimizer: Optimizer, lr: float, **options: Any) -> Schedule:
    """Build a schedule by name with its options (`warmup`; `factor`, `threshold`, `min_lr`)."""
    if name not in SCHEDULES:
        raise PunctkitError(f"unknown schedule '{name}' (known: {', '.join(SCHEDULES)})")
    import inspect

    params = inspect.signature(SCHEDULES[name].__init__).parameters
    return SCHEDULES[name](optimizer, lr, **{k: v for k, v in options.items() if k in params})
