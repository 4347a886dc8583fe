"""What differs between the Pythons setup.cfg declares (`python_requires >= 3.10`): each difference in one place,
so that the rest of punctkit reads the same on all of them. tests/test_archive.py runs what is here under the
oldest declared Python where one is installed (`pyenv install 3.10`), and both ways under the Python at hand.

- tarfile's extraction filters (PEP 706) came in 3.10.12 and 3.11.4 (Debian 12's 3.11.2 has none); 3.12+ warns of
  an extraction without a filter, and 3.14 extracts through the `data` filter by default.
"""
from __future__ import annotations

import tarfile
import warnings
from pathlib import Path
from typing import Sequence


def tar_has_data_filter() -> bool:
    """Whether this Python's tarfile has the `data` extraction filter (3.10.12+, 3.11.4+, 3.12+). Looked up at
    each call: a test takes it away to run the other way."""
    return hasattr(tarfile, "data_filter")


def extract_through_data_filter(tar: tarfile.TarFile, dest: Path, members: Sequence[tarfile.TarInfo]) -> None:
    """Extract `members` of `tar` into `dest` through tarfile's `data` filter (tar_has_data_filter must hold); the
    filter's own refusals are tarfile.FilterError (a TarError)."""
    tar.extractall(dest, members=members, filter="data")


def extract_unfiltered(tar: tarfile.TarFile, dest: Path, members: Sequence[tarfile.TarInfo]) -> None:
    """Extract `members` of `tar` into `dest` as they are, owners numeric so that no name is looked up: for a Python
    without the `data` filter, with members the caller made safe (archive._sanitized). 3.12+ warns of a call
    without a filter; only a test gets here there, and the warning is not shown."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        tar.extractall(dest, members=members, numeric_owner=True)
