"""Shared fixtures: where the shared reference data lives, and small helpers."""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
IWSLT = ROOT.parent / "shared" / "data" / "iwslt"


@pytest.fixture
def iwslt() -> Path:
    """The shared IWSLT reference copy (skips only when the checkout has no ../shared)."""
    if not (IWSLT / "test2011").is_file():
        pytest.skip(f"IWSLT reference data not found at {IWSLT}")
    return IWSLT
