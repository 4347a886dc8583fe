"""Marks and case decided together: the label of each word given the label before it and the word after.

A true-case (or case-aware) model gives each word a distribution over joint labels, a case class
and the mark after the word ("C_COMMA"). Taken word by word, the arg-max labels can contradict
each other: a sentence-final mark followed by a lower-case word ("New York. and I"), or a
sentence-start capital after a comma or no mark ("Jane, Thanks"). `JointDecision` picks each
word's label from its distribution under two rules over neighbouring labels:

1. after a sentence-final mark (and at a stream's start, when the stream begins a sentence) a
   word's first letter is upper case: its case class is C or U, or M where its lexicon form
   starts upper case or lower case (`iPhone`, `eBay`, `ex-US`: shown there as
   punctkit.data.labels.sentence_start_case shows it, `iPhone`, `eBay`, `Ex-US`), and a word without
   letters, or that begins with a digit (`1st`, `5G`: `starts_with_letter`), takes any class;
2. inside a sentence (after a comma, another non-final mark, or none) a word takes a capital (C)
   only when the training text writes it with one inside sentences often enough (`CasePrior`
   share at least `threshold`: names, `I`), or when the training text has too few of it inside
   sentences to tell (then the model decides alone); a word that begins with a digit shows no sentence-start
   capital (`5G`, `1st`): the model decides alone.

Each word's label maximises its own log-probability plus, with `lookahead` 1, the best
log-probability of the next word's labels that rule 1 allows after it: so a period that would
force a capital on a word the model sees in lower case weighs that word's own evidence ("New York
and I", or "New York. And I", whichever the two words' distributions make more probable). Rule 2
is not weighed ahead (`rule2_ahead`): a capital it refuses becomes lower case, it adds no period.
The choice is left to right, each word given the label chosen before it, so a stream labels the
same whole or in segments, and a streaming decoder that holds one word back labels as offline
decoding does.

Inventories without case (4class, 6class) are left as their arg-max: the rules concern case.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from punctkit.data.case_prior import CasePrior
from punctkit.data.labels import SENTENCE_END, CaseLexicon, LabelSet, case_of, mark_of, starts_with_letter

THRESHOLD = 0.1   # rule 2: the share of capitals inside sentences from which a word may take one (valid chose)
LOOKAHEAD = 1     # words after a word whose distribution its decision weighs (0 or 1; valid chose)
_FLOOR = 1e-12


@dataclass(frozen=True)
class Costs:
    """Per word (rows) and label (columns): what the label adds to a path's log-probability after a
    sentence-final mark (`after_final`: 0, or -inf where rule 1 forbids it) and after any other mark
    or none (`inside`: 0, or `weight` times the log of the word's share of capitals inside
    sentences for a capital, rule 2)."""

    after_final: np.ndarray
    inside: np.ndarray


@dataclass
class JointDecision:
    """The joint decision of one model's labels (see the module's docstring)."""

    inventory: LabelSet
    lexicon: CaseLexicon | None = None
    prior: CasePrior | None = None
    threshold: float = THRESHOLD
    lookahead: int = LOOKAHEAD
    weight: float = 0.0    # rule 2 as a cost (weight x log share) instead of the threshold, when > 0
    rule2_ahead: bool = False  # the look-ahead weighs rule 2 too (valid chose not: rule 2 lowers the capital instead)
    enabled: bool = True   # False: each word's arg-max (the decode option `joint: false`)
    final: np.ndarray = field(init=False)       # per label: its mark ends a sentence
    case_ids: dict[str, np.ndarray] = field(init=False)  # case class -> its labels' positions
    # word -> the index of its (after_final, inside) pair among the few distinct pairs, keyed as `_pair_of` says
    _memo: dict[str, int] = field(init=False, default_factory=dict, repr=False)
    _pairs: dict[tuple[bool, bool, float], int] = field(init=False, default_factory=dict, repr=False)
    _tables: tuple[np.ndarray, np.ndarray] | None = field(init=False, default=None, repr=False)

    def __post_init__(self) -> None:
        labels = self.inventory.labels
        self.final = np.array([mark_of(lab) in SENTENCE_END for lab in labels])
        cases = [case_of(lab) for lab in labels]
        self.case_ids = {c: np.array([k for k, x in enumerate(cases) if x == c], dtype=np.int64)
                         for c in set(cases) if c is not None}

    @property
    def active(self) -> bool:
        """Whether the rules apply (a case-aware inventory)."""
        return self.enabled and self.inventory.case_aware

    # ---------------------------------------------------------------- allowed labels per word
    def costs(self, words: list[str]) -> Costs:
        """What rules 1 and 2 add for each of `words` (the words the model read)."""
        if len(self._pairs) >= 100_000 or len(self._memo) >= 200_000:  # bounded (the weighed rule 2: a pair a share)
            self._pairs.clear()
            self._memo.clear()
            self._tables = None
        ids = np.fromiter((self._pair_of(w) for w in words), dtype=np.int64, count=len(words))
        if self._tables is None:  # the distinct pairs as two tables (rebuilt when a new pair appears)
            rows = [self._pair_rows(key) for key in sorted(self._pairs, key=self._pairs.__getitem__)]
            n_labels = len(self.inventory.labels)
            self._tables = tuple(np.array([r[j] for r in rows]).reshape(len(rows), n_labels) for j in (0, 1))
        return Costs(self._tables[0][ids], self._tables[1][ids])

    def _pair_of(self, w: str) -> int:
        """The index of one word's (after a final mark, inside a sentence) costs, remembered (`costs`
        bounds it). Words share a few distinct pairs, by what decides them: whether the word has letters,
        whether rule 1 forbids its Mixed form after a final mark, and rule 2's cost of a capital. A word that begins
        with a digit (`5g`, `1st`) is as one without letters: its case shows no sentence start."""
        got = self._memo.get(w)
        if got is not None:
            return got
        if starts_with_letter(w):
            form = self.lexicon.forms.get(w.lower()) if self.lexicon is not None else None
            # Mixed after a final mark: allowed when its form starts upper case or lower case (`iPhone`)
            mixed_forbidden = form is not None and not form[:1].isupper() and not form[:1].islower()
            key = (True, mixed_forbidden, self._inside_cost(w))
        else:
            key = (False, False, 0.0)
        k = self._pairs.get(key)
        if k is None:
            k = self._pairs[key] = len(self._pairs)
            self._tables = None
        self._memo[w] = k
        return k

    def _pair_rows(self, key: tuple[bool, bool, float]) -> tuple[np.ndarray, np.ndarray]:
        """(after a final mark, inside a sentence) of the words of one `_pair_of` key."""
        letters, mixed_forbidden, inside_cost = key
        n_labels = len(self.inventory.labels)
        after_final, inside = np.zeros(n_labels), np.zeros(n_labels)
        if letters:
            for c, ids in self.case_ids.items():
                st = self.inventory.case_style(c)
                if st == "lower" or (st == "mixed" and mixed_forbidden):
                    after_final[ids] = -np.inf
                if st == "capital":
                    inside[ids] = inside_cost
        return after_final, inside

    def _inside_cost(self, w: str) -> float:
        share = self.prior.capital_share(w) if self.prior is not None else None
        if share is None:
            return 0.0
        if self.weight > 0:
            return self.weight * float(np.log(max(share, 0.01)))
        return -np.inf if share < self.threshold else 0.0

    # ---------------------------------------------------------------- the decision
    def decide(self, rows: np.ndarray, words: list[str], *, forced: list[str | None] | None = None,
               prev: int | None = None, opens: bool = False, next_row: np.ndarray | None = None,
               next_word: str | None = None, best: list[int] | None = None) -> list[int]:
        """Label ids of consecutive words (`rows`: their distributions, words x labels) chosen left to
        right. `forced`: per word the mark the input forces (None: predicted). `prev`: the label id chosen for
        the word before these (None: none); `opens`: with no word before, the first word begins a
        sentence. `next_row`/`next_word`: the distribution and word after the last one, when the
        stream goes on (its own label is decided later, given these). `best`: the search's own label
        ids, returned (with `forced` marks) where the rules do not apply (else each row's arg-max)."""
        rows = np.asarray(rows, dtype=np.float64)
        n = len(words)
        if n == 0:
            return []
        if not self.active:
            ids = list(best) if best is not None else rows.argmax(-1).tolist()
            return self._with_forced(ids, rows, forced)
        logp = np.log(np.maximum(rows, _FLOOR))
        allowed = np.ones_like(rows, dtype=bool)
        if forced is not None:
            marks = np.array([mark_of(lab) for lab in self.inventory.labels])
            for i, mk in enumerate(forced):
                if mk is not None:
                    allowed[i] = marks == mk
        m = self.costs(words + ([next_word] if next_word is not None else []))
        # the best next-word score after a final mark and after any other (lookahead 1)
        nxt_final = np.zeros(n)
        nxt_inside = np.zeros(n)
        if self.lookahead > 0:
            nl, na = logp[1:], allowed[1:]
            if next_row is not None:
                nl = np.vstack([nl, np.log(np.maximum(np.asarray(next_row, dtype=np.float64), _FLOOR))[None]])
                na = np.vstack([na, np.ones((1, rows.shape[1]), dtype=bool)])
            k = len(nl)  # words 0..k-1 have a next word
            if k:
                nxt_final[:k] = np.where(na, nl + m.after_final[1:k + 1], -np.inf).max(-1)
                ahead = m.inside[1:k + 1] if self.rule2_ahead else np.zeros_like(nl)
                nxt_inside[:k] = np.where(na, nl + ahead, -np.inf).max(-1)
        gain = logp + np.where(self.final[None, :], nxt_final[:, None], nxt_inside[:, None])
        gain = np.where(allowed, gain, -np.inf)
        # each word's choice after a final mark and after any other, then the left-to-right walk
        best_af = (gain + m.after_final[:n]).argmax(-1)
        best_in = (gain + m.inside[:n]).argmax(-1)
        best_any = gain.argmax(-1)
        out: list[int] = []
        last = prev
        af, ins, final = best_af.tolist(), best_in.tolist(), self.final.tolist()
        for i in range(n):
            if last is None:
                k = af[i] if opens else int(best_any[i])
            else:
                k = af[i] if final[last] else ins[i]
            out.append(k)
            last = k
        return out

    def _with_forced(self, ids: list[int], rows: np.ndarray, forced: list[str | None] | None) -> list[int]:
        if forced is None:
            return ids
        return [i if mk is None else self.inventory.index(self.inventory.relabel(self.inventory.labels[i], mk))
                for i, mk in zip(ids, forced)]
