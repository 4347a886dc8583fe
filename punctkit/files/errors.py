"""One-line errors: PunctkitError, the location in its messages, and the checks of numbers and
input files that raise it."""
from __future__ import annotations

import math
import os
from pathlib import Path

# Characters shown escaped (`\x1b`, `\u202e`) inside messages: every C0 and C1 control and DEL (ESC, BEL,
# backspace, CR, ... can move the cursor, rewrite the screen or set the clipboard), the line and paragraph
# separators (str.splitlines ends a line there) and the bidirectional controls (they reorder what follows).
_BIDI = (0x061c, 0x200e, 0x200f, *range(0x202a, 0x202f), *range(0x2066, 0x206a))
_ESCAPED = {c: ascii(chr(c))[1:-1] for c in (*range(0x20), *range(0x7f, 0xa0), 0x2028, 0x2029, *_BIDI)}


def shown(text: object) -> str:
    """`text` as a message may quote it to a terminal: control characters, line separators and
    bidirectional controls escaped as Python writes them (`\\x1b`, `\\x07`, `\\u2028`), the rest as is
    (CJK, emoji and joiners stay readable). Idempotent: an escaped text is left as it is."""
    return str(text).translate(_ESCAPED)


class PunctkitError(Exception):
    """An error the user can fix; the CLI prints it as one line, without a traceback.

    Control characters inside the message (from quoted input: line breaks, ESC, BEL, backspace, bidi
    controls) are escaped (`shown`), so it stays one line and cannot drive the terminal.
    """

    __module__ = "punctkit.files"  # the name tracebacks print (README; the DDP parent reads it)

    def __init__(self, message: object = "", *args: object) -> None:
        super().__init__(shown(message), *args)


def where(path: str | os.PathLike, lineno: int | None = None, utt: str | None = None) -> str:
    """Format a location as `file:line (utterance u)` for error messages."""
    loc = str(path)
    if lineno is not None:
        loc += f":{lineno}"
    if utt is not None:
        loc += f" (utterance {utt})"
    return loc


def finite_number(value: object, loc: str, what: str) -> float:
    """`value` as a finite float, else a one-line error at `loc` naming `what` ('nan' and 'inf'
    parse as floats but are never a time, a duration or a rate)."""
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        raise PunctkitError(f"{loc}: {what} must be a number, got {value!r}") from None
    if not math.isfinite(x):
        raise PunctkitError(f"{loc}: {what} must be a finite number, got {value!r}")
    return x


def positive_number(value: object, loc: str, what: str, integer: bool = False) -> float:
    """`value` as a finite number > 0 (a whole one, as an int, with `integer`), else a one-line error."""
    x = finite_number(value, loc, what)
    if x <= 0 or (integer and x != int(x)):
        raise PunctkitError(f"{loc}: {what} must be a positive {'whole ' if integer else ''}number, got {value!r}")
    return int(x) if integer else x


class WorkingDirGone(PunctkitError):
    """A relative path given while the working directory no longer exists (`check_working_dir`)."""


def working_dir_gone(path: str | os.PathLike | None = None) -> str | None:
    """The one-line message for a relative `path` (None: any path) when the working directory no longer
    exists (removed after the shell entered it: a relative path then names nothing), else None. The one rule
    for every relative path a command reads or writes (`require_file`, files.outputs, the CLI's handlers)."""
    if path is not None and os.path.isabs(path):
        return None
    try:
        os.getcwd()
    except FileNotFoundError:
        gone = "the working directory no longer exists (it was removed)"
        if path is None:
            return f"{gone}: cd to an existing directory or give absolute paths"
        return f"{path}: a relative path, but {gone}; cd to an existing directory or give an absolute path"
    return None


def check_working_dir(path: str | os.PathLike) -> None:
    """Raise `working_dir_gone`'s one-line error when `path` is relative and the working directory is gone."""
    message = working_dir_gone(path)
    if message is not None:
        raise WorkingDirGone(message)


def require_file(path: str | os.PathLike, what: str = "file") -> Path:
    """Return `path` as a Path, or raise a one-line error if it is not a readable file."""
    p = Path(path)
    if p.is_dir():
        raise PunctkitError(f"{p}: is a directory; give a {what} here")
    if not p.is_file():
        if p.exists():  # a FIFO, a device: what is read line by line takes them (files.iter_lines)
            raise PunctkitError(f"{p}: is not a regular file (a pipe or a device); give a {what} here")
        check_working_dir(p)
        raise PunctkitError(f"{what} not found: {p}")
    return p
