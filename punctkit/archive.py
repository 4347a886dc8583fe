"""Checks of zip archive members that do not depend on what an archive holds: safe relative
names, plain files, declared sizes and compression ratios. Packed models (package/read.py) and
the MPNet parts (text/plm_parts.py) are read through them; nothing here opens a file."""
from __future__ import annotations

import re
import stat
import zipfile

MiB, GiB = 2 ** 20, 2 ** 30
WEIGHTS_LIMIT = 3 * GiB // 2   # model.pt, model.onnx, safetensors: MPNet-base and its ONNX copy are about 0.45 GB each
FRONTEND_LIMIT = 64 * MiB      # each vocabulary / BPE codes / sentencepiece / tokenizer file
TOTAL_LIMIT = 3 * GiB          # all members together, uncompressed
MAX_RATIO = 100                # uncompressed / compressed size of any member over RATIO_FROM bytes
RATIO_FROM = 1024


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
