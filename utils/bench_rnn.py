#!/usr/bin/env python3
"""Time one training pass (forward and backward) of a one-layer BiGRU over a padded batch, packed
against punctkit's training path (punctkit/nn/rnn.py: unpacked on a CPU), the two alternated so
that a machine's load falls on both alike; prints the best of --repeats for each.

    utils/bench_rnn.py --batch 16 --steps 800 --min-steps 400 --input 43 --hidden 128   # frames
    utils/bench_rnn.py --batch 128 --steps 100 --min-steps 60 --input 256 --hidden 256  # words
"""
from __future__ import annotations

import argparse
import time

import torch

from punctkit.nn.rnn import _packed, run_packed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for name, default in (("batch", 16), ("steps", 800), ("min-steps", 400), ("input", 43), ("hidden", 128),
                          ("threads", 1), ("repeats", 3), ("seed", 1)):
        ap.add_argument(f"--{name}", type=int, default=default)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    rnn = torch.nn.GRU(a.input, a.hidden, batch_first=True, bidirectional=True).train()
    x = torch.randn(a.batch, a.steps, a.input, requires_grad=True)
    lengths = torch.randint(a.min_steps, a.steps + 1, (a.batch,))
    best = {"packed": float("inf"), "training path": float("inf")}
    for _ in range(a.repeats):
        for name, fn in (("packed", _packed), ("training path", run_packed)):
            t = time.perf_counter()
            fn(rnn, x, lengths).sum().backward()
            best[name] = min(best[name], time.perf_counter() - t)
    print(f"BiGRU {a.input}->{a.hidden}x2, batch {a.batch} x {a.min_steps}-{a.steps} steps, {a.threads} thread(s): "
          + ", ".join(f"{k} {v:.2f} s" for k, v in best.items()) + f" ({best['packed'] / best['training path']:.1f}x)")


if __name__ == "__main__":
    main()
