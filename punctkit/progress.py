"""Progress bars for long jobs: tqdm on stderr, refreshed every second on a terminal and
every 30 seconds when stderr is a log file (so a job's log holds a readable trail, not
thousands of carriage-return updates). A bar that is not shown is a `Hidden` one, without
importing tqdm (10 ms of `punctkit punctuate`'s start-up). `WordProgress`, the bar of the jobs over
words that users run on their own (punctuate, decode, prepare), shows only on a terminal."""
from __future__ import annotations

import os
import sys
import time
from typing import Any, Callable, Iterable, Iterator


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


# ------------------------------------------------------------------ a job over words (punctuate, decode, prepare)

LONG_BYTES = 1 << 16  # an input of known size from this many bytes (about 10,000 words of text) shows a bar
LONG_WORDS = 10_000   # an input of unknown size (standard input, a pipe) shows one once it has done this many words
_IMPORTED = time.time()


def on_terminal() -> bool:
    """Whether standard error is an open terminal: the only place `WordProgress` shows a bar (never in
    a pipe, a log file or CI, whose logs the updates would fill)."""
    err = sys.stderr
    try:
        return err is not None and not err.closed and err.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def process_seconds() -> float:
    """Seconds since this process started (Linux: its start time in /proc, interpreter start-up
    included; elsewhere: since punctkit.progress was imported)."""
    try:
        with open("/proc/self/stat") as f:
            started = int(f.read().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")  # field 22
        with open("/proc/uptime") as f:
            seconds = float(f.read().split()[0]) - started
        if 0 <= seconds <= time.time() - _IMPORTED + 3600:
            return seconds
    except (OSError, ValueError, IndexError):
        pass
    return time.time() - _IMPORTED


class WordProgress:
    """The progress of a job over words on standard error, shown only on a terminal (`on_terminal`)
    and for a long input: the words done and words/s, and the share done and the time left where the
    size is known: `size` bytes of input, of which `read()` says how many are read (`punctuate` on a
    file: text_codec.ReadMeter), or `total` words (`decode`: a data directory's). An input of neither
    (standard input) shows a bar once it has done LONG_WORDS words. `show=False` (--quiet): no bar."""

    def __init__(self, desc: str, *, size: int | None = None, read: Callable[[], int] | None = None,
                 total: int | None = None, show: bool = True) -> None:
        self.desc, self.size, self.read, self.total = desc, size, read, total
        self.words, self.bar = 0, None
        self.started = self._pushed = time.monotonic()
        self.show = show and on_terminal()
        if size is not None and read is None:
            raise ValueError("WordProgress: a size in bytes needs read(), the bytes read so far")
        long = (size or 0) >= LONG_BYTES or (total or 0) >= LONG_WORDS
        if self.show and long:
            self._start()

    def _start(self) -> None:
        """The tqdm bar: its position is in bytes (`size`), in words (`total`) or none (words alone)."""
        sized = self.size is not None or self.total is not None
        fmt = ("{desc}: {percentage:3.0f}%|{bar:24}| [{elapsed}<{remaining}{postfix}]" if sized
               else "{desc}: [{elapsed}{postfix}]")
        try:
            cols, rows = os.get_terminal_size(sys.stderr.fileno())
        except (OSError, ValueError, AttributeError):
            cols, rows = 0, 0
        self.bar = progress(total=self.size if self.size is not None else self.total, desc=self.desc,
                            bar_format=fmt, leave=False, mininterval=0.5,  # a terminal of no size (a bare pty):
                            ncols=cols - 1 if cols > 1 else 100, nrows=max(rows, 24))  # tqdm would show nothing
        self._push()
        self.bar.refresh()  # its first state with words at once (tqdm waits mininterval after the empty one)

    def _push(self) -> None:
        bar = self.bar
        seconds = time.monotonic() - self.started
        rate = self.words / seconds if seconds > 0 else 0.0
        bar.set_postfix_str(f"{self.words:,} words, {rate:,.0f} words/s", refresh=False)
        done = min(self.read(), self.size) if self.size is not None else min(self.words, self.total or self.words)
        bar.update(done - bar.n)
        self._pushed = time.monotonic()

    def update(self, words: int) -> None:
        """`words` more words done."""
        self.words += words
        if not self.show:
            return
        if self.bar is None:
            if self.size is None and self.total is None and self.words >= LONG_WORDS:
                self._start()
        elif time.monotonic() - self._pushed >= 0.25:
            self._push()

    def close(self) -> None:
        """The bar cleared (the summary line follows it)."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def __enter__(self) -> "WordProgress":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
