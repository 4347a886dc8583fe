"""The default thread count under load (issue 81, RESULTS.md "Load"): a recurrent graph (the fast model's GRUs) runs
one thread a CPU that other processes leave free, read from /proc/stat; a graph without recurrent layers (the accurate
model) every usable CPU. The choice is read on real samples and real graphs; nothing is timed."""
from __future__ import annotations

import os
import subprocess
import sys
import time
import zipfile

import pytest

pytest.importorskip("onnxruntime", reason="the onnx extra (onnxruntime) is not installed")
from punctkit.onnx import (  # noqa: E402
    OnnxTagger,
    cpu_sample,
    default_threads,
    free_cpus,
    recurrent_graph,
    usable_cpus,
)
from punctkit.pretrained import shipped_path  # noqa: E402

LINUX = pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="no /proc/stat on this system")


def graph(name: str) -> bytes:
    """A shipped model's ONNX graph."""
    with zipfile.ZipFile(shipped_path(name)) as z:
        return z.read("model.onnx")


def stat(busy: int, idle: int) -> str:
    """/proc/stat's text with every usable CPU at `busy` user ticks and `idle` idle ticks."""
    lines = [f"cpu  {busy * 2} 0 0 {idle * 2} 0 0 0 0 0 0"]
    lines += [f"cpu{c} {busy} 0 0 {idle} 0 0 0 0 0 0" for c in sorted(os.sched_getaffinity(0))]
    return "\n".join(lines + ["intr 1 2 3", "ctxt 42"]) + "\n"


def test_the_shipped_graphs_are_told_apart():
    assert recurrent_graph(graph("fast"))  # DRNN-LWMA: GRU nodes
    assert not recurrent_graph(graph("accurate"))  # a transformer: matrix products only


@LINUX
def test_free_cpus_are_the_usable_ones_less_what_others_keep_busy():
    n = usable_cpus()
    before = cpu_sample(stat(busy=1000, idle=1000))
    half = cpu_sample(stat(busy=1000 + 50, idle=1000 + 50))  # others: half of every CPU's ticks
    idle = cpu_sample(stat(busy=1000, idle=1000 + 100))
    held = cpu_sample(stat(busy=1000 + 100, idle=1000))
    # (this process's own ticks between two samples, a tick or two here, count as free)
    assert free_cpus(before, half, n) == pytest.approx(n * 0.5, abs=0.1)
    assert free_cpus(before, idle, n) == pytest.approx(n)
    assert free_cpus(before, held, n) <= 0.05 * n
    assert free_cpus(before, before, n) == n  # no time passed: nothing known, every CPU


@LINUX
def test_a_recurrent_graph_runs_one_thread_beside_busy_loops_and_a_transformer_every_cpu():
    n = usable_cpus()
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        time.sleep(0.5)  # the loops running
        assert default_threads(recurrent=True) == 1
        assert default_threads(recurrent=False) == n
        opts = OnnxTagger(graph("accurate")).session.get_session_options()
        assert opts.intra_op_num_threads == n
    finally:
        for p in loops:
            p.kill()
            p.wait()


def test_a_given_thread_count_is_obeyed_whatever_the_graph():
    for name in ("fast", "accurate"):
        assert OnnxTagger(graph(name), threads=3).session.get_session_options().intra_op_num_threads == 3
