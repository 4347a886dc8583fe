"""Progress bars for long jobs: tqdm on stderr, refreshed every second on a terminal and
every 30 seconds when stderr is a log file (so a job's log holds a readable trail, not
thousands of carriage-return updates). A bar that is not shown is a `Hidden` one, without
importing tqdm (10 ms of `punctkit punctuate`'s start-up)."""
from __future__ import annotations

import sys
from typing import Any, Iterable, Iterator


class Hidden:
    """A bar that is not shown: iterates over its iterable, counts, prints what it is asked to write."""

    def __init__(self, iterable: Iterable | None = None, total: int | None = None) -> None:
        self.iterable, self.total, self.n = iterable, total, 0

    def __iter__(self) -> Iterator:
        for x in self.iterable if self.iterable is not None else ():
            self.n += 1
            yield x

    def __len__(self) -> int:
        return self.total if self.total is not None else len(self.iterable)  # type: ignore[arg-type]

    def __enter__(self) -> "Hidden":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def update(self, n: int = 1) -> None:
        self.n += n

    def set_postfix(self, *args: Any, **kwargs: Any) -> None:
        pass

    def write(self, text: str, file: Any = None, **kwargs: Any) -> None:
        print(text, file=file if file is not None else sys.stdout)  # tqdm.write's default, shown or not

    def close(self) -> None:
        pass


def progress(iterable: Iterable | None = None, show: bool = True, **kw: Any) -> Any:
    """A tqdm bar over `iterable` (or a manual one with `total=`); `show=False` gives a `Hidden` bar,
    as does a closed standard error (the work goes on, unseen)."""
    err = sys.stderr
    if err is None or getattr(err, "closed", False):
        show = False
    if not show:
        return Hidden(iterable, kw.get("total"))
    from tqdm import tqdm

    kw.setdefault("mininterval", 1.0 if err.isatty() else 30.0)
    return tqdm(iterable, file=err, **kw)
