"""Writing matrices as a Kaldi ark + scp pair with kaldiio, with nothing half-written.

The archive is written under a temporary name and renamed when complete; the
scp (which points into it by byte offset) names the final archive path.
"""
from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path
from types import TracebackType

import kaldiio
import numpy as np

from punctkit.files import write_lines
from punctkit.files.outputs import replace_mode


class ArkWriter:
    """`with ArkWriter(ark, scp) as w: w.write(key, matrix)`; both files appear only on success."""

    def __init__(self, ark: str | Path, scp: str | Path) -> None:
        self.ark, self.scp = Path(ark), Path(scp)
        self.lines: list[str] = []

    def __enter__(self) -> "ArkWriter":
        self.ark.parent.mkdir(parents=True, exist_ok=True)
        fd, self.tmp = tempfile.mkstemp(prefix=f".{self.ark.name}.", suffix=".tmp", dir=self.ark.parent)
        os.close(fd)
        self.f = open(self.tmp, "wb")  # opened by name: kaldiio writes the file's name into the scp
        return self

    def write(self, key: str, mat: np.ndarray) -> None:
        """Append one matrix; its scp line points at the final archive name."""
        buf = io.StringIO()
        kaldiio.save_ark(self.f, {key: mat}, scp=buf)
        offset = buf.getvalue().strip().rpartition(":")[2]
        self.lines.append(f"{key} {self.ark.resolve()}:{offset}")

    def __exit__(self, exc_type: type | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.f.close()
        if exc_type is not None:
            Path(self.tmp).unlink(missing_ok=True)
            return
        replace_mode(self.tmp, self.ark)  # mkstemp makes it private: a replaced archive's mode, else the umask's
        os.replace(self.tmp, self.ark)
        write_lines(self.scp, self.lines)
