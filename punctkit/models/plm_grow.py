"""Layers grown on top of a pre-trained encoder, each behind a gate.

`plm: {..., extra_layers: K}` appends K layers to a Hugging Face encoder: copies of its top K
layers, each wrapped so that

    out = x + (GATE_SCALE · g) ⊙ (layer(x) − x),    g ∈ R^d initialised to 0,

so the grown encoder computes exactly what the encoder did (a fine-tuned student warm-started into
it starts from its own figures), and training opens each gate channel by channel. `GATE_SCALE`
makes the gate move as fast as its layer under Adam (an Adam step moves g by about the learning
rate, so the gate by GATE_SCALE times it; unscaled, a gate at 1e-5 would need 100,000 steps to open).
The copies start from the pre-trained top layers' weights (`train.init` then overwrites only the
names the checkpoint has: the encoder's own layers and the classifier); with `extra_copy: init` they
copy the top layers again once `train.init` has filled them (a fine-tuned student's own layers);
`extra_gate: G` starts the gates at G instead (1: the copies fully applied from the first step).
Growing the converged six-layer accurate student so did not raise valid, whichever copies and gates
(recipes/ted/RESULTS.md, "Grown to nine layers"); MiniLM grown before fine-tuning, gates open
(`extra_layers: 3, extra_gate: 1`), is the shipped accurate model (recipes/ted/conf/train_plm_minilm9_gpu.yaml).
"""
from __future__ import annotations

from copy import deepcopy
from typing import Any

import torch
from torch import nn

from punctkit.files import PunctkitError

GATE_SCALE = 100.0


class GatedLayer(nn.Module):
    """One grown layer: an encoder layer whose change to its input passes through a gate (0 at the start)."""

    def __init__(self, layer: nn.Module, width: int, source: int, copy_init: bool = False,
                 opening: float = 0.0) -> None:
        super().__init__()
        self.layer = layer
        self.gate = nn.Parameter(torch.full((width,), opening / GATE_SCALE))
        self.source = source        # the index of the encoder layer it copies
        self.copy_init = copy_init  # copy it again after train.init

    def forward(self, hidden_states: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        """(B, T, d) -> (B, T, d), as the encoder's own layers are called."""
        out = self.layer(hidden_states, *args, **kwargs)
        h = out[0] if isinstance(out, tuple) else out                       # (B, T, d)
        h = hidden_states + (GATE_SCALE * self.gate) * (h - hidden_states)
        return (h, *out[1:]) if isinstance(out, tuple) else h


def extra_layers(value: Any, available: int) -> int:
    """`plm.extra_layers`, checked: a whole number from 0 to the encoder's depth (each grown layer
    copies one of its top layers)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise PunctkitError(f"model plm extra_layers must be a whole number >= 0, not {value!r}")
    if value > available:
        raise PunctkitError(f"model plm extra_layers: {value}, but the encoder has {available} layers to copy "
                            f"(grow at most that many)")
    return value


COPIES = ("pretrained", "init")


def layer_list(encoder: nn.Module) -> nn.ModuleList | None:
    """A Hugging Face encoder's list of layers (`encoder.encoder.layer`), else None."""
    layers = getattr(getattr(encoder, "encoder", None), "layer", None)
    return layers if isinstance(layers, nn.ModuleList) else None


def grow(encoder: nn.Module, k: int, copy: str = "pretrained", opening: Any = 0.0, where: str = "plm") -> None:
    """Append `k` gated copies of `encoder`'s top `k` layers (in their order) to its layer list;
    `copy`: "init" to copy them again after `train.init` (`copy_after_init`); `opening`: the gates'
    starting value, from 0 (shut: the encoder's own function) to 1 (the copies fully applied)."""
    layers = layer_list(encoder)
    if layers is None:
        raise PunctkitError(f"{where}: extra_layers needs an encoder with a list of layers "
                            f"(BERT, MiniLM, MPNet), not {type(encoder).__name__}")
    n = len(layers)
    k = extra_layers(k, n)
    if copy not in COPIES:
        raise PunctkitError(f"model plm extra_copy must be one of {', '.join(COPIES)}, not {copy!r}")
    if isinstance(opening, bool) or not isinstance(opening, (int, float)) or not 0 <= opening <= 1:
        raise PunctkitError(f"model plm extra_gate must be a number from 0 to 1, not {opening!r}")
    width = encoder.config.hidden_size
    for i in range(n - k, n):
        layers.append(GatedLayer(deepcopy(layers[i]), width, source=i, copy_init=copy == "init",
                                 opening=float(opening)))
    encoder.config.num_hidden_layers = n + k


def grown_parameters(encoder: nn.Module) -> set[int]:
    """ids of the parameters of `encoder`'s grown layers (new, not pre-trained)."""
    return {id(p) for m in encoder.modules() if isinstance(m, GatedLayer) for p in m.parameters()}


def copy_after_init(model: nn.Module) -> list[int]:
    """Copy each grown layer made with `extra_copy: init` from its source layer as it is now (after
    `train.init`); the source indices copied."""
    done = []
    for m in model.modules():
        layers = layer_list(m)
        for g in layers or ():
            if isinstance(g, GatedLayer) and g.copy_init:
                g.layer.load_state_dict(layers[g.source].state_dict())
                done.append(g.source)
    return done
