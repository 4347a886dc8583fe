"""Helpers of tests/models/test_ff2.py that other tests use too: VOCAB, tiny_bert, tiny_tokenizer_dir."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

transformers = pytest.importorskip("transformers", reason="the plm extra (transformers) is not installed")
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", "un", "##believ",
         "##able", "re", "##stor", "##ation", "s", "##at", "a", "dog"]


def tiny_tokenizer_dir(d: Path, vocab: list[str] = VOCAB) -> Path:
    """A WordPiece tokenizer directory (vocab.txt + tokenizer_config.json)."""
    d.mkdir(parents=True, exist_ok=True)
    (d / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    (d / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "BertTokenizer",
                                                         "do_lower_case": True}), encoding="utf-8")
    return d


def tiny_bert(vocab_size: int = len(VOCAB)) -> dict:
    return {"model_type": "bert", "vocab_size": vocab_size, "hidden_size": 32, "num_hidden_layers": 2,
            "num_attention_heads": 4, "intermediate_size": 64, "max_position_embeddings": 64,
            "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1}


def tiny_bert_dir(d: Path, words: list[str], layers: int = 1) -> Path:
    """A randomly initialised (seeded) BERT saved as a local PLM directory with a WordPiece vocabulary of `words`
    (a frontend `{kind: plm, path: d}` and a model's `plm: d` read it offline); `d`."""
    import torch

    vocab = VOCAB[:5] + sorted(set(words) - set(VOCAB[:5]))
    conf = {**tiny_bert(len(vocab)), "num_hidden_layers": layers, "max_position_embeddings": 128}
    torch.manual_seed(0)
    transformers.BertModel(transformers.BertConfig(**{k: v for k, v in conf.items() if k != "model_type"})) \
        .save_pretrained(str(d))
    return tiny_tokenizer_dir(d, vocab)
