#!/usr/bin/env python3
"""Gradient and activation scales of a Transformer tagger while it trains (issue #15 diagnostics).

Trains CONFIG (with --set overrides) as `punctkit train` does and, at a few steps (from step 2: the hooks go on
after the first), prints one JSON line: the gradient norm of each parameter group before clipping (embedding,
local convolution, each encoder layer, output layer), the RMS of the token embeddings,
of the position vectors and of the encoder input, and for the first and last encoder
layers how local their self-attention is (the mean attention mass on the 5 tokens at
distance <= 2, 5/T for uniform attention) and its entropy in nats.

    local/transformer_scales.py CONFIG data/train data/valid EXP [--steps 2,10,50,100,168] [--set k=v ...]
    local/transformer_scales.py - - data/valid EXP --trained    # locality of every layer of a trained EXP
"""
from __future__ import annotations

import argparse
import json
import math
from collections import defaultdict

import torch

from punctkit.train.trainer import Trainer, train


def group_of(name: str) -> str:
    """Parameter name -> its group: embed, conv, pos, norm_in, layerN, final_norm, out."""
    parts = name.split(".")
    if parts[:2] == ["encoder", "encoder"]:
        return f"layer{parts[3]}" if parts[2] == "layers" else "final_norm"
    if parts[0] == "encoder":
        return parts[1]
    return parts[0]


def attention_stats(key: str, layer: torch.nn.Module, x: torch.Tensor, pad: torch.Tensor) -> dict[str, float]:
    """How local an encoder layer's self-attention is on input x (B, T, d): per head, the mean attention
    mass on the 5 tokens at distance <= 2 and the entropy (nats); reported as the mean over heads, the
    most local head's mass, and the entropy of uniform attention for comparison."""
    with torch.no_grad():
        h = layer.norm1(x) if layer.norm_first else x
        _, w = layer.self_attn(h, h, h, key_padding_mask=pad, need_weights=True,
                               average_attn_weights=False)  # (B, H, T, T)
    t = torch.arange(x.size(1), device=x.device)
    near = ((t[:, None] - t[None, :]).abs() <= 2).float()
    real = (~pad).float()[:, None, :]  # (B, 1, T) queries that are real tokens
    n = real.sum()
    mass = ((w * near).sum(-1) * real).sum((0, 2)) / n  # (H,)
    ent = (-(w.clamp_min(1e-12).log() * w).sum(-1) * real).sum((0, 2)) / n  # (H,)
    lengths = real.sum(-1)  # (B, 1)
    return {f"{key}_local_mass": round(float(mass.mean()), 4),
            f"{key}_local_mass_max_head": round(float(mass.max()), 4),
            f"{key}_entropy": round(float(ent.mean()), 3),
            f"{key}_uniform_entropy": round(float((lengths.log() * lengths).sum() / n), 3)}


def trained_locality(exp: str, valid_dir: str, n_windows: int = 32) -> None:
    """Attention locality of every encoder layer of a trained tagger (model.avg.pt) on valid windows."""
    from punctkit.batch import collate
    from punctkit.data.datadir import read_data_dir
    from punctkit.data.streams import WindowDataset, make_streams, train_windows
    from punctkit.expdir import load_experiment_model

    model, frontend, inventory, conf = load_experiment_model(exp)
    streams = make_streams(read_data_dir(valid_dir), inventory)
    ds = WindowDataset(streams, frontend, windows=train_windows(streams, conf["train"]["window"], 1, 1))
    b = collate([ds[i] for i in range(min(n_windows, len(ds)))], frontend.pad_id)
    enc, pad = model.encoder, ~b["token_mask"]
    out = {"exp": exp}
    with torch.no_grad():
        x = enc.inputs(b["tokens"], b["token_mask"])
        for i, layer in enumerate(enc.encoder.layers):
            out.update(attention_stats(f"layer{i}", layer, x, pad))
            x = layer(x, src_key_padding_mask=pad)
    print(json.dumps(out), flush=True)


class Probe:
    """Hooks on a TransformerTagger: pre-clip gradient norms and activation statistics."""

    def __init__(self, model: torch.nn.Module, steps: set[int]) -> None:
        self.model, self.steps, self.step = model, steps, 0
        self.sq: dict[str, float] = defaultdict(float)
        self.acts: dict[str, float] = {}
        for name, p in model.named_parameters():
            if p.requires_grad:
                p.register_hook(self._grad_hook(group_of(name)))
        enc = model.encoder
        enc.embed.register_forward_hook(lambda m, i, o: self._rms("embed_rms", o))
        enc.encoder.register_forward_pre_hook(lambda m, args, kw: self._encoder_in(args, kw), with_kwargs=True)

    def _grad_hook(self, group: str):
        def hook(g: torch.Tensor) -> None:
            if self.step + 1 in self.steps:
                self.sq[group] += float(g.float().pow(2).sum())
        return hook

    def _rms(self, key: str, x: torch.Tensor) -> None:
        if self.model.training and self.step + 1 in self.steps:
            self.acts[key] = round(float(x.detach().pow(2).mean().sqrt()), 4)

    def _encoder_in(self, args: tuple, kw: dict) -> None:
        if not (self.model.training and self.step + 1 in self.steps):
            return
        x, pad = args[0].detach(), kw["src_key_padding_mask"]
        self._rms("encoder_in_rms", x)
        pos = self.model.encoder.pos.positions(0, x.size(1), x.device)
        self.acts["pos_rms"] = round(float(pos.detach().pow(2).mean().sqrt()), 4)
        layers = self.model.encoder.encoder.layers
        layers.eval()  # no dropout on the weights measured, and no random numbers drawn from training's stream
        with torch.no_grad():
            for i, layer in enumerate(layers):
                if i in (0, len(layers) - 1):
                    self.acts.update(attention_stats(f"layer{i}", layer, x, pad))
                x = layer(x, src_key_padding_mask=pad)
        layers.train()

    def __call__(self, trainer: Trainer) -> None:
        self.step += 1
        if self.step in self.steps:
            grads = {k: round(math.sqrt(v), 4) for k, v in sorted(self.sq.items())}
            total = round(math.sqrt(sum(self.sq.values())), 4)
            print(json.dumps({"step": self.step, "loss": round(trainer.last_loss, 4), "lr": trainer.schedule.lr,
                              "grad_total": total, "grad": grads, **self.acts}), flush=True)
        self.sq.clear()
        self.acts = {}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config")
    ap.add_argument("train_dir")
    ap.add_argument("valid_dir")
    ap.add_argument("exp")
    ap.add_argument("--steps", default="2,10,50,100,168")
    ap.add_argument("--set", action="append", default=[], dest="overrides")
    ap.add_argument("--trained", action="store_true", help="no training: the attention locality of the trained "
                    "model in EXP on windows of valid_dir (config and train_dir unused)")
    a = ap.parse_args()
    if a.trained:
        return trained_locality(a.exp, a.valid_dir)
    steps = {int(s) for s in a.steps.split(",")}
    probes: list[Probe] = []

    def on_step(trainer: Trainer) -> None:
        if not probes:  # the model exists once training runs: hooks go on after step 1, record from step 2
            probes.append(Probe(trainer.model, steps))
            probes[0].step = 1
            return
        probes[0](trainer)

    train(a.config, a.train_dir, a.valid_dir, a.exp, overrides=a.overrides, quiet=True, on_step=[on_step])


if __name__ == "__main__":
    main()
