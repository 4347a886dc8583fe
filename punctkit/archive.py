"""Checks of zip archive members that do not depend on what an archive holds: safe relative
names, plain files, declared sizes and compression ratios. Packed models (package/read.py) and
the MPNet parts (text/plm_parts.py) are read through them; nothing here opens a file.

`extract_tar` is the one extraction of a tar archive (local/ted/gpu_transfer.py): the same name
rules, regular files and directories only, on every Python setup.cfg declares (tarfile's `data`
filter where it has one, 3.10.12+ and 3.11.4+; the same checks by hand before)."""
from __future__ import annotations

import copy
import os
import re
import stat
import tarfile
import zipfile
from pathlib import Path
from typing import Sequence

from punctkit.compat import extract_through_data_filter, extract_unfiltered, tar_has_data_filter

MiB, GiB = 2 ** 20, 2 ** 30
WEIGHTS_LIMIT = 3 * GiB // 2   # model.pt, model.onnx, safetensors: MPNet-base and its ONNX copy are about 0.45 GB each
FRONTEND_LIMIT = 64 * MiB      # each vocabulary / BPE codes / sentencepiece / tokenizer file
TOTAL_LIMIT = 3 * GiB          # all members together, uncompressed
MAX_RATIO = 100                # uncompressed / compressed size of any member over RATIO_FROM bytes
RATIO_FROM = 1024
MANIFEST = "punctkit.json"     # a packed model's card (package/format.py); a zip without it is no package


def unsafe_name(name: str) -> str | None:
    """Why a member name cannot be a relative path inside a directory, or None."""
    if "\\" in name:
        return "a backslash in its name"
    if name.startswith("/") or re.match(r"[A-Za-z]:", name):
        return "an absolute path"
    parts = name[:-1].split("/") if name.endswith("/") else name.split("/")
    if ".." in parts:
        return "'..' in its path"
    if any(p in ("", ".") for p in parts) or any(ord(c) < 32 or c == "\x7f" for c in name):
        return "an empty part, '.' or a control character in its path"
    return None


def file_type(info: zipfile.ZipInfo) -> str | None:
    """Why a member is not a plain file (or an allowed directory entry), or None."""
    mode = info.external_attr >> 16
    kind = stat.S_IFMT(mode)
    if kind == stat.S_IFLNK:
        return "a symbolic link"
    if kind not in (0, stat.S_IFDIR if info.filename.endswith("/") else stat.S_IFREG):
        return "not a regular file"
    return None


def size_problem(info: zipfile.ZipInfo, limit: int) -> str | None:
    """Why a member's declared size (over `limit`) or compression ratio is refused, or None."""
    if info.file_size > limit:
        return f"declares {info.file_size} bytes, over the limit of {limit} for this member"
    if info.file_size > RATIO_FROM and info.file_size > MAX_RATIO * max(info.compress_size, 1):
        return (f"compression ratio {info.file_size / max(info.compress_size, 1):.0f} "
                f"over the limit of {MAX_RATIO} ({info.compress_size} -> {info.file_size} bytes)")
    return None


def entry_problem(info: zipfile.ZipInfo, limit: int) -> str | None:
    """Why any archive's member is refused (name, type, declared size, ratio), or None: the
    checks of a package's members that do not depend on what a package holds."""
    return unsafe_name(info.filename) or file_type(info) or size_problem(info, limit)


def tar_member_problem(member: tarfile.TarInfo, dest: Path) -> str | None:
    """Why a tar member cannot be extracted into the directory `dest`, or None: a relative name without
    `..` (`unsafe_name`; a leading `./` is allowed), a regular file or a directory (no link, device or FIFO),
    and a target that stays inside `dest` when the links already there are followed."""
    name = member.name
    while name.startswith("./"):
        name = name[2:]
    if name not in ("", ".", "./"):
        why = unsafe_name(name)
        if why:
            return why
    if member.issym() or member.islnk():
        return "a link"
    if not (member.isreg() or member.isdir()):
        return "not a regular file or a directory (a device, a FIFO)"
    root = os.path.realpath(dest)
    if os.path.commonpath([root, os.path.realpath(os.path.join(root, name))]) != root:
        return "a path outside the destination (through a link there)"
    return None


def _sanitized(member: tarfile.TarInfo) -> tarfile.TarInfo:
    """A copy of a checked member with what tarfile's `data` filter changes: no owner (even as root), no
    set-id bits, no write for group and others, readable and writable by its owner, executable only where
    its owner could execute it."""
    m = copy.copy(member)
    m.uid = m.gid = -1  # os.chown(path, -1, -1) keeps the extracting user's
    m.uname = m.gname = ""
    if m.isdir():
        m.mode = 0o755
    else:
        m.mode = (m.mode & 0o755 if m.mode & 0o100 else m.mode & 0o644) | 0o600
    return m


def extract_tar(tar: tarfile.TarFile, dest: str | os.PathLike, members: Sequence[tarfile.TarInfo] | None = None,
                where: str = "") -> None:
    """Extract `members` (default: all) of `tar` into `dest`, refusing the archive before anything is written
    when one is unsafe (`tar_member_problem`): a ValueError naming the member (`where`: the archive, for the
    message). Python with tarfile's `data` filter extracts through it; one without it (before 3.10.12 or
    3.11.4) extracts copies the filter's way (`_sanitized`), owners numeric so that no name is looked up (the two
    ways: punctkit/compat.py)."""
    dest = Path(dest)
    members = list(tar.getmembers() if members is None else members)
    for m in members:
        why = tar_member_problem(m, dest)
        if why:
            raise ValueError(f"{where or 'tar archive'}: member {m.name!r} refused ({why}); nothing extracted")
    try:
        if tar_has_data_filter():
            extract_through_data_filter(tar, dest, members)
        else:
            extract_unfiltered(tar, dest, [_sanitized(m) for m in members])
    except tarfile.TarError as e:  # the data filter's own refusal (FilterError) and reading errors
        raise ValueError(f"{where or 'tar archive'}: {e}") from None
