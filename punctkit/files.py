"""File helpers shared by every stage: one-line errors and atomic outputs."""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import IO, Iterator


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class PunctkitError(Exception):
    """An error the user can fix; the CLI prints it as one line, without a traceback."""


def where(path: str | os.PathLike, lineno: int | None = None, utt: str | None = None) -> str:
    """Format a location as `file:line (utterance u)` for error messages."""
    loc = str(path)
    if lineno is not None:
        loc += f":{lineno}"
    if utt is not None:
        loc += f" (utterance {utt})"
    return loc


def require_file(path: str | os.PathLike, what: str = "file") -> Path:
    """Return `path` as a Path, or raise a one-line error if it is not a readable file."""
    p = Path(path)
    if not p.is_file():
        raise PunctkitError(f"{what} not found: {p}")
    return p


def iter_lines(path: str | os.PathLike, lines: tuple[int, int] | None = None) -> Iterator[tuple[int, str]]:
    """Yield (1-based line number, line without newline); undecodable bytes become U+FFFD.

    `lines=(first, last)` keeps only that inclusive range of line numbers.
    """
    p = require_file(path)
    first, last = lines or (1, None)
    with open(p, encoding="utf-8", errors="replace") as f:
        for i, line in enumerate(f, 1):
            if i < first:
                continue
            if last is not None and i > last:
                break
            yield i, line.rstrip("\n").rstrip("\r")


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Open a temporary file beside `path`; rename it onto `path` only if the block succeeds.

    A `path` that exists and is not a regular file (/dev/null, /dev/stdout, a FIFO) is
    written directly: renaming onto it would replace the device with a file.
    """
    p = Path(path)
    if p.exists() and not p.is_file() and not p.is_dir():
        with open(p, mode, encoding=None if "b" in mode else encoding) as f:
            yield f
        return
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    os.close(fd)
    try:
        with open(tmp, mode, encoding=None if "b" in mode else encoding) as f:
            yield f
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; outputs are ordinary files
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary directory beside `path`; it replaces `path` only if the block succeeds."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent))
    try:
        yield tmp
        os.chmod(tmp, 0o777 & ~_umask())
        if p.is_dir():
            old = p.with_name(f".{p.name}.old.{os.getpid()}")
            os.replace(p, old)
            os.replace(tmp, p)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, p)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
