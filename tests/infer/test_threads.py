"""Default CPU threads that hold on a busy machine (issue 33, RESULTS.md "Load"): onnxruntime
sessions whose pools never spin-wait and pin nothing, sized by the CPUs this process may use;
torch loaded with OpenMP threads that sleep while they wait. Settings only: nothing is timed."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from punct_util import tiny_conf, train_tiny
from punctkit.packing import pack

pytest.importorskip("onnxruntime", reason="the onnx extra (onnxruntime) is not installed")
from punctkit.onnx import SPIN_KEYS, OnnxTagger, usable_cpus  # noqa: E402

TINY = tiny_conf({"type": "drnn_lwma", "n_layers": 1, "n_heads": 1, "d_model": 16}, epochs=1)


@pytest.fixture(scope="module")
def pkt(tmp_path_factory):
    """A tiny DRNN-LWMA (one epoch on 1000 words) packed with its ONNX graph."""
    d = tmp_path_factory.mktemp("threads")
    pack(train_tiny(d, TINY, train_lines=1000), d / "m.pkt", onnx=True)
    return d / "m.pkt"


def settings(tagger: OnnxTagger) -> tuple[int, list[str]]:
    """The session's intra-op thread count and its spinning entries."""
    opts = tagger.session.get_session_options()
    return opts.intra_op_num_threads, [opts.get_session_config_entry(k) for k in SPIN_KEYS]


def test_onnx_sessions_never_spin_and_default_to_the_usable_cpus(pkt):
    """A recurrent graph's default is the usable CPUs others leave free, at least one (tests/test_onnx_threads.py)."""
    from punctkit import load_model

    threads, spin = settings(load_model(pkt, backend="onnx").scorer.runner.tagger)
    assert 1 <= threads <= usable_cpus() and spin == ["0", "0"]
    assert settings(load_model(pkt, backend="onnx", threads=3).scorer.runner.tagger) == (3, ["0", "0"])


def test_the_default_follows_the_affinity_mask(pkt):
    """A process confined to one CPU (taskset, a cpuset) runs one thread, not one per core of the machine."""
    from punctkit.package import read_package

    mask = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(mask)})  # this thread only; restored below
    try:
        assert usable_cpus() == 1
        assert settings(OnnxTagger(read_package(pkt).onnx)) == (1, ["0", "0"])
    finally:
        os.sched_setaffinity(0, mask)


@pytest.mark.parametrize("threads", [0, 3])
def test_members_side_by_side_share_the_threads(pkt, threads):
    from punctkit import load_model

    ens = load_model([pkt, pkt], threads=threads).scorer
    assert ens.shared is not None
    share = max(1, (threads or usable_cpus()) // 2)
    assert [settings(m.runner.tagger) for m in ens.members] == [(share, ["0", "0"])] * 2


# What OMP_WAIT_POLICY says at the moment torch is first imported, in a fresh process that loads
# the package with the torch backend (OpenMP reads it then, once).
AT_TORCH_IMPORT = """
import os, sys
seen = []
sys.addaudithook(lambda event, args: event == "import" and args[0] == "torch" and not seen
                 and seen.append(os.environ.get("OMP_WAIT_POLICY", "unset")))
from punctkit import load_model
load_model(sys.argv[1], backend="torch")
print(seen[0] if seen else "torch not imported")
"""


@pytest.mark.parametrize("policy, want", [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_torch_loads_with_openmp_threads_that_sleep_unless_told(pkt, policy, want):
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if policy:
        env["OMP_WAIT_POLICY"] = policy
    r = subprocess.run([sys.executable, "-c", AT_TORCH_IMPORT, str(pkt)], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [want]
