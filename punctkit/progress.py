"""Progress bars for long jobs: tqdm on stderr, refreshed every second on a terminal and
every 30 seconds when stderr is a log file (so a job's log holds a readable trail, not
thousands of carriage-return updates)."""
from __future__ import annotations

import sys
from typing import Any, Iterable

from tqdm import tqdm


def progress(iterable: Iterable | None = None, show: bool = True, **kw: Any) -> tqdm:
    """A tqdm bar over `iterable` (or a manual one with `total=`); `show=False` disables it, as does
    a closed standard error (the work goes on, unseen)."""
    err = sys.stderr
    if err is None or getattr(err, "closed", False):
        show = False
    kw.setdefault("mininterval", 1.0 if show and err.isatty() else 30.0)
    return tqdm(iterable, file=err, disable=not show, **kw)
