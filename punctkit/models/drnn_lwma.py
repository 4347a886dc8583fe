"""DRNN-LWMA: deep recurrent network with layer-wise multi-head attention (Kim 2019).

Tokens -> embedding -> n stacked BiGRU layers H^1..H^n (d per direction, so 2d per
layer) -> a unidirectional GRU over H^n whose state s_t (size d) is the query ->
for every layer i and head j, f^{i,j} = Attn(s W_Q^{i,j}, H^i W_K^{i,j}, H^i W_V^{i,j})
with every head of size d -> softmax([s_t, f^{1,1}, ..., f^{n,m}] W_y + b_y).
n_layers=1, n_heads=1 is the T-BRNN-like baseline of the paper.

Sequences are packed, so padding never enters a bidirectional state, and padded
tokens are masked out of the attention. Queries are taken only at each word's
label-carrying token (the outputs elsewhere would be thrown away).

`direction: uni, delay: L` (streaming with bounded look-ahead, issue #19): every
recurrent layer runs left to right only (d per layer instead of 2d), word t is
labelled from the states at the label-carrying token of word min(t + L, last word),
and its attention reads only the tokens up to that one. So word t's logits never
depend on anything after word t + L: the model has at most L words of right context
by construction. `direction: bi` (the default) is the paper's model, unchanged.

`boundary_input: true` (issue #79): what the input says follows each word, a speaker turn change and the pause
(decode/boundary.py's boundary ids, batch key `boundaries`), is an input: a learnt vector per boundary id is added
to the embedding of the word's label-carrying token. The table starts at zero and its row 0 (nothing known) stays
zero, so such a model warm-started from one without it computes what that one did, and text without turns or times
is read as by the network alone.
"""
from __future__ import annotations

import numpy as np
import torch
from torch import nn

from punctkit.data.boundaries import N_BOUNDARIES, NOTHING
from punctkit.files import PunctkitError
from punctkit.models.base import Batch, PunctModel, gather_words, token_boundaries
from punctkit.models.registry import register
from punctkit.nn.attention import MultiHeadAttention
from punctkit.nn.embedding import InputEmbedding
from punctkit.nn.rnn import packed_lengths, run_packed


def check_direction(direction: str, delay: int) -> None:
    """A one-line error for a `direction`/`delay` pair the model cannot take."""
    if direction not in ("bi", "uni"):
        raise PunctkitError(f"model: direction must be 'bi' or 'uni', not {direction!r}")
    if isinstance(delay, bool) or not isinstance(delay, int) or delay < 0:
        raise PunctkitError(f"model: delay must be a number of words >= 0, not {delay!r}")
    if direction == "bi" and delay:
        raise PunctkitError("model: delay bounds the right context of direction: uni; add direction: uni or drop delay")


@register("drnn_lwma")
class DRNNLWMA(PunctModel):
    """Stacked BiGRU (or left-to-right GRU) + query GRU + layer-wise multi-head attention tagger.

    Args:
        n_layers: number of recurrent layers (n).
        n_heads: attention heads per layer (m).
        d_model: hidden size d (per direction, the query GRU and every head).
        dropout: dropout on the embeddings, every recurrent layer and the classifier input.
        attend: "all" (layer-wise, the paper) or "top" (only the last recurrent layer).
        freeze_embeddings: keep pre-trained vectors fixed (the paper fine-tunes them).
        direction: "bi" (the paper) or "uni" (left-to-right layers, for streaming).
        delay: with direction "uni", the words of right context L each word's label may use.
        boundary_input: read batch key `boundaries` (B, W), the boundary id after each word (see the module).
    """

    def __init__(
        self,
        vocab_size: int,
        n_labels: int,
        pad_id: int = 0,
        embeddings: np.ndarray | None = None,
        n_layers: int = 4,
        n_heads: int = 3,
        d_model: int = 256,
        dropout: float = 0.5,
        attend: str = "all",
        freeze_embeddings: bool = False,
        direction: str = "bi",
        delay: int = 0,
        boundary_input: bool = False,
    ) -> None:
        super().__init__()
        if attend not in ("all", "top"):
            raise ValueError(f"attend must be 'all' or 'top', not {attend!r}")
        check_direction(direction, delay)
        self.direction, self.delay = direction, int(delay)
        d = d_model
        width = 2 * d if direction == "bi" else d  # size of every recurrent layer's output
        self.embed = InputEmbedding(vocab_size, d, pad_id, embeddings, freeze=freeze_embeddings)
        if boundary_input:  # registered only when on: a model without it keeps its state dict and graph
            self.boundary = nn.Embedding(N_BOUNDARIES, d, padding_idx=NOTHING)
            nn.init.zeros_(self.boundary.weight)  # zero: the network as it was until training moves it
            self.needs = (*PunctModel.needs, "boundaries")
        self.boundary_input = bool(boundary_input)
        self.drop = nn.Dropout(dropout)
        # named `birnns` in both directions, so that the state-dict keys of `bi` models stay as they were
        self.birnns = nn.ModuleList(
            nn.GRU(d if i == 0 else width, d, batch_first=True, bidirectional=direction == "bi")
            for i in range(n_layers)
        )
        self.query_rnn = nn.GRU(width, d, batch_first=True)
        self.attended = list(range(n_layers)) if attend == "all" else [n_layers - 1]
        self.attns = nn.ModuleList(
            MultiHeadAttention(d, width, n_heads=n_heads, d_head=d) for _ in self.attended
        )
        self.out = nn.Linear(d + len(self.attended) * n_heads * d, n_labels)

    def encode_layers(self, batch: Batch) -> tuple[list[torch.Tensor], torch.Tensor]:
        """Return every recurrent layer's outputs (B, T, 2d; d when uni) and the query GRU states (B, T, d)."""
        tokens, mask = batch["tokens"], batch["token_mask"]
        lengths = packed_lengths(mask)  # one pack per layer keeps the layers exportable (punctkit/onnx.py)
        x = self.embed(tokens)  # (B, T, d)
        if self.boundary_input and "boundaries" in batch:  # absent: nothing known anywhere (row 0 is zero)
            x = x + self.boundary(token_boundaries(batch))
        x = self.drop(x)
        layers = []
        for rnn in self.birnns:
            x = self.drop(run_packed(rnn, x, lengths))
            layers.append(x)
        return layers, run_packed(self.query_rnn, x, lengths)

    def label_positions(self, batch: Batch) -> torch.Tensor:
        """(B, W) index of the token whose states label each word: its own label-carrying token
        (bi), or that of word min(t + delay, last word of the row) (uni)."""
        word_pos = batch["word_pos"]  # (B, W)
        if self.direction == "bi":
            return word_pos
        last = (batch["word_mask"].sum(1, keepdim=True) - 1).clamp(min=0)  # (B, 1) last real word
        t = torch.ones_like(word_pos).cumsum(1) - 1  # (B, W) word indices; not arange, so W stays dynamic in ONNX
        return word_pos.gather(1, torch.minimum(t + self.delay, last))

    def classify(self, layers: list[torch.Tensor], s: torch.Tensor, batch: Batch) -> torch.Tensor:
        """Per-word logits from the layer outputs and the query states."""
        pos = self.label_positions(batch)  # (B, W)
        q = gather_words(s, pos)  # (B, W, d)
        attn_mask = None
        if self.direction == "uni":
            tok = torch.ones_like(batch["tokens"]).cumsum(1) - 1  # (B, T) token indices
            attn_mask = tok[:, None, :] <= pos[:, :, None]  # (B, W, T): word t reads tokens up to pos[t] only
        feats = [q]
        for i, attn in zip(self.attended, self.attns):
            feats.append(attn(q, layers[i], key_mask=batch["token_mask"], attn_mask=attn_mask))
        return self.out(self.drop(torch.cat(feats, dim=-1)))

    def forward(self, batch: Batch) -> torch.Tensor:
        """Logits (B, W, n_labels)."""
        layers, s = self.encode_layers(batch)
        return self.classify(layers, s, batch)
