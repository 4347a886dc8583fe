"""Tar archives for the tests of `punctkit.archive.extract_tar` (tests/test_archive.py): a good one, hostile ones,
and the check that extraction keeps to its rules. Standard library, punctkit.archive and punctkit.compat only, so
that the oldest Python setup.cfg declares runs `check_extraction` too, without the project's virtual environment."""
from __future__ import annotations

import contextlib
import io
import os
import stat
import tarfile
from pathlib import Path
from typing import Iterator

from punctkit.archive import extract_tar
from punctkit.compat import tar_has_data_filter

# name -> (type, link name): members that must never be extracted
HOSTILE = {
    "/tmp/punctkit_abs.txt": (tarfile.REGTYPE, ""),
    "../up.txt": (tarfile.REGTYPE, ""),
    "exp/../../up.txt": (tarfile.REGTYPE, ""),
    "exp/to_etc": (tarfile.SYMTYPE, "/etc"),
    "exp/up": (tarfile.SYMTYPE, "../.."),
    "exp/inside_link": (tarfile.SYMTYPE, "train.log"),
    "exp/passwd": (tarfile.LNKTYPE, "/etc/passwd"),
    "exp/tty": (tarfile.CHRTYPE, ""),
    "exp/fifo": (tarfile.FIFOTYPE, ""),
}
# name -> (bytes, mode in the archive, mode extracted: no set-id bits, no write for others, owner rw)
GOOD = {
    "exp/run/train.log": (b"epoch 1\n", 0o644, 0o644),
    "./exp/run/history.json": (b"[]\n", 0o666, 0o644),
    "exp/run/run.sh": (b"#!/bin/sh\n", 0o4777, 0o755),
    "exp/run/private.txt": (b"x", 0o400, 0o600),
}


def add(tar: tarfile.TarFile, name: str, kind: bytes = tarfile.REGTYPE, data: bytes = b"", link: str = "",
        mode: int = 0o644) -> None:
    """One member, owned by a user and group this machine need not have."""
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode = kind, link, mode
    info.uid, info.gid, info.uname, info.gname = 54321, 54321, "nosuchuser", "nosuchgroup"
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    tar.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)


def good_tar(path: Path) -> Path:
    """An experiment's logs as gpu_transfer.py's `logs` writes them: directories and regular files."""
    with tarfile.open(path, "w") as tar:
        add(tar, "exp", tarfile.DIRTYPE, mode=0o777)
        add(tar, "exp/run", tarfile.DIRTYPE, mode=0o2775)
        for name, (data, mode, _) in GOOD.items():
            add(tar, name, data=data, mode=mode)
    return path


def hostile_tar(path: Path, name: str) -> Path:
    """A good member, then the hostile member `name` of HOSTILE."""
    kind, link = HOSTILE[name]
    with tarfile.open(path, "w") as tar:
        add(tar, "exp/train.log", data=b"ok\n")
        add(tar, name, kind, data=b"evil\n", link=link)
    return path


@contextlib.contextmanager
def without_data_filter() -> Iterator[None]:
    """tarfile as Python before 3.10.12 and 3.11.4 has it: no `data_filter` (the only difference
    extract_tar looks at)."""
    saved = tarfile.__dict__.pop("data_filter")
    try:
        yield
    finally:
        tarfile.data_filter = saved


def check_extraction(tmp: Path) -> None:
    """extract_tar with the tarfile at hand: the good archive's files with their bytes and the `data` filter's
    modes, owned by this user; every hostile archive refused naming its member, nothing written."""
    dest = tmp / "dest"
    with tarfile.open(good_tar(tmp / "good.tar")) as tar:
        extract_tar(tar, dest)
    for name, (data, _, mode) in GOOD.items():
        p = dest / name
        assert p.read_bytes() == data, name
        assert stat.S_IMODE(p.stat().st_mode) == mode, (name, oct(p.stat().st_mode))
        assert (p.stat().st_uid, p.stat().st_gid) == (os.getuid(), os.getgid()), name
    assert (dest / "exp" / "run").is_dir() and not (dest / "exp" / "run").stat().st_mode & 0o7000  # no set-id
    for k, name in enumerate(HOSTILE):
        out = tmp / f"hostile{k}"
        out.mkdir()
        with tarfile.open(hostile_tar(tmp / f"hostile{k}.tar", name)) as tar:
            try:
                extract_tar(tar, out, where="h.tar")
            except ValueError as e:
                assert str(e).startswith(f"h.tar: member {name!r} refused ("), e
            else:
                raise AssertionError(f"{name}: extracted")
        assert not any(out.iterdir()), name
    assert not (tmp / "up.txt").exists() and not Path("/tmp/punctkit_abs.txt").exists()
    # a link already in the destination does not carry a member out of it
    out = tmp / "linked"
    out.mkdir()
    (out / "exp").symlink_to(tmp / "elsewhere")
    with tarfile.open(tmp / "good.tar") as tar:
        try:
            extract_tar(tar, out)
        except ValueError as e:
            assert "outside the destination" in str(e), e
        else:
            raise AssertionError("extracted through a link")
    assert not (tmp / "elsewhere").exists()


if __name__ == "__main__":  # python3.10 tests/tar_util.py TMPDIR: both ways, under the Python that runs it
    import sys

    print(f"data_filter: {tar_has_data_filter()}")
    (Path(sys.argv[1]) / "with").mkdir()
    check_extraction(Path(sys.argv[1]) / "with")
    if tar_has_data_filter():
        (Path(sys.argv[1]) / "without").mkdir()
        with without_data_filter():
            check_extraction(Path(sys.argv[1]) / "without")
    print("ok")
