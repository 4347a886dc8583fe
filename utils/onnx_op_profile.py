#!/usr/bin/env python3
"""Where a packed ONNX tagger's time goes on this CPU: milliseconds a window (one window of
--tokens word pieces, batch 1 as punctuate runs an int8 graph; best of --repeat timed runs after
warm-up) and each operator type's share of the kernel time (onnxruntime's profiler, one more run).

--float-twin also times a float graph and its int8 graph (punctkit.onnx.quantize_graph, as
`pack --int8` makes it) of a BERT encoder of the package's shape (its plm config, grown layers
included) with random weights: a shipped package keeps no float weights, and the time of a graph
depends on its shapes, not its values, so int8 can be weighed against float on a CPU without
VNNI. The CPU's flags are printed first.

    python utils/onnx_op_profile.py punctkit/pretrained/accurate.pkt --tokens 200 --threads 2 --float-twin
"""
from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np


def cpu_flags() -> str:
    """The vector flags of this CPU (Linux's /proc/cpuinfo), as RESULTS.md records them."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown"
    flags = next((ln.split(":", 1)[1].split() for ln in text.splitlines() if ln.startswith("flags")), [])
    model = next((ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith("model name")), "?")
    return f"{model}: " + " ".join(f for f in flags if f.startswith(("avx", "fma", "amx")) or "vnni" in f)


def feed_for(session, tokens: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """One window's inputs: `tokens` word pieces, three words in every four pieces (150 words in 200
    pieces is about what a TED window holds)."""
    words = max(1, tokens * 3 // 4)
    values = {"tokens": rng.integers(1000, 30000, (1, tokens)), "token_mask": np.ones((1, tokens), bool),
              "word_pos": np.sort(rng.choice(tokens, words, replace=False))[None],
              "word_mask": np.ones((1, words), bool)}
    kinds = {"tensor(int64)": np.int64, "tensor(bool)": bool, "tensor(float)": np.float32}
    return {i.name: values[i.name].astype(kinds[i.type]) for i in session.get_inputs()}


def profile(graph: bytes, name: str, tokens: int, threads: int, repeat: int) -> None:
    """Print ms a window and the operator types' shares of `graph`."""
    import onnxruntime as ort

    from punctkit.onnx import session_options

    rng = np.random.default_rng(0)
    session = ort.InferenceSession(graph, session_options(threads), providers=["CPUExecutionProvider"])
    feed = feed_for(session, tokens, rng)
    for _ in range(3):
        session.run(None, feed)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        session.run(None, feed)
        best = min(best, time.perf_counter() - t0)
    with tempfile.TemporaryDirectory(prefix="punctkit-profile-") as tmp:
        opts = session_options(threads)
        opts.enable_profiling = True
        opts.profile_file_prefix = str(Path(tmp) / "profile")
        profiled = ort.InferenceSession(graph, opts, providers=["CPUExecutionProvider"])
        profiled.run(None, feed)
        events = json.loads(Path(profiled.end_profiling()).read_text())
    shares: collections.Counter[str] = collections.Counter()
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            shares[e["args"]["op_name"]] += e["dur"]
    total = sum(shares.values()) or 1
    top = ", ".join(f"{op} {100 * t / total:.1f} %" for op, t in shares.most_common(8))
    print(f"{name}: {1000 * best:.1f} ms a window of {tokens} pieces (best of {repeat}, {threads} threads); {top}")


def float_twin(conf: dict, tokens: int) -> bytes:
    """A float ONNX graph of a randomly initialised BERT of the package's encoder shape, a linear
    head on every piece."""
    import torch
    from transformers import BertConfig, BertModel

    plm = conf["model"]["plm"]
    cfg = dict(plm["config"])
    cfg["num_hidden_layers"] = int(cfg["num_hidden_layers"]) + int(plm.get("extra_layers") or 0)
    bert = BertModel(BertConfig(**{k: v for k, v in cfg.items() if not k.startswith("_")}))

    class Tagger(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert, self.head = bert, torch.nn.Linear(bert.config.hidden_size, 16)

        def forward(self, tokens: torch.Tensor, token_mask: torch.Tensor) -> torch.Tensor:
            return self.head(self.bert(input_ids=tokens, attention_mask=token_mask.long()).last_hidden_state)

    with tempfile.TemporaryDirectory(prefix="punctkit-twin-") as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the exporter's notes on traced branches
        path = Path(tmp) / "twin.onnx"
        x = (torch.randint(1000, 30000, (1, tokens)), torch.ones(1, tokens, dtype=torch.bool))
        torch.onnx.export(Tagger().eval(), x, str(path), input_names=["tokens", "token_mask"],
                          output_names=["logits"], opset_version=17, dynamo=False,
                          dynamic_axes={"tokens": {0: "batch", 1: "tokens"}, "token_mask": {0: "batch", 1: "tokens"}})
        return path.read_bytes()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("package", help="a packed model with an ONNX graph (pack --onnx)")
    ap.add_argument("--tokens", type=int, default=200, help="word pieces a window (default 200)")
    ap.add_argument("--threads", type=int, default=0, help="onnxruntime threads (0: one a usable CPU)")
    ap.add_argument("--repeat", type=int, default=20, help="timed runs; the best is shown (default 20)")
    ap.add_argument("--float-twin", action="store_true", help="also a random BERT of its shape, float and int8")
    a = ap.parse_args()
    from punctkit.files import PunctkitError
    from punctkit.onnx import quantize_graph
    from punctkit.package import read_package

    try:
        pkg = read_package(a.package)
        if getattr(pkg, "onnx", None) is None:
            raise PunctkitError(f"{a.package}: holds no ONNX graph (pack it with --onnx)")
        if a.float_twin and "plm" not in pkg.conf.get("model", {}):
            raise PunctkitError(f"{a.package}: --float-twin needs a pre-trained encoder's model (plm_tagger)")
    except PunctkitError as e:
        print(f"onnx_op_profile.py: error: {e}", file=sys.stderr)
        return 1
    print(cpu_flags())
    profile(pkg.onnx, Path(a.package).name, a.tokens, a.threads, a.repeat)
    if a.float_twin:
        twin = float_twin(pkg.conf, a.tokens)
        profile(twin, "random twin, float", a.tokens, a.threads, a.repeat)
        profile(quantize_graph(twin), "random twin, int8 (pack --int8)", a.tokens, a.threads, a.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
