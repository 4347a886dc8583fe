"""Atomic outputs: files written under a temporary name and renamed into place, and outputs that
never replace or delete what punctkit did not write (`check_not_input`, `check_output_file`,
`output_dir`).

Every file `atomic_write` writes carries punctkit's mark (`_mark_ours`, set on the temporary file
before the rename), so a later command knows a file at its output path as its own, as it left it: a
file output (`punctuate -o`, `convert`, `decode --format text`) replaces an existing file only when
punctkit wrote it and it has not changed since, or with `--overwrite`. The mark is in the file's
modification time, which every file system keeps (extended attributes, which NFS, older tmpfs and
FAT drop, only back it up where times are coarse): an edit, a copy (`cp`, `cp -a`) or a file of
the user's has none. A file replaced keeps its permissions (and its group where allowed: `replace_mode`),
so a private 0600 output stays private; a new one gets the umask's default."""
from __future__ import annotations

import contextlib
import errno
import fnmatch
import hashlib
import os
import stat
import tempfile
from pathlib import Path
from typing import IO, Iterable, Iterator, Sequence

from punctkit.files.errors import PunctkitError, check_working_dir


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def replace_mode(tmp: str | os.PathLike, path: str | os.PathLike) -> None:
    """Give `tmp`, about to be renamed onto `path`, the permissions a replaced file keeps, as editors
    do: an existing file's permission bits (`rwx` for user, group and others; a private 0600 transcript
    stays private) and, where the file system allows it, its group; a new file gets the umask's default
    (0666 less the umask; mkstemp makes 0600)."""
    try:
        st = os.stat(path)  # through a symbolic link: the file the user sees
    except OSError:
        st = None
    if st is None or not stat.S_ISREG(st.st_mode):
        os.chmod(tmp, 0o666 & ~_umask())
        return
    if os.stat(tmp).st_gid != st.st_gid:
        with contextlib.suppress(OSError):  # not a member of that group: ours
            os.chown(tmp, -1, st.st_gid)
    os.chmod(tmp, stat.S_IMODE(st.st_mode) & 0o777)


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
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    except OSError as e:
        e.filename = str(p)  # the user named the output, not our temporary file
        raise
    os.close(fd)
    try:
        with open(tmp, mode, encoding=None if "b" in mode else encoding) as f:
            yield f
        replace_mode(tmp, p)  # the replaced file's mode (and group); a new file: the umask's default
        _mark_ours(tmp)
        os.replace(tmp, p)
    except BaseException as e:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(e, OSError) and (e.filename == tmp or (e.filename is None and e.errno in _FULL)):
            e.filename, e.filename2 = str(p), None
        raise


_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)  # a write that failed for lack of room


def write_lines(path: str | os.PathLike, lines: Iterable[str]) -> None:
    """`atomic_write` `path` as lines, each followed by a newline."""
    with atomic_write(path) as f:
        for ln in lines:
            f.write(ln + "\n")


OWNER_ATTR = "user.punctkit"  # where user attributes are kept: `INODE:SIZE:MTIME_NS` of a file atomic_write wrote
_STAMP = 10 ** 6  # the mark in a modification time: its nanoseconds below the millisecond


def _stamp(st: os.stat_result, ms: int) -> int:
    """The nanoseconds below millisecond `ms` that mark the modification time of a file punctkit wrote: a
    checksum of the file's inode, size and that millisecond (a file of the user's has it by chance once in
    a million)."""
    digest = hashlib.blake2b(f"{st.st_ino}:{st.st_size}:{ms}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % _STAMP


def _owner_attr(st: os.stat_result) -> bytes:
    return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}".encode()  # a copy with its attributes: another inode


def _mark_ours(path: str | os.PathLike) -> None:
    """Mark the closed file at `path` as punctkit's, as it is now: its modification time moved within its
    millisecond to `_stamp` (kept by every file system with nanosecond times: ext4, XFS, btrfs, tmpfs, NFS,
    ...), and OWNER_ATTR naming its inode, size and time where user attributes are kept (for coarser times)."""
    with contextlib.suppress(OSError):
        st = os.stat(path)
        ms = st.st_mtime_ns // _STAMP
        os.utime(path, ns=(st.st_atime_ns, ms * _STAMP + _stamp(st, ms)))
        with contextlib.suppress(OSError, AttributeError):  # no user attributes there: the time alone
            os.setxattr(path, OWNER_ATTR, _owner_attr(os.stat(path)))  # the time as kept (rounded, maybe)


def written_by_punctkit(path: str | os.PathLike) -> bool:
    """Whether the file at `path` is a regular file punctkit wrote and nobody changed since (`_mark_ours`):
    its modification time carries the stamp of its inode and size, or OWNER_ATTR names its inode, size and time.
    Extended attributes alone do not decide it: file systems drop them, and an edit in place keeps them."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode):
        return False
    if st.st_mtime_ns % _STAMP == _stamp(st, st.st_mtime_ns // _STAMP):
        return True
    try:
        return os.getxattr(path, OWNER_ATTR) == _owner_attr(st)
    except (OSError, AttributeError):
        return False


def check_output_file(out: str | os.PathLike, inputs: Iterable[str | os.PathLike] = (), *,
                      overwrite: bool = False) -> None:
    """Raise a one-line error when the file output `out` is one of `inputs` (`check_not_input`), or
    exists as a regular file that punctkit did not write and `overwrite` is not given."""
    check_not_input(out, inputs)
    p = Path(out)
    if p.is_file() and not overwrite and not written_by_punctkit(p):
        raise PunctkitError(f"{p}: exists and punctkit did not write it (or it changed since); name another "
                            f"output, move it away, or give --overwrite to replace it")


def _resolved(path: str | os.PathLike) -> Path:
    """`path` made absolute, links resolved; a relative one where the working directory is gone is a
    one-line error naming it (`working_dir_gone`)."""
    try:
        return Path(path).resolve()
    except FileNotFoundError:
        check_working_dir(path)
        raise


def check_not_input(out: str | os.PathLike, inputs: Iterable[str | os.PathLike]) -> None:
    """Raise a one-line error when the output `out` is one of `inputs` (the same file or directory)."""
    o = Path(out)
    for i in inputs:
        p = Path(i)
        same = _resolved(p) == _resolved(o)
        if not same and p.exists() and o.exists():
            with contextlib.suppress(OSError):
                same = os.path.samefile(p, o)  # hard links
        if same:
            raise PunctkitError(f"{o}: is also an input of this command ({p}); write the output elsewhere")


def _matches(name: str, is_dir: bool, known: Sequence[str]) -> bool:
    """Whether an entry is one punctkit knows: a pattern ending in `/` names directories."""
    for pat in known:
        if pat.endswith("/"):
            if is_dir and fnmatch.fnmatchcase(name, pat[:-1]):
                return True
        elif not is_dir and fnmatch.fnmatchcase(name, pat):
            return True
    return False


def _own_temporary(name: str) -> bool:
    """A temporary file atomic_write leaves behind when its process is killed."""
    return name.startswith(".") and name.endswith(".tmp")


class OutputDir:
    """A directory output being written one file at a time (made by `output_dir`)."""

    def __init__(self, path: Path, known: Sequence[str]):
        self.path = path
        self.known = known
        self.written: set[str] = set()

    def _target(self, name: str) -> Path:
        if not _matches(name.split("/")[0], "/" in name, self.known):
            raise ValueError(f"{name}: not a file this output knows ({', '.join(self.known)})")
        self.written.add(name)
        return self.path / name  # atomic_write makes the directory with the first file

    def open(self, name: str, mode: str = "w") -> contextlib.AbstractContextManager[IO]:
        """`atomic_write` of file `name` (one of the known names) in this directory."""
        return atomic_write(self._target(name), mode)

    def write_lines(self, name: str, lines: Iterable[str]) -> None:
        """Write `name` as lines (each followed by a newline)."""
        write_lines(self._target(name), lines)

    def write_bytes(self, name: str, data: bytes) -> None:
        """Write `name` with exactly these bytes."""
        with self.open(name, "wb") as f:
            f.write(data)


def check_output_dir(path: str | os.PathLike, known: Sequence[str], *, overwrite: bool = False,
                     inputs: Iterable[str | os.PathLike] = ()) -> None:
    """The checks of `output_dir`, for a command to make before its long work."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise PunctkitError(f"{p}: exists and is not a directory; choose a directory path")
    inputs = list(inputs)
    check_not_input(p, inputs)
    for i in inputs:
        q = Path(i)
        if _resolved(q.parent) == _resolved(p) and _matches(q.name, q.is_dir(), known):
            raise PunctkitError(f"{q}: is an input and punctkit would write {p}/{q.name}; "
                                f"write the output elsewhere")
    if p.is_dir() and not overwrite:
        unknown = sorted(e.name for e in p.iterdir()
                         if not _own_temporary(e.name) and not _matches(e.name, e.is_dir(), known))
        if unknown:
            more = f" and {len(unknown) - 3} more" if len(unknown) > 3 else ""
            raise PunctkitError(f"{p}: holds files punctkit does not write ({', '.join(unknown[:3])}{more}); "
                                f"choose a new or empty directory, or pass --overwrite "
                                f"(files punctkit does not know are kept)")


@contextlib.contextmanager
def output_dir(path: str | os.PathLike, known: Sequence[str], *, overwrite: bool = False,
               inputs: Iterable[str | os.PathLike] = (), stale: Sequence[str] = (),
               add: bool = False) -> Iterator[OutputDir]:
    """Write a directory output without deleting anything punctkit did not write.

    `path` must be absent, empty, or hold only entries matching `known` (glob
    patterns; `name/` for directories); anything else is a one-line error naming
    it and `--overwrite`. With `overwrite` (or `add`, for stages that add their own
    files to a directory in the Kaldi way, e.g. `feats.scp`) other entries are
    allowed and always left alone. Each file is written to a temporary name and
    renamed into place on its own; nothing is ever replaced as a whole directory.
    No entry of `inputs` may be `path` itself or lie in it under a known name.
    When the block succeeds, the files named in `stale` (a subset of `known`)
    that it did not write are removed: the caller lists only files it writes
    itself and that would contradict the new ones (e.g. an old `labels`).
    """
    p = Path(path)
    check_output_dir(p, known, overwrite=overwrite or add, inputs=inputs)
    out = OutputDir(p, known)
    yield out
    for name in stale:
        if name not in out.written and (p / name).is_file() and _matches(name, False, known):
            (p / name).unlink()
