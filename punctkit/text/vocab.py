"""Token vocabularies: `<pad>` = 0, `<unk>` = 1, then tokens by decreasing count."""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Iterable

from punctkit.files import PunctkitError, iter_lines, where, write_lines

PAD = "<pad>"
UNK = "<unk>"


class Vocab:
    """An ordered token list with its index; unknown tokens map to `<unk>`."""

    def __init__(self, tokens: list[str]):
        if tokens[:2] != [PAD, UNK]:
            raise PunctkitError(f"a vocabulary must start with {PAD} and {UNK}")
        self.tokens = list(tokens)
        self.index = {t: i for i, t in enumerate(self.tokens)}
        if len(self.index) != len(self.tokens):
            dup = next(t for t in self.tokens if self.tokens.count(t) > 1)
            raise PunctkitError(f"duplicate token '{dup}' in vocabulary")

    pad_id = 0
    unk_id = 1

    def __len__(self) -> int:
        return len(self.tokens)

    def __contains__(self, token: str) -> bool:
        return token in self.index

    def id(self, token: str) -> int:
        """The id of `token`, or the `<unk>` id."""
        return self.index.get(token, self.unk_id)

    @classmethod
    def build(cls, tokens: Iterable[str], min_count: int = 1, max_size: int | None = None) -> "Vocab":
        """Count `tokens`; keep those seen `min_count` times (most frequent first, ties by name)."""
        counts = Counter(tokens)
        kept = sorted((t for t, c in counts.items() if c >= min_count and t not in (PAD, UNK)),
                      key=lambda t: (-counts[t], t))
        if max_size is not None:
            kept = kept[: max(0, max_size - 2)]
        return cls([PAD, UNK] + kept)

    def save(self, path: str | Path) -> None:
        """One token per line, in id order."""
        write_lines(path, self.tokens)

    @classmethod
    def load(cls, path: str | Path) -> "Vocab":
        """Read a vocabulary written by `save` (one token per line; a bad line is an error naming it)."""
        try:  # the fast path (a model's start-up): UTF-8, `token\n` lines and nothing else
            text = Path(path).read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            text = ""
        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()
        if lines and not text.startswith("\ufeff") and text.split() == lines:
            return cls(lines)
        tokens = []
        for i, line in iter_lines(path):
            tok = line.strip()
            if not tok or " " in tok:
                raise PunctkitError(f"{where(path, i)}: expected one token per line")
            tokens.append(tok)
        if not tokens:
            raise PunctkitError(f"{path}: empty vocabulary")
        return cls(tokens)
