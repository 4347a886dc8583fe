"""Directory locks: `DirLock`, the `DIR/.lock` that keeps two processes out of one experiment."""
from __future__ import annotations

import contextlib
import os
import socket
import tempfile
import time
from pathlib import Path
from typing import Callable

from punctkit.files.errors import PunctkitError

LOCK_NAME = ".lock"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


class DirLock:
    """`DIR/.lock` naming the host, pid and start time of the process that holds `DIR`.

    The file is written complete under a temporary name and linked into place, which
    fails when it exists (like O_EXCL, and no reader ever sees it half-written). A
    lock whose process is gone (same host, pid not running) is taken over with a log
    line; any other is a one-line error naming its holder, unless `force`.
    """

    def __init__(self, path: str | os.PathLike, force: bool = False, log: Callable[[str], None] | None = None,
                 what: str = "punctkit"):
        self.dir = Path(path)
        self.file = self.dir / LOCK_NAME
        self.force, self.log, self.what = force, log or (lambda m: None), what
        self.text = ""

    def _holder(self) -> tuple[dict[str, str], str]:
        try:
            text = self.file.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}, ""
        return dict(ln.split(" ", 1) for ln in text.splitlines() if " " in ln), text

    def acquire(self) -> None:
        """Take the lock or raise PunctkitError."""
        if self.dir.exists() and not self.dir.is_dir():
            raise PunctkitError(f"{self.dir}: exists and is not a directory; choose a directory path")
        self.dir.mkdir(parents=True, exist_ok=True)
        self.text = (f"host {socket.gethostname()}\npid {os.getpid()}\n"
                     f"started {time.strftime('%Y-%m-%d %H:%M:%S %Z')}\n")
        fd, tmp = tempfile.mkstemp(prefix=f"{LOCK_NAME}.", suffix=".tmp", dir=self.dir)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(self.text)
            for _ in range(3):
                try:
                    os.link(tmp, self.file)
                    return
                except FileExistsError:
                    self._take_over_or_fail()
            raise PunctkitError(f"{self.file}: could not take the lock (other processes keep taking it)")
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)

    def _take_over_or_fail(self) -> None:
        """Remove a lock left by a dead process (or any, with force); else raise the holder's error."""
        info, text = self._holder()
        host, pid = info.get("host", "?"), info.get("pid", "?")
        here = host == socket.gethostname()
        dead = here and pid.isdigit() and not _pid_alive(int(pid))
        if not (dead or self.force):
            since = f", since {info['started']}" if "started" in info else ""
            where_ = "running" if here else "on another host; if it is no longer running there, pass --force"
            raise PunctkitError(f"{self.dir}: in use by another {self.what} (host {host}, pid {pid}{since}; "
                                f"{where_}; lock file {self.file})")
        why = "its process is not running" if dead else "--force"
        self.log(f"taking over the lock {self.file} of host {host}, pid {pid} ({why})")
        if self._holder()[1] == text:  # still the same holder's: remove it, then link ours
            with contextlib.suppress(FileNotFoundError):
                self.file.unlink()

    def release(self) -> None:
        """Remove the lock if it is still this process's."""
        if self.text and self._holder()[1] == self.text:
            self.file.unlink()
        self.text = ""

    def __enter__(self) -> "DirLock":
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
