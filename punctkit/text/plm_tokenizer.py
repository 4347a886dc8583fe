"""A pre-trained LM's tokenizer, read with the `tokenizers` library alone.

Hugging Face's `tokenizer.json` holds the whole fast tokenizer (normalizer, pre-tokenizer,
word-piece model, the post-processor that adds [CLS] ... [SEP]); `tokenizers` reads it in
about 0.05 s. `transformers.AutoTokenizer` builds the same object but imports transformers
and torch first (4-5 s a start on these machines): half of `punctkit punctuate`'s time on
test2011 with a MiniLM package. So punctkit reads `tokenizer.json` itself, and calls
transformers only for a directory without one (a bare `vocab.txt`), taking the fast tokenizer
transformers builds from it; `save` always writes `tokenizer.json`, so every frontend and
package punctkit writes is read without transformers.

The ids are the same as transformers' for the same directory (tests/text/test_plm_tokenizer.py
compares both over test2011's words and odd ones, for MiniLM and MPNet): a model trained
through one path decodes through the other. Padding and truncation that some files carry
(`padding: {length: 128}`) are switched off: punctkit windows and pads itself.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from punctkit.files import PunctkitError

TOKENIZER_JSON = "tokenizer.json"
# Files that carry a tokenizer's vocabulary (without one, transformers 5 builds an empty tokenizer).
TOKENIZER_FILES = (TOKENIZER_JSON, "vocab.txt", "vocab.json", "spiece.model", "sentencepiece.bpe.model",
                   "tokenizer.model", "spm.model")
# Where the special tokens' names are, in the order they are looked up.
CONFIG_FILES = ("tokenizer_config.json", "special_tokens_map.json")
SPECIALS = ("pad_token", "unk_token", "cls_token", "sep_token")


def transformers_module(what: str) -> Any:
    """The transformers package, offline and without per-tensor loading bars in logs."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import transformers
    except ImportError:
        raise PunctkitError(f"{what} needs transformers: pip install 'punctkit[plm]'") from None
    try:
        transformers.utils.logging.disable_progress_bar()
    except AttributeError:
        pass
    return transformers


def _backend_class() -> Any:
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise PunctkitError("a pre-trained LM's tokenizer needs the tokenizers package: "
                            "pip install 'punctkit[plm]'") from None
    return Tokenizer


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise PunctkitError(f"{path}: malformed tokenizer file ({e})") from None
    if not isinstance(data, dict):
        raise PunctkitError(f"{path}: malformed tokenizer file (not a JSON object)")
    return data


def _token_name(value: Any) -> str | None:
    """A special token as tokenizer_config.json writes it: "[PAD]" or {"content": "[PAD]", ...}."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) and value else None


class PieceTokenizer:
    """Text -> word-piece ids, over a `tokenizers.Tokenizer`; the few calls punctkit makes."""

    def __init__(self, backend: Any, specials: dict[str, str | None], config: dict[str, Any]):
        backend.no_padding()
        backend.no_truncation()
        self.backend = backend
        self.config = config  # tokenizer_config.json as read (written back by `save`)
        self.special_tokens = {k: v for k, v in specials.items() if v is not None}
        ids = {k: (backend.token_to_id(v) if v is not None else None) for k, v in specials.items()}
        self.pad_id: int | None = ids.get("pad_token")
        self.unk_id: int | None = ids.get("unk_token")
        self.sep_id: int | None = ids.get("sep_token")

    @classmethod
    def load(cls, d: str | os.PathLike) -> "PieceTokenizer":
        """The tokenizer in directory `d` (tokenizer.json; else what transformers builds from its
        other files); a one-line error naming `d` when it has none or it cannot be read."""
        d = Path(d)
        if not d.is_dir():
            raise PunctkitError(f"{d}: tokenizer directory not found")
        if not any((d / f).is_file() for f in TOKENIZER_FILES):
            raise PunctkitError(f"{d}: no tokenizer files (none of {', '.join(TOKENIZER_FILES)})")
        configs = {f: _json(d / f) for f in CONFIG_FILES if (d / f).is_file()}
        config = configs.get(CONFIG_FILES[0], {})
        if not (d / TOKENIZER_JSON).is_file():
            return cls._from_transformers(d, config)
        try:
            backend = _backend_class().from_file(str(d / TOKENIZER_JSON))
        except Exception as e:  # tokenizers raises its own Exception subclasses with one-line text
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise PunctkitError(f"{d / TOKENIZER_JSON}: cannot read the tokenizer ({first})") from None
        specials = {k: next((_token_name(c[k]) for c in configs.values() if _token_name(c.get(k))), None)
                    for k in SPECIALS}
        return cls(backend, specials, config)

    @classmethod
    def _from_transformers(cls, d: Path, config: dict[str, Any]) -> "PieceTokenizer":
        """A directory without tokenizer.json: transformers builds the fast tokenizer from its files."""
        auto_tokenizer = transformers_module("the PLM frontend").AutoTokenizer
        try:
            tok = auto_tokenizer.from_pretrained(str(d), local_files_only=True, trust_remote_code=False)
        except Exception as e:  # transformers raises OSError/ValueError/... with multi-line text
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise PunctkitError(f"{d}: cannot load the tokenizer ({first})") from None
        backend = getattr(tok, "backend_tokenizer", None)
        if backend is None:
            raise PunctkitError(f"{d}: transformers built no fast tokenizer from these files; "
                                f"give the directory a {TOKENIZER_JSON}")
        specials = {k: _token_name(getattr(tok, k, None)) for k in SPECIALS}
        return cls(backend, specials, config)

    # --- what the frontends use
    def ids(self, text: str, specials: bool = False) -> list[int]:
        """The ids of `text`, with the model's special tokens around it when `specials`."""
        return list(self.backend.encode(text, add_special_tokens=specials).ids)

    def tokens(self, ids: list[int]) -> list[str]:
        """The pieces' strings (None for an id outside the vocabulary)."""
        return [self.backend.id_to_token(int(i)) for i in ids]

    def __len__(self) -> int:
        return int(self.backend.get_vocab_size(with_added_tokens=True))

    def save(self, d: str | os.PathLike) -> None:
        """tokenizer.json and tokenizer_config.json (the special tokens named) into directory `d`."""
        d = Path(d)
        (d / TOKENIZER_JSON).write_text(self.backend.to_str(), encoding="utf-8")
        config = {**self.config, **self.special_tokens}
        (d / CONFIG_FILES[0]).write_text(json.dumps(config, indent=2, sort_keys=True) + "\n",
                                         encoding="utf-8")
