"""Self-attention models over tokens: an encoder-only tagger and the encoder-decoder of Yi & Tao 2019.

`transformer_tagger`: Transformer encoder + a linear classifier at each word's
label-carrying token (the fast variant).

`transformer_seq2seq`: the encoder, and a decoder whose target is the label
sequence, one label per input word, starting from BOS (id `n_labels`). With
`aligned_input` (default) the decoder input for word t also gets the encoder state
at word t's token, so the decoder does not have to learn to find word t by
cross-attention alone; `aligned_input: false` is the paper's plain encoder-decoder.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from punctkit.files import PunctkitError
from punctkit.models.base import Batch, PunctModel, gather_words, select_rows
from punctkit.models.registry import register
from punctkit.nn.embedding import InputEmbedding
from punctkit.nn.rnn import run_masked
from punctkit.nn.transformer import PositionalEncoding, TransformerDecoder, transformer_encoder


class TokenEncoder(nn.Module):
    """Embedding (learned or pre-trained, projected) [+ local convolution] [+ BiGRU layers]
    + positions [+ LayerNorm] + Transformer encoder.

    `local_conv` k > 0 puts one 1-D convolution of width k over the embeddings before the
    encoder: each token then starts with its k-1 neighbours mixed in, the locality bias
    that self-attention lacks and that 266k training words do not teach it quickly
    (RESULTS.md, "Why the Transformers learned slowly"). `embed_std` (BERT: 0.02) and
    `input_norm` (LayerNorm on embeddings + positions, as BERT) set the input scale.
    `rnn_layers` n > 0 runs n bidirectional GRU layers (d_model/2 per direction) under the
    self-attention: every token's input then carries its whole left and right context in
    order, a stronger locality bias than the convolution (as in Kim 2019's BiGRU under attention).
    """

    def __init__(
        self,
        *,
        vocab_size: int,
        pad_id: int,
        embeddings: np.ndarray | None,
        freeze_embeddings: bool,
        d_model: int,
        n_heads: int,
        d_ff: int,
        n_layers: int,
        dropout: float,
        positions: str,
        max_len: int,
        norm_first: bool,
        local_conv: int = 0,
        embed_std: float | None = None,
        input_norm: bool = False,
        rnn_layers: int = 0,
    ) -> None:
        super().__init__()
        if rnn_layers < 0 or (rnn_layers and d_model % 2):
            raise PunctkitError(f"rnn_layers must be >= 0 (with an even d_model), not {rnn_layers}")
        if local_conv < 0 or (local_conv and local_conv % 2 == 0):
            raise PunctkitError(f"local_conv must be 0 (off) or an odd width, not {local_conv}")
        self.embed = InputEmbedding(vocab_size, d_model, pad_id, embeddings, freeze=freeze_embeddings)
        if embed_std is not None and embeddings is None:
            nn.init.normal_(self.embed.embed.weight, std=embed_std)
            with torch.no_grad():
                self.embed.embed.weight[pad_id] = 0.0
        self.conv = nn.Conv1d(d_model, d_model, local_conv, padding=local_conv // 2) if local_conv else None
        self.rnns = nn.ModuleList(
            nn.GRU(d_model, d_model // 2, batch_first=True, bidirectional=True) for _ in range(rnn_layers)
        )
        self.pos = PositionalEncoding(d_model, positions, max_len, dropout=0.0)
        self.norm = nn.LayerNorm(d_model) if input_norm else nn.Identity()
        self.drop = nn.Dropout(dropout)
        self.encoder = transformer_encoder(d_model, n_heads, d_ff, n_layers, dropout, norm_first)

    def inputs(self, tokens: torch.Tensor, token_mask: torch.Tensor) -> torch.Tensor:
        """(B, T) ids -> (B, T, d_model) encoder inputs."""
        x = self.embed(tokens)  # (B, T, d)
        if self.conv is not None:
            x = x.masked_fill(~token_mask[..., None], 0.0)  # padding adds nothing to its neighbours
            x = self.conv(x.transpose(1, 2)).transpose(1, 2)  # (B, d, T) -> (B, T, d)
        for rnn in self.rnns:
            x = self.drop(run_masked(rnn, x, token_mask))  # (B, T, 2 * d/2)
        return self.drop(self.norm(self.pos(x)))

    def forward(self, tokens: torch.Tensor, token_mask: torch.Tensor) -> torch.Tensor:
        """(B, T) ids -> (B, T, d_model) states; padded tokens are not attended to."""
        return self.encoder(self.inputs(tokens, token_mask), src_key_padding_mask=~token_mask)


@register("transformer_tagger")
class TransformerTagger(PunctModel):
    """Transformer encoder + linear classifier per word.

    Args:
        n_layers, d_model, n_heads, d_ff, dropout: encoder size (Vaswani 2017 names).
        positions: "sinusoidal" or "learned" (then at most `max_len` tokens).
        norm_first: pre-LayerNorm layers (more stable on short schedules) or post-LN (the paper).
        freeze_embeddings: keep pre-trained vectors fixed.
        local_conv: width (odd) of a 1-D convolution over the embeddings before the encoder; 0: none.
        embed_std: std of the learned embeddings' normal init (BERT: 0.02); None: torch's N(0, 1).
        input_norm: LayerNorm on embeddings + positions, before the encoder (BERT).
        rnn_layers: bidirectional GRU layers under the self-attention; 0: none.
        The CPU-size configs set local_conv 5, embed_std 0.02, input_norm, learned positions
        (RESULTS.md, "Why the Transformers learned slowly"); the defaults of these four are the
        papers' (off), but `norm_first` defaults to pre-LN (and the encoder-decoder's `aligned_input`
        to on), unlike the papers: the `*_paper.yaml` configs set both back (post-LN, plain input).
    """

    def __init__(
        self,
        vocab_size: int,
        n_labels: int,
        pad_id: int = 0,
        embeddings: np.ndarray | None = None,
        n_layers: int = 6,
        d_model: int = 512,
        n_heads: int = 8,
        d_ff: int = 2048,
        dropout: float = 0.1,
        positions: str = "sinusoidal",
        max_len: int = 1024,
        norm_first: bool = True,
        freeze_embeddings: bool = True,
        local_conv: int = 0,
        embed_std: float | None = None,
        input_norm: bool = False,
        rnn_layers: int = 0,
    ) -> None:
        super().__init__()
        self.encoder = TokenEncoder(
            vocab_size=vocab_size, pad_id=pad_id, embeddings=embeddings, freeze_embeddings=freeze_embeddings,
            d_model=d_model, n_heads=n_heads, d_ff=d_ff, n_layers=n_layers, dropout=dropout, positions=positions,
            max_len=max_len, norm_first=norm_first, local_conv=local_conv, embed_std=embed_std,
            input_norm=input_norm, rnn_layers=rnn_layers,
        )
        self.drop = nn.Dropout(dropout)
        self.out = nn.Linear(d_model, n_labels)

    def forward(self, batch: Batch) -> torch.Tensor:
        """Logits (B, W, n_labels)."""
        h = self.encoder(batch["tokens"], batch["token_mask"])
        return self.out(self.drop(gather_words(h, batch["word_pos"])))


@register("transformer_seq2seq")
class TransformerSeq2Seq(PunctModel):
    """Encoder over tokens, decoder over labels (one per word), Yi & Tao 2019.

    Args:
        n_layers: encoder layers; n_dec_layers: decoder layers (default: n_layers).
        d_model, n_heads, d_ff, dropout, positions, max_len, norm_first: as the tagger.
        local_conv, embed_std, input_norm, rnn_layers: the encoder's input, as the tagger.
        aligned_input: add the encoder state of word t to the decoder input at step t.
        freeze_embeddings: keep pre-trained vectors fixed (the paper freezes them).
    """

    seq2seq = True

    def __init__(
        self,
        vocab_size: int,
        n_labels: int,
        pad_id: int = 0,
        embeddings: np.ndarray | None = None,
        n_layers: int = 6,
        n_dec_layers: int | None = None,
        d_model: int = 512,
        n_heads: int = 8,
        d_ff: int = 2048,
        dropout: float = 0.1,
        positions: str = "sinusoidal",
        max_len: int = 1024,
        norm_first: bool = True,
        aligned_input: bool = True,
        freeze_embeddings: bool = True,
        local_conv: int = 0,
        embed_std: float | None = None,
        input_norm: bool = False,
        rnn_layers: int = 0,
    ) -> None:
        super().__init__()
        self.n_labels = n_labels
        self.bos_id = n_labels
        self.aligned_input = aligned_input
        self.encoder = TokenEncoder(
            vocab_size=vocab_size, pad_id=pad_id, embeddings=embeddings, freeze_embeddings=freeze_embeddings,
            d_model=d_model, n_heads=n_heads, d_ff=d_ff, n_layers=n_layers, dropout=dropout, positions=positions,
            max_len=max_len, norm_first=norm_first, local_conv=local_conv, embed_std=embed_std,
            input_norm=input_norm, rnn_layers=rnn_layers,
        )
        self.label_embed = nn.Embedding(n_labels + 1, d_model)
        self.dec_pos = PositionalEncoding(d_model, positions, max_len, dropout)
        self.decoder = TransformerDecoder(
            d_model, n_heads, d_ff, n_dec_layers or n_layers, dropout, norm_first
        )
        self.out = nn.Linear(d_model, n_labels)

    # --- encoder ---
    def encode(self, batch: Batch) -> dict[str, Any]:
        """Decoder cross-attention keys/values of the encoder output, its mask, and the states at each word."""
        enc = self.encoder(batch["tokens"], batch["token_mask"])
        return {
            "kv": self.decoder.memory_kv(enc),
            "mask": batch["token_mask"],
            "words": gather_words(enc, batch["word_pos"]),
        }

    def dec_input(self, prev: torch.Tensor, words: torch.Tensor) -> torch.Tensor:
        x = self.label_embed(prev)
        return x + words if self.aligned_input else x

    # --- teacher-forced training ---
    def forward(self, batch: Batch) -> torch.Tensor:
        """Logits (B, W, n_labels), teacher-forced on `labels`; without labels, greedy log-probs."""
        labels = batch.get("labels")
        if labels is None:
            return self._greedy_logprobs(self.encode(batch), batch["word_pos"].size(1))
        enc = self.encoder(batch["tokens"], batch["token_mask"])
        bos = torch.full_like(labels[:, :1], self.bos_id)
        prev = torch.cat([bos, labels[:, :-1].clamp(min=0)], dim=1)  # -100 (unscored) fed as O
        x = self.dec_pos(self.dec_input(prev, gather_words(enc, batch["word_pos"])))
        return self.out(self.decoder(x, enc, batch["token_mask"]))

    def _greedy_logprobs(self, memory: dict[str, Any], n_words: int) -> torch.Tensor:
        words = memory["words"]
        prev = torch.full((words.size(0),), self.bos_id, dtype=torch.long, device=words.device)
        state, out = None, []
        for t in range(n_words):
            logp, state = self.step(memory, prev, state, t)
            out.append(logp)
            prev = logp.argmax(-1)
        return torch.stack(out, dim=1) if out else words.new_zeros(words.size(0), 0, self.n_labels)

    # --- incremental decoding for beam search ---
    def step(self, memory: Any, prev: torch.Tensor, state: Any, t: int) -> tuple[torch.Tensor, Any]:
        """Log-probs (N, n_labels) for word t; the state is the per-layer self-attention cache."""
        x = self.dec_input(prev[:, None], memory["words"][:, t : t + 1])
        x = self.dec_pos(x, start=t)
        h, cache = self.decoder.step(x, state, memory["kv"], memory["mask"])
        return torch.log_softmax(self.out(h[:, 0]), dim=-1), cache

    def expand_memory(self, memory: Any, index: torch.Tensor) -> Any:
        """Rows of every memory tensor selected by `index`."""
        return select_rows(memory, index)

    def reorder_state(self, state: Any, index: torch.Tensor) -> Any:
        """Rows of every layer cache selected by `index`."""
        return select_rows(state, index)
