"""`punctkit train` as a whole: train/ trains, decode/ validates (the one module that joins them,
so that neither imports the other)."""
from __future__ import annotations

from typing import Any

from punctkit.decode.decoder import validation
from punctkit.train.trainer import TrainState
from punctkit.train.trainer import train as train_model


def train(*args: Any, **kwargs: Any) -> TrainState:
    """`punctkit.train.trainer.train` (same arguments) validating on the dev set with
    `punctkit decode`'s search, under the training config's resolved `decode:` section."""
    return train_model(*args, validation=validation, **kwargs)
