"""Sub-word segmentation: BPE with subword-nmt, BPE or unigram with sentencepiece.

Both split one *word* at a time, so every piece belongs to exactly one word and
a word's label can sit on one of its pieces (see frontend.py).
"""
from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path
from typing import Iterable

from punctkit.files import PunctkitError, atomic_write, require_file
from punctkit.files.outputs import replace_mode

SEPARATOR = "@@"  # subword-nmt's continuation mark: 'punc@@ tu@@ ation'


def learn_subword_nmt(lines: Iterable[str], codes: str | Path, merges: int = 10000, min_frequency: int = 2) -> None:
    """Learn `merges` BPE merge operations from text lines and write the codes file."""
    from subword_nmt.learn_bpe import learn_bpe

    text = io.StringIO("".join(ln.rstrip("\n") + "\n" for ln in lines))
    with atomic_write(codes) as out:
        learn_bpe(text, out, merges, min_frequency=min_frequency)


class SubwordNmt:
    """Apply subword-nmt codes to single words."""

    def __init__(self, codes: str | Path):
        from subword_nmt.apply_bpe import BPE

        with open(require_file(codes, "BPE codes file"), encoding="utf-8") as f:
            try:
                self._bpe = BPE(f, separator=SEPARATOR)
            except Exception as e:  # subword-nmt raises plain errors on malformed codes
                raise PunctkitError(f"{codes}: not a subword-nmt codes file ({e})") from None

    def split(self, word: str) -> list[str]:
        """`punctuation` -> `['punc@@', 'tu@@', 'ation']`."""
        return self._bpe.segment_tokens([word]) or [word]


def train_sentencepiece(lines: Iterable[str], model: str | Path, vocab_size: int = 8000,
                        model_type: str = "bpe", pad_id: int = 0, unk_id: int = 1) -> None:
    """Train a sentencepiece model (`bpe` or `unigram`) and write it to `model` (a .model file)."""
    import sentencepiece as spm

    if model_type not in ("bpe", "unigram"):
        raise PunctkitError(f"sentencepiece model_type must be bpe or unigram, not '{model_type}'")
    model = Path(model)
    model.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".spm.", suffix=".tmp", dir=model.parent) as tmp:
        prefix = os.path.join(tmp, "spm")
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter([ln.strip() for ln in lines if ln.strip()]), model_prefix=prefix,
            vocab_size=vocab_size, model_type=model_type, pad_id=pad_id, unk_id=unk_id, bos_id=-1,
            eos_id=-1, character_coverage=1.0, hard_vocab_limit=False, num_threads=1,
            minloglevel=2, shuffle_input_sentence=False)
        replace_mode(prefix + ".model", model)  # a replaced model keeps its mode
        os.replace(prefix + ".model", model)


class SentencePiece:
    """Apply a sentencepiece model to single words."""

    def __init__(self, model: str | Path):
        import sentencepiece as spm

        self.sp = spm.SentencePieceProcessor()
        try:
            self.sp.load(str(require_file(model, "sentencepiece model")))
        except (OSError, RuntimeError) as e:
            raise PunctkitError(f"{model}: not a sentencepiece model ({str(e).splitlines()[0]})") from None

    def split(self, word: str) -> list[str]:
        """`punctuation` -> `['▁punc', 'tuation']`."""
        return self.sp.encode(word, out_type=str) or [word]

    def ids(self, word: str) -> list[int]:
        """The piece ids of one word."""
        return self.sp.encode(word, out_type=int) or [self.sp.unk_id()]

    def __len__(self) -> int:
        return self.sp.get_piece_size()
