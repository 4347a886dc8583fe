"""Shared fixtures: where the shared reference data lives, and small helpers."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

if os.environ.get("PYTEST_XDIST_WORKER"):
    # xdist runs one worker per core: one math thread each (and in the commands they start),
    # so that two workers do not fight over the same cores
    os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]
IWSLT = ROOT.parent / "shared" / "data" / "iwslt"


@pytest.fixture
def iwslt() -> Path:
    """The shared IWSLT reference copy (skips only when the checkout has no ../shared)."""
    if not (IWSLT / "test2011").is_file():
        pytest.skip(f"IWSLT reference data not found at {IWSLT}")
    return IWSLT


@pytest.fixture
def one_torch_thread():
    """One torch thread while a test runs (tiny models run faster so on a shared, busy CPU)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
