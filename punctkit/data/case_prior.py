"""How often each word is written with a capital inside a sentence, from true-case training text.

A word that follows a comma or no mark is inside a sentence: when the training text writes it in
lower case there ("thanks", "nothing"), a capital on it is a sentence start that the marks before it
do not show ("Jane, Thanks"), which the joint decision of marks and case (decode/joint.py) refuses;
names ("john", "nasa") are written with capitals inside sentences and keep them.

Built from a data directory's words and true-case labels (`CasePrior.build`), saved in a frontend
directory (and so in a package) as `case_prior.txt`: `word<TAB>capitalised<TAB>inside` lines, the
lower-cased word, how many of its occurrences inside sentences start with a capital, and how many
occurrences inside sentences it has. Words seen fewer than `min_count` times inside sentences are
left out: for them the model decides alone.
"""
from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Mapping

from punctkit.data.labels import SENTENCE_END, case_of, mark_of
from punctkit.files import PunctkitError

if TYPE_CHECKING:
    from punctkit.data.datadir import DataDir

UPPER_START = frozenset({"C", "U", "M"})  # case classes that show a word's first letter as a capital


class CasePrior:
    """Per lower-cased word: (occurrences inside sentences starting with a capital, occurrences inside sentences)."""

    FILE = "case_prior.txt"  # its name in a frontend directory (and so in a package)

    def __init__(self, counts: Mapping[str, tuple[int, int]] | None = None) -> None:
        self._counts: dict[str, tuple[int, int]] | None = dict(counts or {})
        # as read from a file in sorted order (`read`'s fast path, a model's start-up): the words, and
        # their two counts as digit strings, looked up by bisection; no dict is built unless asked for
        self._sorted: tuple[list[str], list[str], list[str]] | None = None

    @classmethod
    def _of_sorted(cls, words: list[str], caps: list[str], inside: list[str]) -> "CasePrior":
        prior = cls()
        prior._counts, prior._sorted = None, (words, caps, inside)
        return prior

    @property
    def counts(self) -> dict[str, tuple[int, int]]:
        """Per lower-cased word: (occurrences inside sentences starting with a capital, occurrences inside)."""
        if self._counts is None and self._sorted is not None:
            words, caps, inside = self._sorted
            self._counts = {w: (int(c), max(int(n), 1)) for w, c, n in zip(words, caps, inside)}
        return self._counts or {}

    def __len__(self) -> int:
        return len(self._sorted[0]) if self._counts is None and self._sorted is not None else len(self.counts)

    @classmethod
    def build(cls, streams: Iterable[tuple[list[str], list[str]]], min_count: int = 2) -> "CasePrior":
        """The prior of word streams and their true-case labels (`(words, labels)` per stream; a stream's
        first word begins a sentence, and so does every word after a sentence-final mark)."""
        caps: Counter[str] = Counter()
        inside: Counter[str] = Counter()
        for words, labels in streams:
            start = True
            for w, lab in zip(words, labels):
                if not start and any(c.isalpha() for c in w):
                    key = w.lower()
                    inside[key] += 1
                    if case_of(lab) in UPPER_START and w[:1].isupper():
                        caps[key] += 1
                start = mark_of(lab) in SENTENCE_END
        return cls({k: (caps[k], n) for k, n in sorted(inside.items()) if n >= min_count})

    def capital_share(self, word: str) -> float | None:
        """The share of `word`'s occurrences inside sentences that start with a capital (None: unseen)."""
        key = word.lower()
        if self._counts is None and self._sorted is not None:
            words, caps, inside = self._sorted
            i = bisect_left(words, key)
            if i == len(words) or words[i] != key:
                return None
            return int(caps[i]) / max(int(inside[i]), 1)  # (as `counts` reads the same file)
        got = self.counts.get(key)
        return None if got is None else got[0] / got[1]

    def lines(self) -> list[str]:
        return [f"{k}\t{c}\t{n}" for k, (c, n) in self.counts.items()]

    @classmethod
    def parse(cls, lines: Iterable[str], where: str = "case prior") -> "CasePrior":
        """Read `word<TAB>capitalised<TAB>inside` lines; a malformed line is a one-line error naming it."""
        counts: dict[str, tuple[int, int]] = {}
        for i, line in enumerate(lines, 1):
            parts = line.rstrip("\r").split("\t")
            if len(parts) == 3 and parts[0]:
                try:
                    caps, inside = int(parts[1]), int(parts[2])
                except ValueError:
                    caps, inside = -1, 0
                if 0 <= caps <= inside and inside > 0:
                    counts[parts[0]] = (caps, inside)
                    continue
            if line.strip():
                raise PunctkitError(f"{where}:{i}: expected 'word<TAB>capitalised<TAB>inside' "
                                    f"(two counts, the first at most the second, the second above 0)")
        return cls(counts)

    @classmethod
    def read(cls, path: "str | Path") -> "CasePrior":
        """The prior saved in a file (UTF-8; a frontend's, whose size its package bounds)."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise PunctkitError(f"{path}: not UTF-8 text (byte {e.start}); "
                                "a case prior is `word<TAB>n<TAB>n` lines") from None
        toks = text.split()  # the fast path (a model's start-up): sorted `word TAB n TAB n` lines, nothing else
        if len(toks) % 3 == 0 and text.count("\t") == 2 * (len(toks) // 3) == 2 * text.count("\n"):
            words, caps, inside = toks[0::3], toks[1::3], toks[2::3]
            digits = "".join(caps) + "".join(inside)
            if digits.isascii() and digits.isdigit() and words == sorted(words):  # (what `lines` writes)
                return cls._of_sorted(words, caps, inside)
        return cls.parse(text.split("\n"), str(path))  # names the first bad line


def case_prior(dd: "DataDir", min_count: int = 2) -> CasePrior:
    """The case prior of a data directory's true-case words: its utterances joined into their
    documents' streams (`utt2spk`, in id order: a document's blocks run on)."""
    streams: dict[str, tuple[list[str], list[str]]] = {}
    for u in dd.utterances:
        words, labels = streams.setdefault(dd.utt2spk.get(u.uttid, u.uttid), ([], []))
        words += u.words
        labels += u.labels
    return CasePrior.build(streams.values(), min_count)
