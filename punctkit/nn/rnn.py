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
    seq = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    return pad_packed_sequence(rnn(seq)[0], batch_first=True, total_length=x.size(1))[0]


def run_masked(rnn: nn.RNNBase, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """`rnn` over the real positions of each row, given as a left-aligned (B, T) mask; padding gives zeros."""
    return run_packed(rnn, x, packed_lengths(mask))
