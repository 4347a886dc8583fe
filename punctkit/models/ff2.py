"""FF2, the feature-fusion two-stream tagger ("FF2: A Feature Fusion Two-Stream Framework for
Punctuation Restoration", 2022), and the plain PLM fine-tune baseline.

`ff2`: two streams over the same word-pieces of a pre-trained LM's tokenizer:
  (a) the pre-trained encoder (a local Hugging Face directory, e.g. MiniLM); with
      `plm_interaction: true` its self-attention becomes interaction attention too, the
      paper's Interaction Transformer Encoder (punctkit/models/plm_interaction.py),
  (b) TNP, a small randomly initialised Transformer whose self-attention is
      interaction attention (punctkit/nn/interaction.py);
their outputs are concatenated, go through one Transformer fusion layer
(8 heads) and a linear classifier at each word's label piece (its first
word-piece). Ablations: `tnp: false` (PLM + fusion + classifier) and
`interaction: false` with `plm_interaction: false` (plain attention in both streams: the
paper's "w/o Interaction").

`plm_tagger`: the pre-trained encoder + a linear classifier at each word's
first piece (the baseline FF2 has to beat).

`plm` names the encoder: `auto`/`minilm` (the packaged MiniLM), a directory
path, or a mapping `{path: DIR}` / `{config: {model_type: bert, ...}}` (a
randomly initialised encoder of that Hugging Face config: tests, or a
checkpoint that will overwrite the weights anyway). `layers: N` in the mapping
keeps the encoder's first N layers (a student cut from a deeper encoder, e.g.
`{path: mpnet, layers: 3}`; `train.init` then copies a teacher's first N by name); `extra_layers: K`
grows K gated copies of its top layers on top, computing what the encoder did until training opens
their gates (`extra_copy: init`: copies of the layers `train.init` gives; `extra_gate`: the gates' start;
punctkit/models/plm_grow.py). Both models expose
`param_groups()`: the encoder at the trainer's rate, the new layers at
`new_lr_scale` times it.
"""
from __future__ import annotations

import os
from typing import Any

import torch
from torch import nn

from punctkit.data.boundaries import N_BOUNDARIES, NOTHING
from punctkit.files import PunctkitError
from punctkit.models.base import Batch, PunctModel, gather_words, token_boundaries
from punctkit.models.plm_grow import grow, grown_parameters
from punctkit.models.plm_interaction import MIX, add_interaction
from punctkit.models.registry import register
from punctkit.nn.interaction import InteractionEncoder
from punctkit.text.plm import check_vocab, load_pretrained, read_plm_config, resolve_plm_dir, transformers_module

PlmSpec = str | dict[str, Any]


def build_plm(plm: PlmSpec, vocab_size: int | None = None, attention_dropout: float | None = None) -> nn.Module:
    """The pre-trained encoder named by `plm` (see the module docstring), loaded offline.

    `vocab_size` (the frontend's tokenizer size) must match the encoder's
    embedding table, else a one-line error names the directory.
    `attention_dropout` replaces the encoder's attention-probability dropout
    (None keeps its own): on CPU, drawing that (B, heads, T, T) mask costs
    about as much as the rest of the training step.
    """
    tf = transformers_module("model 'ff2'/'plm_tagger'")
    spec = {"path": plm} if isinstance(plm, (str, os.PathLike)) else dict(plm or {})
    over = {} if attention_dropout is None else {"attention_probs_dropout_prob": float(attention_dropout)}
    if spec.get("layers") is not None:
        full = spec["config"] if isinstance(spec.get("config"), dict) else \
            read_plm_config(resolve_plm_dir(spec.get("path", "auto")))
        over["num_hidden_layers"] = plm_layers(spec["layers"], full.get("num_hidden_layers"))
    if "config" in spec:
        conf = {**spec["config"], **over}
        try:
            hf_conf = tf.AutoConfig.for_model(conf.pop("model_type", "bert"), **conf)
        except (ValueError, TypeError) as e:
            raise PunctkitError(f"plm config: {str(e).splitlines()[0]}") from None
        where, encoder = "plm config", tf.AutoModel.from_config(hf_conf)
    else:
        d = resolve_plm_dir(spec.get("path", "auto"))
        where, encoder = str(d), load_pretrained(d, **over)
    if over and not hasattr(type(encoder.config)(), "attention_probs_dropout_prob"):  # kwargs become attributes
        raise PunctkitError(f"{where}: plm_attention_dropout is set, but this {encoder.config.model_type} "
                            f"encoder has no attention_probs_dropout_prob")
    if vocab_size is not None:
        check_vocab(vocab_size, encoder.config.vocab_size, where)
    if spec.get("extra_layers") is not None:
        grow(encoder, spec["extra_layers"], spec.get("extra_copy", "pretrained"), spec.get("extra_gate", 0.0), where)
    if getattr(encoder, "pooler", None) is not None:
        encoder.pooler = None  # unused: we tag tokens (and unused parameters upset DDP)
    return encoder


def plm_layers(layers: Any, available: Any) -> int:
    """`plm.layers`, checked: a whole number from 1 to the encoder's own depth (more layers than the
    checkpoint has would be new random ones, silently)."""
    if isinstance(layers, bool) or not isinstance(layers, int) or layers < 1:
        raise PunctkitError(f"model plm layers must be a whole number >= 1, not {layers!r}")
    if isinstance(available, int) and layers > available:
        raise PunctkitError(f"model plm layers: {layers}, but the encoder has {available} (keep at most those)")
    return layers


def _encode(encoder: nn.Module, batch: Batch) -> torch.Tensor:
    """(B, T, d_plm) last hidden states of the pre-trained encoder."""
    return encoder(input_ids=batch["tokens"], attention_mask=batch["token_mask"].long()).last_hidden_state


def _groups(model: nn.Module, encoder: nn.Module, new_lr_scale: float) -> list[dict[str, Any]]:
    """Parameter groups: the encoder's pre-trained weights at scale 1, everything else (the new layers,
    the P_λ that `plm_interaction` adds to the encoder, its grown layers) at `new_lr_scale`."""
    grown = grown_parameters(encoder)
    pretrained = [p for n, p in encoder.named_parameters() if not n.endswith(MIX) and id(p) not in grown]
    enc = {id(p) for p in pretrained}
    new = [p for p in model.parameters() if id(p) not in enc]
    return [{"params": pretrained, "lr_scale": 1.0, "name": "plm"},
            {"params": new, "lr_scale": float(new_lr_scale), "name": "new"}]


@register("ff2")
class FF2(PunctModel):
    """Pre-trained encoder + TNP (interaction attention) -> fusion layer -> classifier per word.

    Args:
        plm: the pre-trained encoder (see the module docstring).
        tnp: use the second stream; interaction: interaction attention in TNP (else plain);
        plm_interaction: interaction attention in the pre-trained encoder (the paper's ITE).
        tnp_layers, tnp_dim, tnp_heads, tnp_ff: TNP size (paper: 6 layers, small).
        fusion_heads, fusion_ff: the one fusion layer (paper: 8 heads, 3072 hidden).
        dropout: TNP, fusion and classifier dropout (paper 0.2); the encoder keeps its own.
        attention_dropout: dropout on TNP's and the fusion layer's attention probabilities
            (None: `dropout`); plm_attention_dropout: the encoder's (None: its own config's).
        max_len: longest input in pieces (TNP's learned positions).
        new_lr_scale: learning-rate multiplier of TNP/fusion/classifier over the encoder's.
    """

    def __init__(
        self,
        vocab_size: int,
        n_labels: int,
        pad_id: int = 0,
        plm: PlmSpec = "auto",
        tnp: bool = True,
        interaction: bool = True,
        plm_interaction: bool = False,
        tnp_layers: int = 6,
        tnp_dim: int = 256,
        tnp_heads: int = 8,
        tnp_ff: int = 1024,
        fusion_heads: int = 8,
        fusion_ff: int = 1024,
        dropout: float = 0.2,
        attention_dropout: float | None = None,
        plm_attention_dropout: float | None = None,
        max_len: int = 512,
        new_lr_scale: float = 1.0,
    ) -> None:
        super().__init__()
        self.plm = build_plm(plm, vocab_size, plm_attention_dropout)
        if plm_interaction:
            add_interaction(self.plm)
        d_plm = self.plm.config.hidden_size
        self.new_lr_scale = new_lr_scale
        self.use_tnp = tnp
        d_fused = d_plm
        if tnp:
            if tnp_dim % tnp_heads:
                raise PunctkitError(f"ff2: tnp_dim {tnp_dim} is not divisible by tnp_heads {tnp_heads}")
            self.tnp_embed = nn.Embedding(vocab_size, tnp_dim, padding_idx=pad_id)
            self.tnp_pos = nn.Embedding(max_len, tnp_dim)
            nn.init.normal_(self.tnp_embed.weight, std=tnp_dim ** -0.5)
            nn.init.normal_(self.tnp_pos.weight, std=0.02)
            self.tnp = InteractionEncoder(tnp_layers, tnp_dim, tnp_heads, tnp_ff, dropout, interaction,
                                          attention_dropout)
            d_fused += tnp_dim
        if d_fused % fusion_heads:
            raise PunctkitError(f"ff2: fused size {d_fused} is not divisible by fusion_heads {fusion_heads}")
        self.fusion = InteractionEncoder(1, d_fused, fusion_heads, fusion_ff, dropout, interaction=False,
                                         attention_dropout=attention_dropout)
        self.drop = nn.Dropout(dropout)
        self.out = nn.Linear(d_fused, n_labels)
        self.max_len = max_len

    def forward(self, batch: Batch) -> torch.Tensor:
        """Logits (B, W, n_labels)."""
        mask = batch["token_mask"]
        h = _encode(self.plm, batch)
        if self.use_tnp:
            t = batch["tokens"].size(1)
            if t > self.max_len:
                raise PunctkitError(f"ff2: input of {t} pieces is longer than max_len {self.max_len}")
            pos = torch.arange(t, device=h.device)
            x = self.drop(self.tnp_embed(batch["tokens"]) + self.tnp_pos(pos)[None])
            h = torch.cat([h, self.tnp(x, mask)], dim=-1)
        h = self.fusion(h, mask)
        return self.out(self.drop(gather_words(h, batch["word_pos"])))

    def param_groups(self) -> list[dict[str, Any]]:
        """For the optimizer: the encoder at the base rate, new layers at `new_lr_scale` times it."""
        return _groups(self, self.plm, self.new_lr_scale)


@register("plm_tagger")
class PlmTagger(PunctModel):
    """Plain fine-tuning: the pre-trained encoder + dropout + a linear classifier per word.

    `boundary_input: true` (issue #79, as DRNN-LWMA's: punctkit/models/drnn_lwma.py): the boundary id after each
    word (batch key `boundaries`) is an input. A learnt vector per id (a table that starts at zero, row 0, nothing
    known, kept at zero) is added to the word embedding of the word's label-carrying token before the encoder
    (`inputs_embeds`: the encoder adds its position and token-type embeddings as usual), so every layer reads it,
    and such a model warm-started from one without it computes what that one did. Without the flag the state dict
    and the exported graph are as they were.
    """

    def __init__(self, vocab_size: int, n_labels: int, plm: PlmSpec = "auto", dropout: float = 0.1,
                 plm_attention_dropout: float | None = None, new_lr_scale: float = 1.0,
                 boundary_input: bool = False) -> None:
        super().__init__()
        self.plm = build_plm(plm, vocab_size, plm_attention_dropout)
        self.drop = nn.Dropout(dropout)
        self.out = nn.Linear(self.plm.config.hidden_size, n_labels)
        self.new_lr_scale = new_lr_scale
        if boundary_input:  # registered only when on: a model without it keeps its state dict and graph
            self.boundary = nn.Embedding(N_BOUNDARIES, self.plm.config.hidden_size, padding_idx=NOTHING)
            nn.init.zeros_(self.boundary.weight)  # zero: the encoder as it was until training moves it
            self.needs = (*PunctModel.needs, "boundaries")
        self.boundary_input = bool(boundary_input)

    def forward(self, batch: Batch) -> torch.Tensor:
        """Logits (B, W, n_labels)."""
        if self.boundary_input and "boundaries" in batch:  # absent: nothing known anywhere (row 0 is zero)
            x = self.plm.get_input_embeddings()(batch["tokens"]) + self.boundary(token_boundaries(batch))
            h = self.plm(inputs_embeds=x, attention_mask=batch["token_mask"].long()).last_hidden_state
        else:
            h = _encode(self.plm, batch)
        return self.out(self.drop(gather_words(h, batch["word_pos"])))

    def param_groups(self) -> list[dict[str, Any]]:
        """For the optimizer: the encoder at the base rate, the classifier at `new_lr_scale` times it."""
        return _groups(self, self.plm, self.new_lr_scale)
