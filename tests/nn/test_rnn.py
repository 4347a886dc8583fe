"""Recurrent layers over padded batches (punctkit/nn/rnn.py): training on a CPU runs them unpacked
(the packed CPU backward is quadratic in the steps), each row's real steps reversed in place for the
backward direction; that must give exactly what the packed run gives, outputs and gradients, the
padding never entering a real step's state."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from punctkit.nn.rnn import _packed, run_packed


def _grads(rnn: nn.RNNBase, x: torch.Tensor, lengths: torch.Tensor, fn) -> tuple[torch.Tensor, ...]:
    x = x.clone().requires_grad_(True)
    rnn.zero_grad()
    out = fn(rnn, x, lengths)
    weights = torch.arange(out.numel(), dtype=out.dtype).reshape(out.shape).sin()  # every position its own weight
    (out * weights).sum().backward()
    return (out.detach(), x.grad, *(p.grad.clone() for p in rnn.parameters()))


@pytest.mark.parametrize("lengths", [[7, 3, 7, 1, 7, 5], [7, 7, 7], [2, 6, 1]], ids=["mixed", "all_full", "all_short"])
@pytest.mark.parametrize("kind,bidirectional,bias", [(nn.GRU, True, True), (nn.LSTM, True, True),
                                                      (nn.GRU, False, True), (nn.GRU, True, False)],
                         ids=["bigru", "bilstm", "gru", "bigru_nobias"])
def test_training_path_equals_packed(kind, bidirectional, bias, lengths):
    torch.manual_seed(0)
    rnn = kind(5, 4, batch_first=True, bidirectional=bidirectional, bias=bias).train()
    lengths = torch.tensor(lengths)
    x = torch.randn(len(lengths), 7, 5)
    got = _grads(rnn, x, lengths, run_packed)
    want = _grads(rnn, x, lengths, _packed)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-6)
    padded = torch.arange(7)[None, :] >= lengths[:, None]
    assert not got[0][padded].any()  # padding gives zeros


def test_backward_direction_starts_at_each_rows_last_step():
    """A short row's outputs equal those of the row alone, cut to its length (the reverse direction
    never reads the padding)."""
    torch.manual_seed(1)
    rnn = nn.GRU(3, 2, batch_first=True, bidirectional=True).train()
    x = torch.randn(3, 6, 3)
    lengths = torch.tensor([6, 4, 6])
    out = run_packed(rnn, x, lengths)
    alone = rnn(x[1:2, :4])[0]
    torch.testing.assert_close(out[1:2, :4], alone)
