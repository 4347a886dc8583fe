"""The `punctkit` command's exit and error policy (punctkit/cli.py holds the commands; its `main` calls `run_cli`).

Every error is one line on stderr: usage errors (status 2), errors the user can fix (`PunctkitError`)
and failing file operations (`OSError`, status 1, naming the file, even one being written when a write
or close failed); a module that an extra installs, missing, names the extra (punctkit/extras.py); an
unexpected exception is a one-line bug report request. PUNCTKIT_DEBUG=1 or
`--debug` adds the traceback. Closed standard streams are guarded (`guard_std_streams`), stdout is
UTF-8, and control characters in a message are escaped (`shown`), so quoted input cannot drive the
terminal.
"""
from __future__ import annotations

import contextlib
import errno
import io
import os
import sys
import traceback
from pathlib import Path
from typing import Any, List, NoReturn, Optional

from punctkit.extras import missing_extra
from punctkit.files import CLOSED, PunctkitError, guard_std_streams, shown, utf8_stdout
from punctkit.files.errors import WorkingDirGone, working_dir_gone
from punctkit.files.streams import STDOUT_CLOSED


def _debug() -> bool:
    """Whether tracebacks are wanted (PUNCTKIT_DEBUG=1 or the global --debug option)."""
    return os.environ.get("PUNCTKIT_DEBUG", "") not in ("", "0")


def _fail(message: str, code: int) -> NoReturn:
    """Print `punctkit: MESSAGE` as one line on stderr (after the traceback in debug mode) and exit."""
    if _debug() and sys.exc_info()[0] is not None:
        traceback.print_exc()
    one_line = " ".join(shown(message).split())  # quoted input cannot drive the terminal (ESC, BEL, ...)
    try:
        sys.stderr.write(f"punctkit: {one_line}\n")
        sys.stderr.flush()
    except OSError:
        pass
    sys.exit(code)


def _file_written(e: OSError) -> Optional[str]:
    """The name of the file being written where `e` was raised, for errors that carry no
    file name (a write or close failing, e.g. on /dev/full): the open file in write mode
    among the local variables of the innermost frame."""
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return None
    for v in tb.tb_frame.f_locals.values():
        if v is sys.stdout or v is getattr(sys.stdout, "buffer", None):
            return "standard output"
        if isinstance(v, io.IOBase) and any(c in getattr(v, "mode", "") for c in "wax+"):
            name = getattr(v, "name", None)
            if isinstance(name, str):
                return name
    return None


def _os_message(e: OSError, name: Optional[str]) -> str:
    """`NAME: strerror` (`NAME -> FILENAME2: strerror` for two paths) for any OSError."""
    what = e.strerror or str(e) or type(e).__name__
    if isinstance(e, (FileExistsError, NotADirectoryError)) and name is not None:
        blocking = _file_in_the_way(Path(name))
        if blocking is not None:  # an output under (or in place of) a regular file
            return f"{blocking}: is a file, not a directory"
    if name is None:
        return what
    if e.filename2 is not None:  # a rename or link: the destination (an output) is what the user named
        return f"{name} -> {e.filename2}: {what}" if e.errno == errno.ENOENT else f"{e.filename2}: {what}"
    return f"{name}: {what}"


def _file_in_the_way(path: Path) -> Optional[Path]:
    """The regular file that `path` or one of its parents is, where a directory was needed."""
    for p in (path, *path.parents):
        if p.is_file():
            return p
    return None


def _usage_message(e: Exception) -> str:
    """A click usage error as one line naming the command and where its help is."""
    msg = e.format_message()  # type: ignore[attr-defined]
    ctx = getattr(e, "ctx", None)
    cmd = getattr(ctx, "command_path", None) or "punctkit"
    sub = cmd.partition(" ")[2]
    return f"{sub + ': ' if sub else ''}{msg} (see '{cmd} --help')"


def _quiet_stdout() -> None:
    """Point stdout at /dev/null so that Python's exit-time flush cannot fail again."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def _torch_outside_a_removed_cwd() -> None:
    """Where the working directory was removed, import torch from / and come back: its MKL aborts the process
    when loaded from a removed directory, and a relative path must still get its one-line error
    (`working_dir_gone`), an absolute one work. Costs nothing while the working directory exists."""
    if working_dir_gone() is None:
        return
    here = os.open(".", os.O_RDONLY)
    try:
        os.chdir("/")
        with contextlib.suppress(ImportError):
            import torch  # noqa: F401
    finally:
        os.fchdir(here)
        os.close(here)


def _internal_error(e: Exception) -> NoReturn:
    """An unexpected exception: one line asking for a bug report."""
    first = (str(e).strip().splitlines() or [""])[0][:300]
    _fail(f"internal error: {type(e).__name__}: {first} -- this is a bug; rerun with "
          f"PUNCTKIT_DEBUG=1 and report the traceback", 1)


def _command(argv: List[str]) -> Optional[str]:
    """The command named in `argv` (its first word that is not an option), for messages."""
    return next((a for a in argv if not a.startswith("-")), None)


def _os_error(e: OSError) -> NoReturn:
    """Exit for an OSError out of a command: silently for a reader that has gone (EPIPE), else with one line naming
    the file (or the closed standard output) and what went wrong."""
    if e.errno == errno.EPIPE:  # `punctkit ... | head`: the reader has gone, nothing to report
        _quiet_stdout()
        sys.exit(1)
    name = e.filename if e.filename is not None else _file_written(e)
    if e.errno == errno.EBADF and "stdout" in CLOSED and name in (None, "standard output"):
        _quiet_stdout()
        _fail(f"error: {STDOUT_CLOSED}", 1)
    if name == "standard output":
        _quiet_stdout()  # what is still buffered would fail again at exit
    gone = working_dir_gone(None if name is None else str(name)) if e.errno == errno.ENOENT else None
    _fail(f"error: {gone or _os_message(e, None if name is None else str(name))}", 1)


def _other_error(e: Exception) -> NoReturn:
    """Exit for any other exception out of a command: click's usage errors and exits (recognised by what they carry:
    Typer bundles its own click), typer.Abort, and otherwise an internal error."""
    code = getattr(e, "exit_code", None)
    if isinstance(code, int) and callable(getattr(e, "format_message", None)):
        if type(e).__name__ == "NoArgsIsHelpError":  # `punctkit` alone: the help, not an error
            e.show()  # type: ignore[attr-defined]
            sys.exit(code)
        _fail(f"error: {_usage_message(e)}" if code == 2 else f"error: {e.format_message()}", code)
    if isinstance(code, int):  # typer.Exit
        sys.exit(code)
    if type(e).__name__ == "Abort":  # typer.Abort (also raised for EOF at a prompt)
        _fail("aborted", 1)
    _internal_error(e)


def run_cli(app: Any, argv: Optional[List[str]] = None) -> None:
    """Run the Typer `app` (punctkit.cli.main): every error the user can cause is one line on stderr, never a
    traceback.

    Exit status 2 for usage errors (click's convention), 1 for everything else,
    130 when interrupted. Typer bundles its own copy of click, so its exceptions are
    recognised by what they carry (`exit_code`, `format_message`), not by class.
    """
    guard_std_streams()  # a closed standard stream: /dev/null in its place, each use a one-line error
    _torch_outside_a_removed_cwd()
    utf8_stdout()  # words in any script, whatever the locale (docs/safety.md, "Limits and streams")
    try:
        rv = app(args=argv, prog_name="punctkit", standalone_mode=False)
        try:
            sys.stdout.flush()
        except OSError as e:
            e.filename = "standard output"
            raise
    except PunctkitError as e:
        gone = None if isinstance(e, WorkingDirGone) else working_dir_gone()  # `file not found: rel.txt`: why
        _fail(f"error: {e}" + (f"; {gone}" if gone else ""), 1)
    except KeyboardInterrupt:
        _fail("aborted", 130)
    except OSError as e:
        _os_error(e)
    except ModuleNotFoundError as e:
        missing = missing_extra(e, _command(sys.argv[1:] if argv is None else argv))
        if missing is None:
            _internal_error(e)
        _fail(f"error: {missing}", 1)
    except Exception as e:
        _other_error(e)
    if rv == 130:  # typer turns Ctrl-C into Exit(130), which non-standalone mode returns
        _fail("aborted", 130)
    if isinstance(rv, int) and rv:  # non-standalone click returns Exit's status
        sys.exit(rv)
