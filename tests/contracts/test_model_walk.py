"""Loading a model walks down the import layers (issue #80, item 2): the `model` argument of `punctkit punctuate`,
followed by utils/trace_punctuate.py through every call that carries it while the model loads, climbs back up the
layers (tests/contracts/test_layers.py: LEVELS) at most 4 times, for each shipped model."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

TRACE = Path(__file__).resolve().parents[2] / "utils" / "trace_punctuate.py"
MAX_CLIMBS = 4


@pytest.mark.parametrize("model", ["fast", "accurate"])
def test_loading_a_model_climbs_back_up_the_layers_at_most_4_times(model):
    r = subprocess.run([sys.executable, "-P", str(TRACE), "-m", model], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    walk = re.search(r"calls carrying it: (\d+); climbs back up the layers: (\d+)", r.stdout)
    assert walk, r.stdout
    calls, climbs = map(int, walk.groups())
    assert calls >= 20, r.stdout  # the walk was followed: the package read, the engine built
    assert climbs <= MAX_CLIMBS, subprocess.run([sys.executable, "-P", str(TRACE), "-m", model, "--list"],
                                                capture_output=True, text=True).stdout
