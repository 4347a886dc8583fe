"""The standard streams of a command: closed ones (`<&-`, `>&-`, `2>&-`) and standard output's encoding.

A process started with a standard stream closed has `sys.stdin`, `sys.stdout` or `sys.stderr` None,
and the next file it opens takes that descriptor (an output would then receive what a library or a
child process writes to "standard output"). `guard_std_streams` (the CLI's first step) puts
/dev/null on each closed descriptor, opened the way that keeps the stream unusable for its purpose:
- standard input closed: reading it is a one-line error (`stdin_buffer`), before any work where a
  command knows it will read it;
- standard output closed: a write to it fails (EBADF), which the CLI reports as one line naming
  standard output; work written to files is done first;
- standard error closed: messages and progress have nowhere to go and are dropped; the work is done
  and the exit status still tells whether it succeeded.

`utf8_stdout`: standard output is always UTF-8, whatever the locale (as every file punctkit writes),
so a Latin-1 or ASCII locale cannot make CJK or emoji output an error.
"""
from __future__ import annotations

import codecs
import contextlib
import io
import os
import sys
from typing import BinaryIO

from punctkit.files.errors import PunctkitError

CLOSED: set[str] = set()  # the standard streams ("stdin", "stdout", "stderr") the process started without

STDIN_CLOSED = "standard input is closed; give an input file, or redirect one in (< FILE)"
STDOUT_CLOSED = "standard output is closed; redirect it (> FILE), or give -o FILE where the command has it"


def _occupy(fd: int, flags: int) -> None:
    """Put /dev/null (opened with `flags`) on the closed descriptor `fd`."""
    try:
        os.fstat(fd)
        return  # something already holds it
    except OSError:
        pass
    with contextlib.suppress(OSError):
        new = os.open(os.devnull, flags)
        if new != fd:
            os.dup2(new, fd)
            os.close(new)


def guard_std_streams() -> None:
    """Make closed standard streams safe (see the module's docstring); call once, before any file is opened."""
    if sys.stdin is None:
        CLOSED.add("stdin")
        _occupy(0, os.O_WRONLY)  # reading it fails, as reading a closed descriptor does
    if sys.stdout is None:
        CLOSED.add("stdout")
        _occupy(1, os.O_RDONLY)  # writing it fails (EBADF)
        with contextlib.suppress(OSError, ValueError):
            sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
    if sys.stderr is None:
        CLOSED.add("stderr")
        _occupy(2, os.O_WRONLY)
        with contextlib.suppress(OSError, ValueError):
            sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)


def stdin_buffer() -> BinaryIO:
    """The bytes of standard input; a one-line error when it is closed."""
    if sys.stdin is None or "stdin" in CLOSED:
        raise PunctkitError(STDIN_CLOSED)
    return sys.stdin.buffer


def require_stdin() -> None:
    """A one-line error now when standard input is closed (before a command's long work)."""
    if sys.stdin is None or "stdin" in CLOSED:
        raise PunctkitError(STDIN_CLOSED)


def require_stdout() -> None:
    """A one-line error now when standard output is closed (before a command's long work)."""
    if sys.stdout is None or "stdout" in CLOSED:
        raise PunctkitError(STDOUT_CLOSED)


def utf8_stdout() -> None:
    """Write standard output as UTF-8 whatever the locale (LC_ALL=en_US.ISO-8859-1, PYTHONIOENCODING=latin-1),
    keeping its error handler; a stream that is not a text file of its own is left alone."""
    out = sys.stdout
    if not isinstance(out, io.TextIOWrapper):
        return
    with contextlib.suppress(LookupError, ValueError, OSError, AttributeError):
        if codecs.lookup(out.encoding).name != "utf-8":
            out.reconfigure(encoding="utf-8", errors=out.errors)
