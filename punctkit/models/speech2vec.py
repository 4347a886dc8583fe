"""Speech2Vec (Chung & Glass 2018): an RNN encoder-decoder over words' acoustic segments.

The encoder (a bidirectional GRU over a word's frames) gives the word one fixed
vector; the decoder (a GRU started from that vector and fed it at every step)
reconstructs the frames of a neighbouring word, skip-gram style. After training,
a word type's vector is the mean of its tokens' encodings. It is not a
punctuation model, so it is not in the model registry: its vectors reach the
punctuation models through the `embeddings: {speech: FILE}` section.
"""
from __future__ import annotations

import torch
from torch import nn

from punctkit.nn.rnn import run_packed


def pad_segments(segs: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, T, D) zero-padded batch of (frames, D) segments and their lengths (on the CPU)."""
    lengths = torch.tensor([len(s) for s in segs])
    out = segs[0].new_zeros(len(segs), int(lengths.max()), segs[0].shape[1])
    for i, s in enumerate(segs):
        out[i, :len(s)] = s
    return out, lengths


class Speech2Vec(nn.Module):
    """BiGRU encoder of a segment -> a `dim` vector; GRU decoder of another segment from it."""

    def __init__(self, feat_dim: int, dim: int = 50, hidden: int = 64) -> None:
        super().__init__()
        self.encoder = nn.GRU(feat_dim, hidden, batch_first=True, bidirectional=True)
        self.to_vec = nn.Linear(2 * hidden, dim)
        self.init = nn.Linear(dim, hidden)
        self.decoder = nn.GRU(feat_dim + dim, hidden, batch_first=True)
        self.out = nn.Linear(hidden, feat_dim)
        self.hidden = hidden

    def encode(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """(B, T, D) segments -> (B, dim): the forward state at each row's last frame and
        the backward state at its first."""
        h = run_packed(self.encoder, x, lengths)
        last = (lengths - 1).clamp(min=0).to(x.device)
        fwd = h[torch.arange(len(x), device=x.device), last, :self.hidden]
        bwd = h[:, 0, self.hidden:]
        return self.to_vec(torch.cat([fwd, bwd], dim=-1))

    def decode(self, z: torch.Tensor, y: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Reconstruction of the (B, T, D) targets `y` from vectors `z` (B, dim), teacher-forced:
        step t sees the target frame t-1 (zeros at t = 0) and z."""
        prev = torch.cat([torch.zeros_like(y[:, :1]), y[:, :-1]], dim=1)
        inp = torch.cat([prev, z.unsqueeze(1).expand(-1, y.size(1), -1)], dim=-1)
        h0 = torch.tanh(self.init(z)).unsqueeze(0)
        seq = nn.utils.rnn.pack_padded_sequence(inp, lengths, batch_first=True, enforce_sorted=False)
        h = nn.utils.rnn.pad_packed_sequence(self.decoder(seq, h0)[0], batch_first=True, total_length=y.size(1))[0]
        return self.out(h)

    def loss(self, x: torch.Tensor, x_len: torch.Tensor, y: torch.Tensor, y_len: torch.Tensor) -> torch.Tensor:
        """Mean squared error of the neighbours' frames `y` decoded from the centre words `x`."""
        pred = self.decode(self.encode(x, x_len), y, y_len)
        mask = (torch.arange(y.size(1)).unsqueeze(0) < y_len.unsqueeze(1)).to(y.device).unsqueeze(-1)
        return ((pred - y) ** 2 * mask).sum() / (mask.sum() * y.size(-1))
