"""`punctkit train` as a whole: train/ trains, decode/ validates, package/ reads a packed model to start from (the
one module that joins them, so that train/ imports neither: it gets decoding's validation and a `train.init`
package's `PackageStart` as arguments, the way a spawned DDP process gets them too)."""
from __future__ import annotations

import inspect
from typing import Any

from punctkit.decode.decoder import validation
from punctkit.package.to_torch import package_start
from punctkit.train.experiment import check_data_dirs
from punctkit.train.trainer import TrainState, run_config
from punctkit.train.trainer import train as train_model
from punctkit.train.warm_start import init_package


def train(*args: Any, **kwargs: Any) -> TrainState:
    """`punctkit.train.trainer.train` (same arguments) validating on the dev set with
    `punctkit decode`'s search, under the training config's resolved `decode:` section, and starting
    from the packed model the config's `train.init` names, when it names one (package/to_torch.py
    `package_start`: checked against the data, `--inputs` and `--exp` before the run)."""
    given = inspect.signature(train_model).bind(*args, **kwargs)
    given.apply_defaults()
    a = given.arguments
    conf = run_config(a["config"], a["overrides"])  # a bad config fails first, as train_model's own check
    start = None
    if init_package(conf) is not None:  # a packed model to start from: checked before the run (else as ever)
        check_data_dirs(a["train_dir"], a["valid_dir"])  # a missing --train-dir fails first
        start = package_start(conf, a["train_dir"], a["inputs_dir"], a["exp_dir"])
    return train_model(*args, validation=validation, start=start, **kwargs)
