"""Recurrent layers over padded batches: packed, so padding never enters a state."""
from __future__ import annotations

import torch
from torch import nn
from torch.func import functional_call
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


def packed_lengths(mask: torch.Tensor) -> torch.Tensor:
    """Real positions per row of a left-aligned (B, T) mask, at least 1, on the CPU (as packing wants)."""
    return mask.sum(1).clamp(min=1).cpu()


def run_packed(rnn: nn.RNNBase, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """`rnn` over the first `lengths` steps of each row of `x` (B, T, D); zeros after them.

    A bidirectional RNN's backward direction thus starts at each row's last real step.
    One pack/unpack pair per call: ONNX export turns each pair into a GRU node with
    `sequence_lens` (punctkit/onnx.py), so padded batches stay exact there too.
    """
    if rnn.training and torch.is_grad_enabled() and _unpacks(rnn, x):
        return _run_unpacked(rnn, x, lengths)
    return _packed(rnn, x, lengths)


def _packed(rnn: nn.RNNBase, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    seq = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    return pad_packed_sequence(rnn(seq)[0], batch_first=True, total_length=x.size(1))[0]


# Training on a CPU runs unpacked: the same computation, but the backward pass of a packed CPU RNN
# materializes a zero gradient of the whole packed input at every time step (T^2 memory traffic:
# half of a DRNN-LWMA training step at n=4, m=3, d=256, 128 x 100 tokens on one thread, 49.3 s
# against 23.5 s unpacked; a BiGRU over 16 utterances of 400-800 frames, 7.9 s against 1.1 s: utils/bench_rnn.py).
# Evaluation (and so ONNX export) and CUDA (cuDNN packs natively) stay packed.
_DIRECTION_WEIGHTS = ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0")


def _unpacks(rnn: nn.RNNBase, x: torch.Tensor) -> bool:
    return (x.device.type == "cpu" and rnn.num_layers == 1 and rnn.batch_first
            and not getattr(rnn, "proj_size", 0) and not torch.jit.is_tracing())


def _direction(rnn: nn.RNNBase, x: torch.Tensor, suffix: str) -> torch.Tensor:
    """One direction of `rnn` (its weights named with `suffix`) run left to right over x: (B, T, H)."""
    twin = type(rnn)(rnn.input_size, rnn.hidden_size, bias=rnn.bias, batch_first=True, device="meta")
    names = _DIRECTION_WEIGHTS if rnn.bias else _DIRECTION_WEIGHTS[:2]
    return functional_call(twin, {n: getattr(rnn, n + suffix) for n in names}, (x,))[0]


def _run_unpacked(rnn: nn.RNNBase, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """As `_packed`, over the padded batch: the forward direction reads each row's real steps before
    its padding anyway; the backward one reads each row with its real steps reversed in place."""
    t = torch.arange(x.size(1), device=x.device)[None]  # (1, T)
    last = lengths.to(x.device)[:, None] - 1  # (B, 1)
    pad = t > last  # (B, T)
    outs = [_direction(rnn, x, "")]
    if rnn.bidirectional:
        rev = torch.where(pad, t, last - t)[..., None]  # (B, T, 1) step t of the reversed row; padding stays
        back = _direction(rnn, x.gather(1, rev.expand(-1, -1, x.size(2))), "_reverse")
        outs.append(back.gather(1, rev.expand(-1, -1, back.size(2))))  # reversing twice is the identity
    return torch.cat(outs, -1).masked_fill(pad[..., None], 0.0)  # (B, T, H or 2H)


def run_masked(rnn: nn.RNNBase, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """`rnn` over the real positions of each row, given as a left-aligned (B, T) mask; padding gives zeros."""
    return run_packed(rnn, x, packed_lengths(mask))
