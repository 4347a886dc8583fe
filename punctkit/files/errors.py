"""One-line errors: PunctkitError, the location in its messages, and the checks of numbers and
input files that raise it."""
from __future__ import annotations

import math
import os
from pathlib import Path

# Characters that end a line for str.splitlines and terminals, shown escaped inside messages.
_LINE_BREAKS = {c: ascii(chr(c))[1:-1] for c in (0x0a, 0x0b, 0x0c, 0x0d, 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029)}


class PunctkitError(Exception):
    """An error the user can fix; the CLI prints it as one line, without a traceback.

    Line breaks inside the message (from quoted input) are escaped, so it stays one line.
    """

    __module__ = "punctkit.files"  # the name tracebacks print (README; the DDP parent reads it)

    def __init__(self, message: object = "", *args: object) -> None:
        super().__init__(str(message).translate(_LINE_BREAKS), *args)


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


def require_file(path: str | os.PathLike, what: str = "file") -> Path:
    """Return `path` as a Path, or raise a one-line error if it is not a readable file."""
    p = Path(path)
    if p.is_dir():
        raise PunctkitError(f"{p}: is a directory; give a {what} here")
    if not p.is_file():
        raise PunctkitError(f"{what} not found: {p}")
    return p
