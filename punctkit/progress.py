"""Progress bars for long jobs: tqdm on stderr, refreshed every second on a terminal and
every 30 seconds when stderr is a log file (so a job's log holds a readable trail, not
thousands of carriage-return updates)."""
from __future__ import annotations

import sys
from typing import Any, Iterable

from tqdm import tqdm


def progress(iterable: Iterable | None = None, show: bool = True, **kw: Any) -> tqdm:
    """A tqdm bar over `iterable` (or a manual one with `total=`); `show=False` disables it."""
    kw.setdefault("mininterval", 1.0 if sys.stderr.isatty() else 30.0)
    return tqdm(iterable, file=sys.stderr, disable=not show, **kw)
