"""Recurrent layers over padded batches: packed, so padding never enters a state."""
from __future__ import annotations

import torch
from torch import nn
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
    if rnn.training and torch.is_grad_enabled() and not torch.jit.is_tracing():
        return _run_full_rows_unpacked(rnn, x, lengths)
    return _packed(rnn, x, lengths)


def _packed(rnn: nn.RNNBase, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    seq = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    return pad_packed_sequence(rnn(seq)[0], batch_first=True, total_length=x.size(1))[0]


def _run_full_rows_unpacked(rnn: nn.RNNBase, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """As `_packed`, with the rows that fill all T steps run unpacked.

    The same computation, but the backward pass of a packed CPU RNN materializes a
    zero gradient of the whole packed input at every time step (T^2 memory traffic:
    half of a DRNN-LWMA training step at n=4, m=3, d=256, 128 x 100 tokens, one thread:
    49.3 s, 23.5 s this way). In training most rows are full windows, so only the few
    short ones stay packed.
    """
    full = lengths == x.size(1)  # (B,) on the CPU
    if bool(full.all()):
        return rnn(x)[0]
    if not bool(full.any()):
        return _packed(rnn, x, lengths)
    rows_full, rows_short = full.nonzero()[:, 0], (~full).nonzero()[:, 0]
    out = torch.cat([rnn(x[rows_full.to(x.device)])[0],
                     _packed(rnn, x[rows_short.to(x.device)], lengths[rows_short])])  # (B, T, H) reordered
    order = torch.cat([rows_full, rows_short]).argsort()  # back to the batch's row order
    return out[order.to(x.device)]


def run_masked(rnn: nn.RNNBase, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """`rnn` over the real positions of each row, given as a left-aligned (B, T) mask; padding gives zeros."""
    return run_packed(rnn, x, packed_lengths(mask))
