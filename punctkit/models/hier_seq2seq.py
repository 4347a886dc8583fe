"""Klejch et al. 2017: punctuation as sequence-to-sequence over words, from text and speech.

Lexical encoder: token embeddings -> BiGRU, states taken at each word.
Acoustic hierarchical encoder: a frame-level BiGRU over the (subsampled) features,
its states gathered at each word's last frame (`word_end_frame`), then a
word-level BiGRU over those. Per-word fusion (punctkit/nn/fusion.py) joins the two;
`modality: lexical|acoustic` keeps one encoder only; `pauses: true` adds the pauses
before and after each word (from the ctm, log(1 + seconds)) to its encoding. The decoder is a GRU over the
label sequence (one label per word, from BOS = `n_labels`) whose input at step t is
the previous label and the encoded word t, with attention over all encoded words.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from punctkit.files import PunctkitError
from punctkit.models.base import Batch, PunctModel, gather_words, select_rows
from punctkit.models.registry import register
from punctkit.nn.attention import MultiHeadAttention
from punctkit.nn.embedding import InputEmbedding
from punctkit.nn.fusion import Fusion
from punctkit.nn.rnn import run_masked


class AcousticEncoder(nn.Module):
    """Frame BiGRU -> states at word-end frames -> word BiGRU: (B, W, 2*hidden)."""

    def __init__(self, feat_dim: int, hidden: int, dropout: float) -> None:
        super().__init__()
        self.frames = nn.GRU(feat_dim, hidden, batch_first=True, bidirectional=True)
        self.words = nn.GRU(2 * hidden, hidden, batch_first=True, bidirectional=True)
        self.drop = nn.Dropout(dropout)

    def forward(self, batch: Batch) -> torch.Tensor:
        h = run_masked(self.frames, batch["feats"], batch["feat_mask"])
        at_words = gather_words(self.drop(h), batch["word_end_frame"])
        return run_masked(self.words, at_words, batch["word_mask"])


@register("hier_seq2seq")
class HierSeq2Seq(PunctModel):
    """Lexical + hierarchical acoustic encoders, per-word fusion, attention GRU decoder.

    Args:
        modality: both | lexical | acoustic.
        fusion: concat | add | max | average | stochastic (punctkit/nn/fusion.py); p: its probability.
        emb_dim, hidden: embedding size and GRU size (each direction) of both encoders.
        dec_hidden: decoder GRU size; label_dim: label embedding size; dropout.
        pauses: add a projection of each word's pauses (batch `pauses`) to its encoding.
    """

    seq2seq = True
    needs = ("tokens", "token_mask", "word_pos", "word_mask", "feats", "feat_mask", "word_end_frame")

    def __init__(self, vocab_size: int, n_labels: int, pad_id: int = 0, embeddings: np.ndarray | None = None,
                 feat_dim: int | None = None, modality: str = "both", fusion: str = "concat", p: float = 0.5,
                 emb_dim: int = 256, hidden: int = 256, dec_hidden: int = 256, label_dim: int = 32,
                 dropout: float = 0.2, freeze_embeddings: bool = False, pauses: bool = False) -> None:
        super().__init__()
        if modality not in ("both", "lexical", "acoustic"):
            raise PunctkitError(f"hier_seq2seq: modality must be both, lexical or acoustic, not '{modality}'")
        if modality != "lexical" and not feat_dim:
            raise PunctkitError("hier_seq2seq: an acoustic modality needs features (feat_dim unknown: "
                                "train with audio: {use: true} on a data dir with feats.scp)")
        self.n_labels, self.bos_id, self.modality = n_labels, n_labels, modality
        if modality == "acoustic":
            self.needs = ("word_mask", "feats", "feat_mask", "word_end_frame")
        elif modality == "lexical":
            self.needs = PunctModel.needs
        if pauses:
            self.needs = tuple(self.needs) + ("pauses",)
        d = 2 * hidden
        self.pause_proj = nn.Linear(2, d) if pauses else None
        if modality != "acoustic":
            self.embed = InputEmbedding(vocab_size, emb_dim, pad_id, embeddings, freeze=freeze_embeddings)
            self.lex = nn.GRU(emb_dim, hidden, batch_first=True, bidirectional=True)
        if modality != "lexical":
            self.ac = AcousticEncoder(int(feat_dim), hidden, dropout)  # type: ignore[arg-type]
        self.fusion = Fusion(fusion, d, d, p) if modality == "both" else None
        enc_dim = self.fusion.out_dim if self.fusion is not None else d
        self.drop = nn.Dropout(dropout)
        self.label_embed = nn.Embedding(n_labels + 1, label_dim)
        self.cell = nn.GRUCell(label_dim + enc_dim, dec_hidden)
        self.attn = MultiHeadAttention(dec_hidden, enc_dim, n_heads=1, d_out=dec_hidden)
        self.hid = nn.Linear(dec_hidden * 2 + enc_dim, dec_hidden)
        self.out = nn.Linear(dec_hidden, n_labels)

    # --- encoder ---
    def encode_words(self, batch: Batch) -> torch.Tensor:
        """(B, W, enc_dim) fused per-word encodings."""
        x_l = x_a = None
        if self.modality != "acoustic":
            h = run_masked(self.lex, self.drop(self.embed(batch["tokens"])), batch["token_mask"])
            x_l = gather_words(h, batch["word_pos"])
        if self.modality != "lexical":
            x_a = self.ac(batch)
        if self.pause_proj is not None:
            p = self.pause_proj(torch.log1p(batch["pauses"].clamp(min=0)))
            x_l, x_a = (x_l + p, x_a) if x_l is not None else (x_l, x_a + p)
        if self.fusion is not None:
            return self.drop(self.fusion(x_l, x_a))
        return self.drop(x_l if x_a is None else x_a)

    def encode(self, batch: Batch) -> dict[str, Any]:
        """Word encodings, their attention keys/values and mask."""
        enc = self.encode_words(batch)
        k, v = self.attn.project_kv(enc)
        return {"words": enc, "k": k, "v": v, "mask": batch["word_mask"]}

    # --- decoder ---
    def step(self, memory: Any, prev: torch.Tensor, state: Any, t: int) -> tuple[torch.Tensor, Any]:
        """Log-probs (N, n_labels) for word t; the state is the GRU hidden state (N, dec_hidden)."""
        word = memory["words"][:, t]
        if state is None:
            state = word.new_zeros(word.size(0), self.cell.hidden_size)
        h = self.cell(torch.cat([self.label_embed(prev), word], dim=-1), state)
        ctx = self.attn.attend(h[:, None], memory["k"], memory["v"], memory["mask"])[:, 0]
        z = torch.tanh(self.hid(torch.cat([h, ctx, word], dim=-1)))
        return torch.log_softmax(self.out(self.drop(z)), dim=-1), h

    def forward(self, batch: Batch) -> torch.Tensor:
        """Logits-like log-probs (B, W, n_labels), teacher-forced on `labels` (greedy without them)."""
        memory = self.encode(batch)
        labels = batch.get("labels")
        W = memory["words"].size(1)
        prev = torch.full((memory["words"].size(0),), self.bos_id, dtype=torch.long, device=memory["mask"].device)
        state, out = None, []
        for t in range(W):
            logp, state = self.step(memory, prev, state, t)
            out.append(logp)
            prev = labels[:, t].clamp(min=0) if labels is not None else logp.argmax(-1)
        return torch.stack(out, dim=1)

    def expand_memory(self, memory: Any, index: torch.Tensor) -> Any:
        return select_rows(memory, index)

    def reorder_state(self, state: Any, index: torch.Tensor) -> Any:
        return select_rows(state, index)
