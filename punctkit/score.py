"""Score punctuation (and casing) against a reference: P/R/F1, SER, CER, confusion, bootstrap.

Definitions (Che 2016, Makhoul 1999, Faber 2020 §2.5). Every word is
one slot; its label names the mark after it (O: none). Over the punctuation
classes only (O excluded): C = slots with the right mark, S = a mark where
another mark was due, D = O where a mark was due, I = a mark where O was due.

- per class k: P = TP/predicted k, R = TP/reference k, F1 = harmonic mean;
- overall (micro): P = C/(C+S+I), R = C/(C+S+D);
- SER = (S+D+I)/(C+S+D), CER = (S+D+I)/slots;
- the confusion matrix covers O and every class (rows ref, columns hyp).

Percentages are numbers in [0, 100]; P, R or F1 whose denominator is 0 is
reported as 0.0, but SER with no reference mark (and CER with no slot) is
undefined: None (`null` in JSON, `n/a` in the report), not a perfect 0.
Case-aware labels (`U_COMMA`) are scored on their mark. Case is scored when the
reference says something of it (its words are not all lower case, or its labels
carry case), over the slots with a word on both sides, on each word's exact form:
the word itself where a side's words carry case, else (legacy case4/case6 data:
lower-cased words, the case in the labels) the word with its label's class
applied; a side with neither (plain lower-case text) shows every word lower case.
- per class P/R/F1 and a confusion matrix of the true-case classes of the exact
  forms (`case_class`: L lower, C Capitalized, U UPPER, M Mixed); case4/case6
  against case4/case6 keeps Faber's table of the labels' classes (U capitalised,
  L lower-case) under the keys it always had (`case["U"]`, `case["L"]`);
- exact-form case P/R/F1: precision over the hypothesis words not all lower case,
  recall over the reference words not all lower case, a hit where the two strings
  are identical; reported over all words and over the words inside sentences (not
  a sentence start by the reference's marks: its first word and every word after
  PERIOD, QUESTION, EXCLAMATION or DOTS);
- a reference data directory's `case_unknown` file (`uttid idx idx ...`, 0-based
  word indices within the utterance) names words without a case reference: they
  are skipped, and counted.

Word sequences must be equal (compared case-insensitively) unless `align=True`:
then the two sequences are aligned by minimum word edit distance (text/edit_align.py: Hirschberg's
linear-memory divide and conquer, each DP row vectorised with numpy: about a
second for two 12.6k-word streams; inputs keyed by the same utterance ids, such
as two data directories, are aligned utterance by utterance) and
punctuation is scored on aligned word pairs (matched or substituted words),
and every unaligned word is a slot too: a reference mark on a word the
hypothesis lacks is a deletion (recall drops), a hypothesis mark on an inserted
word an insertion (precision drops). The report says how many words and marks
were unaligned; the bootstrap counts the same way. A contraction split on one side
and whole on the other (`wo n't`, `won't`; `It 's`, `It's`) is one word to the aligner
(`align_slots`): its mark is the one after its last piece, its case the first piece's,
and a mark after an earlier piece (`wo, n't`) is one the other side lacks.

Paired bootstrap (Koehn 2004) resamples reference utterances with replacement
(correlated slots stay together); a reference with fewer than
`MIN_BOOTSTRAP_UNITS` utterances (one unsegmented stream, as the IWSLT files)
is resampled in blocks of `DEFAULT_BLOCK_LEN` words instead. It compares
punctuation F1 only; case is not bootstrapped.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from punctkit.data.formats import Utterance, detect_for, flatten, get_format, read
from punctkit.data.labels import (
    MARK_TEXT,
    SENTENCE_END,
    TRUE_CASES,
    LabelSet,
    O,
    apply_case,
    case_class,
    case_of,
    inventory_for,
    mark_of,
    starts_with_letter,
)
from punctkit.data.tokenize import recasable
from punctkit.files import PunctkitError, atomic_write, iter_lines, read_json_file, require_file, where
from punctkit.text.edit_align import WordPair, align_slots, norm_word

KNOWN_MARKS = tuple(MARK_TEXT)
CASE_CLASSES = ("U", "L")  # Faber's table (case4/case6 against case4/case6): U capitalised, L lower-case
CASE_UNKNOWN = "case_unknown"  # a data directory's file of the words without a case reference
MIN_BOOTSTRAP_UNITS = 10
DEFAULT_BLOCK_LEN = 100


# ---------------------------------------------------------------- inputs

@dataclass
class Transcript:
    """One side of a comparison: words and labels in order, with utterance boundaries."""

    path: str
    words: list[str]
    labels: list[str]
    uttids: list[str]
    starts: list[int]  # word offset at which each utterance begins
    marks: tuple[str, ...] = ()  # the punctuation classes of its label inventory
    keyed: bool = False  # utterance ids come from the input (data dir, Kaldi text), not from line numbers
    inventory: LabelSet | None = None  # its label inventory (None: the smallest that holds its labels)
    case_unknown: frozenset[int] = frozenset()  # positions of the words without a case reference

    @classmethod
    def from_utterances(cls, utts: list[Utterance], path: str = "", marks: Iterable[str] = (),
                        keyed: bool = False, inventory: LabelSet | None = None) -> "Transcript":
        """Join utterances into one slot sequence, remembering where each began."""
        words, labels = flatten(utts)
        starts, n = [], 0
        for u in utts:
            starts.append(n)
            n += len(u.words)
        return cls(str(path), words, labels, [u.uttid for u in utts], starts, tuple(marks), keyed, inventory)

    def locate(self, pos: int) -> str:
        """`utterance ID word K` (1-based) for the slot at 0-based `pos`."""
        k = int(np.searchsorted(self.starts, pos, side="right")) - 1
        if k < 0 or not self.uttids:
            return f"word {pos + 1}"
        return f"utterance {self.uttids[k]} word {pos - self.starts[k] + 1}"


def read_transcript(path: str | Path, fmt: str | None = None, inventory: str | None = None,
                    encoding: str | None = None) -> Transcript:
    """Read any format; `inventory` applies to unlabelled text formats only (labelled ones carry theirs)."""
    if not Path(path).exists():
        raise PunctkitError(f"file not found: {path}")
    entry = (get_format(fmt, "reader") if fmt
             else detect_for(path, "reader", encoding, "score", "--ref-format/--hyp-format"))
    inv = None if entry.labels else inventory
    utts, found = read(path, entry.name, inv, encoding=encoding)
    t = Transcript.from_utterances(utts, str(path), found.marks, keyed=entry.ids, inventory=found)
    if (Path(path) / CASE_UNKNOWN).is_file():
        t.case_unknown = read_case_unknown(Path(path) / CASE_UNKNOWN, t)
    return t


def read_case_unknown(path: Path, t: Transcript) -> frozenset[int]:
    """The positions in `t` of the words a data directory's `case_unknown` file names
    (`uttid idx idx ...`, 0-based word indices within the utterance); errors name file and line."""
    ends = t.starts[1:] + [len(t.words)]
    span = {u: (s, e) for u, s, e in zip(t.uttids, t.starts, ends)}
    found: set[int] = set()
    for lineno, line in iter_lines(path):
        uttid, *idx = line.split() or [""]
        if not uttid:
            continue
        if uttid not in span:
            raise PunctkitError(f"{where(path, lineno)}: utterance '{uttid}' is not in {t.path}; "
                                f"list only its utterances")
        start, end = span[uttid]
        for x in idx:
            if not (x.isascii() and x.isdigit()) or start + int(x) >= end:
                raise PunctkitError(f"{where(path, lineno, uttid)}: '{x}' is not a word index of the utterance; "
                                    f"give 0-based indices below its {end - start} words")
            found.add(start + int(x))
    return frozenset(found)


# ---------------------------------------------------------------- class merging

def parse_map(specs: Iterable[str]) -> dict[str, str]:
    """`["QUESTION=PERIOD", "EXCLAMATION=PERIOD,DOTS=O"]` -> {QUESTION: PERIOD, ...}."""
    mapping: dict[str, str] = {}
    known = set(KNOWN_MARKS)
    for spec in specs:
        for item in filter(None, (s.strip() for s in spec.split(","))):
            src, eq, dst = (x.strip().upper() for x in item.partition("="))
            if not eq or src not in known or (dst not in known and dst != O):
                raise PunctkitError(
                    f"--map expects MARK=MARK with marks from {', '.join(KNOWN_MARKS)} (or =O), got '{item}'")
            mapping[src] = dst
    return mapping


def class_list(marks: Iterable[str], mapping: dict[str, str]) -> list[str]:
    """Punctuation classes after merging, in the canonical order (unknown names last)."""
    merged = {mapping.get(m, m) for m in marks} - {O}
    order = {m: i for i, m in enumerate(KNOWN_MARKS)}
    return sorted(merged, key=lambda m: (order.get(m, len(order)), m))


# ---------------------------------------------------------------- word sequences

def check_same_words(ref: Transcript, hyp: Transcript) -> None:
    """Raise a one-line error naming the first position where the word sequences differ."""
    n = min(len(ref.words), len(hyp.words))
    for i in range(n):
        if norm_word(ref.words[i]) != norm_word(hyp.words[i]):
            raise PunctkitError(
                f"{ref.path} vs {hyp.path}: words differ at word {i + 1} "
                f"(ref {ref.locate(i)}: '{ref.words[i]}'; hyp {hyp.locate(i)}: '{hyp.words[i]}'); "
                f"use --align to score differing word sequences")
    if len(ref.words) != len(hyp.words):
        longer, side = (ref, "ref") if len(ref.words) > n else (hyp, "hyp")
        raise PunctkitError(
            f"{ref.path} vs {hyp.path}: ref has {len(ref.words)} words, hyp {len(hyp.words)}; "
            f"first extra word {n + 1} is {side} {longer.locate(n)}: '{longer.words[n]}'; "
            f"use --align to score differing word sequences")


@dataclass
class Pairs:
    """The slots scored: reference and hypothesis indices (-1: the word is missing on
    that side, its label counts as O), plus alignment counts when aligned. A slot's mark is its
    word's; its case is that of the word starting at `ref_start`/`hyp_start` through `ref_idx`/`hyp_idx`
    (a contraction the other side writes whole: `It 's` against `It's`; else the word itself)."""

    ref_idx: np.ndarray
    hyp_idx: np.ndarray
    alignment: dict | None = None
    ref_start: np.ndarray | None = None  # default: ref_idx
    hyp_start: np.ndarray | None = None  # default: hyp_idx

    def __post_init__(self) -> None:
        self.ref_start = self.ref_idx if self.ref_start is None else self.ref_start
        self.hyp_start = self.hyp_idx if self.hyp_start is None else self.hyp_start

    def both(self) -> np.ndarray:
        """Mask of the slots with a word on both sides."""
        return (self.ref_idx >= 0) & (self.hyp_idx >= 0)

    def ref_pos(self) -> np.ndarray:
        """Each slot's reference position: an inserted word takes the previous reference word's
        (the first one's at the start), so the bootstrap resamples it with its neighbours."""
        pos = np.maximum.accumulate(np.maximum(self.ref_idx, 0)) if len(self.ref_idx) else self.ref_idx
        return pos.astype(np.int64)


def pair_slots(ref: Transcript, hyp: Transcript, align: bool = False) -> Pairs:
    """Identity pairing (after checking the words agree) or an edit-distance alignment."""
    if not align:
        check_same_words(ref, hyp)
        idx = np.arange(len(ref.words))
        return Pairs(idx, idx)
    if ref.keyed and hyp.keyed and len(ref.uttids) > 1 and ref.uttids == hyp.uttids:
        pairs: list[WordPair] = []  # the same utterances on both sides: align each on its own (much faster)
        r_ends, h_ends = ref.starts[1:] + [len(ref.words)], hyp.starts[1:] + [len(hyp.words)]
        for r0, r1, h0, h1 in zip(ref.starts, r_ends, hyp.starts, h_ends):
            pairs += [p.shifted(r0, h0) for p in align_slots(ref.words[r0:r1], hyp.words[h0:h1])]
    else:
        pairs = align_slots(ref.words, hyp.words)

    def idx(ks: Iterable[int | None]) -> np.ndarray:
        return np.array([-1 if k is None else k for k in ks], dtype=np.int64)

    both = [p for p in pairs if p.ref is not None and p.hyp is not None]
    deleted = [p.ref for p in pairs if p.hyp is None and not p.joined]
    inserted = [p.hyp for p in pairs if p.ref is None and not p.joined]
    subst = sum(not p.same for p in both)
    info = {
        "ref_words": len(ref.words), "hyp_words": len(hyp.words),
        "aligned": len(both), "matched": len(both) - subst, "substituted": subst,
        "ref_unaligned": len(deleted), "hyp_unaligned": len(inserted),
        "ref_marks_unaligned": sum(mark_of(ref.labels[i]) != O for i in deleted),
        "hyp_marks_unaligned": sum(mark_of(hyp.labels[j]) != O for j in inserted),
    }
    joined = {"ref_joined": sum(p.joined and p.ref is not None for p in pairs),
              "hyp_joined": sum(p.joined and p.hyp is not None for p in pairs)}
    if any(joined.values()):  # pieces of a contraction the other side writes as one word (`wo n't`, `won't`)
        info.update(joined)
    return Pairs(idx(p.ref for p in pairs), idx(p.hyp for p in pairs), info,
                 idx(p.ref_start for p in pairs), idx(p.hyp_start for p in pairs))


# ---------------------------------------------------------------- metrics

def _pct(num: float, den: float) -> float:
    return 100.0 * num / den if den else 0.0


def _rate(num: float, den: float) -> float | None:
    """An error rate in percent; None (undefined) when there is nothing to count against."""
    return 100.0 * num / den if den else None


def _prf(tp: int, predicted: int, support: int) -> dict:
    p, r = _pct(tp, predicted), _pct(tp, support)
    return {"precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0,
            "support": int(support), "predicted": int(predicted), "correct": int(tp)}


def confusion(ref_labels: Sequence[str], hyp_labels: Sequence[str], labels: Sequence[str],
              units: np.ndarray | None = None, n_units: int = 1) -> np.ndarray:
    """Count (ref, hyp) label pairs: a (K, K) matrix, or (n_units, K, K) when `units` are given."""
    index = {lab: i for i, lab in enumerate(labels)}
    k = len(labels)
    r = np.fromiter((index[x] for x in ref_labels), dtype=np.int64, count=len(ref_labels))
    h = np.fromiter((index[x] for x in hyp_labels), dtype=np.int64, count=len(hyp_labels))
    if units is None:
        return np.bincount(r * k + h, minlength=k * k).reshape(k, k)
    return np.bincount((units * k + r) * k + h, minlength=n_units * k * k).reshape(n_units, k, k)


def metrics(conf: np.ndarray, labels: Sequence[str]) -> dict:
    """Every punctuation figure from a confusion matrix whose label 0 is O."""
    if labels[0] != O:
        raise ValueError("the first confusion label must be O")
    c = int(np.trace(conf[1:, 1:]))
    s = int(conf[1:, 1:].sum()) - c
    d = int(conf[1:, 0].sum())
    i = int(conf[0, 1:].sum())
    slots = int(conf.sum())
    return {
        "per_class": {lab: _prf(int(conf[k, k]), int(conf[:, k].sum()), int(conf[k].sum()))
                      for k, lab in enumerate(labels) if k},
        "overall": _prf(c, c + s + i, c + s + d),
        "C": c, "S": s, "D": d, "I": i,
        "SER": _rate(s + d + i, c + s + d),
        "CER": _rate(s + d + i, slots),
        "slots": slots,
    }


def f1_batch(conf: np.ndarray) -> np.ndarray:
    """Overall micro F1 (percent) of a batch of confusion matrices (..., K, K)."""
    c = np.trace(conf[..., 1:, 1:], axis1=-2, axis2=-1)
    predicted = conf[..., :, 1:].sum(axis=(-2, -1))
    reference = conf[..., 1:, :].sum(axis=(-2, -1))
    den = predicted + reference
    return np.where(den > 0, 200.0 * c / np.maximum(den, 1), 0.0)


def _case_source(t: Transcript) -> tuple[bool, LabelSet]:
    """(whether the side's words carry case: some word is not all lower case, its inventory)."""
    return any(w != w.lower() for w in t.words), t.inventory or inventory_for(set(t.labels) or {O})


def exact_forms(t: Transcript) -> list[str] | None:
    """Every word of a side in the case it shows: the word itself when the side's words carry
    case; with lower-case words, the word with its case-aware label's class applied (case4/case6
    data); None when the side says nothing of case (lower-case words, and no case in the labels or
    true-case labels, which lower-case words only ever give L: dev2012, test2011 as IWSLT has them)."""
    cased, inv = _case_source(t)
    if cased:
        return list(t.words)
    if not inv.case_aware or inv.true_case:
        return None
    return [apply_case(w, inv.case_style(case_of(lab))) for w, lab in zip(t.words, t.labels)]


def legacy_case(t: Transcript) -> bool:
    """Whether a side is case4/case6 data: lower-case words, Faber's case classes in the labels."""
    cased, inv = _case_source(t)
    return not cased and inv.case_aware and not inv.true_case


def sentence_starts(t: Transcript) -> np.ndarray:
    """Mask of the words that begin a sentence by `t`'s marks: the first word, and every word
    after PERIOD, QUESTION, EXCLAMATION or DOTS."""
    starts = np.ones(len(t.words), dtype=bool)
    starts[1:] = [mark_of(lab) in SENTENCE_END for lab in t.labels[:len(t.words) - 1]]
    return starts


def exact_form_prf(ref_forms: Sequence[str], hyp_forms: Sequence[str]) -> dict:
    """Exact-form case P/R/F1 of paired words: precision over the hypothesis words that are not
    all lower case, recall over such reference words, a hit where the two strings are identical."""
    hyp_cased = [case_class(h) != "L" for h in hyp_forms]
    hits = sum(c and r == h for r, h, c in zip(ref_forms, hyp_forms, hyp_cased))
    m = _prf(hits, sum(hyp_cased), sum(case_class(r) != "L" for r in ref_forms))
    return {"precision": m["precision"], "recall": m["recall"], "f1": m["f1"],
            "hits": m["correct"], "hyp_words": m["predicted"], "ref_words": m["support"]}


def case_metrics(ref: Transcript, hyp: Transcript, pairs: Pairs) -> dict | None:
    """Case figures over the slots with a word on both sides whose reference word has a case
    reference (see the module docstring); None when the reference says nothing of case."""
    ref_forms = exact_forms(ref)
    if ref_forms is None:
        return None
    hyp_forms = exact_forms(hyp) or list(hyp.words)
    both = pairs.both()
    known = ~np.isin(pairs.ref_start, np.fromiter(ref.case_unknown, dtype=np.int64))
    sel = both & known
    ri, hj = pairs.ref_start[sel], pairs.hyp_start[sel]  # a contraction's case is its first piece's
    rf = ["".join(ref_forms[a:b + 1]) for a, b in zip(ri, pairs.ref_idx[sel])]  # `It 's` compared as `It's`
    hf = ["".join(hyp_forms[a:b + 1]) for a, b in zip(hj, pairs.hyp_idx[sel])]
    if legacy_case(ref) and legacy_case(hyp):
        scheme, classes = "faber", CASE_CLASSES
        rc, hc = [case_of(ref.labels[i]) for i in ri], [case_of(hyp.labels[j]) for j in hj]
    else:
        scheme, classes = "true", TRUE_CASES
        rc, hc = [case_class(w) for w in rf], [case_class(w) for w in hf]
    conf = confusion(rc, hc, classes)
    per_class = {lab: _prf(int(conf[k, k]), int(conf[:, k].sum()), int(conf[k].sum()))
                 for k, lab in enumerate(classes)}
    inside = np.flatnonzero(~sentence_starts(ref)[ri])
    return {
        **(per_class if scheme == "faber" else {}),  # the keys Faber's table always had
        "scheme": scheme, "classes": per_class,
        "confusion": {"labels": list(classes), "matrix": conf.tolist()},
        "exact": exact_form_prf(rf, hf),
        "exact_inside": exact_form_prf([rf[k] for k in inside], [hf[k] for k in inside]),
        "slots": len(ri), "skipped": int((both & ~known).sum()),
        "contradictions": contradictions(hyp, hyp_forms, ref_forms, pairs),
    }


def contradictions(hyp: Transcript, hyp_forms: Sequence[str], ref_forms: Sequence[str], pairs: Pairs) -> dict:
    """Where the hypothesis's marks and case contradict each other (decode/joint.py):
    `lower_after_end`: words after a sentence-final mark whose first letter is lower case (of
    `after_end` such words that begin with a letter and whose case punctuate may change: tokens that pass
    through as written, `/seg`, `@user`, `2-year-old`, and words that begin with a digit, `1st`, are not counted);
    `capital_inside`: words after
    a comma, another non-final mark or none, written with a capital where the reference writes them
    in lower case."""
    starts = sentence_starts(hyp)
    after_end = lower_after_end = 0
    for j in np.flatnonzero(starts[1:]) + 1:
        first = next((c for c in hyp_forms[j] if c.isalpha()), "")
        if first and recasable(hyp_forms[j]) and starts_with_letter(hyp_forms[j]):
            after_end += 1
            lower_after_end += first.islower()
    capital_inside = 0
    for i, j in zip(pairs.ref_start, pairs.hyp_start):
        if i >= 0 and j > 0 and not starts[j] and hyp_forms[j][:1].isupper() and case_class(ref_forms[i]) == "L":
            capital_inside += 1
    return {"after_end": after_end, "lower_after_end": lower_after_end, "capital_inside": capital_inside}


def _marks(t: Transcript, idx: np.ndarray, mapping: dict[str, str]) -> list[str]:
    """The (merged) mark of every slot; O where the word is missing on this side (index -1)."""
    return [mapping.get(m, m) for m in (mark_of(t.labels[i]) if i >= 0 else O for i in idx)]


def _classes(sides: Iterable[Transcript], mapping: dict[str, str]) -> list[str]:
    seen = {mark_of(lab) for t in sides for lab in t.labels}
    return class_list(seen | {m for t in sides for m in t.marks}, mapping)


def score(ref: Transcript, hyp: Transcript, mapping: dict[str, str] | None = None,
          align: bool = False) -> dict:
    """Score `hyp` against `ref`; returns the result dict (see `format_report`)."""
    mapping = mapping or {}
    pairs = pair_slots(ref, hyp, align)
    classes = _classes((ref, hyp), mapping)
    labels = [O] + classes
    rm, hm = _marks(ref, pairs.ref_idx, mapping), _marks(hyp, pairs.hyp_idx, mapping)
    conf = confusion(rm, hm, labels)
    m = metrics(conf, labels)
    slots = m.pop("slots")
    result = {
        "ref": ref.path, "hyp": hyp.path,
        "map": dict(mapping),
        "classes": classes,
        **m,
        "confusion": {"labels": labels, "matrix": conf.tolist()},
        "counts": {
            "slots": slots,
            "ref_words": len(ref.words), "hyp_words": len(hyp.words),
            "ref_utterances": len(ref.uttids), "hyp_utterances": len(hyp.uttids),
            "ref_marks": m["overall"]["support"], "hyp_marks": m["overall"]["predicted"],
        },
        "alignment": pairs.alignment,
        "case": case_metrics(ref, hyp, pairs),
        "bootstrap": None,
    }
    return result


# ---------------------------------------------------------------- significance

def _units(ref: Transcript, block_len: int | None) -> tuple[np.ndarray, int, str]:
    """The resampling unit of every reference word: its utterance, or its block of words."""
    n = len(ref.words)
    if block_len is None and len(ref.uttids) >= MIN_BOOTSTRAP_UNITS:
        lengths = np.diff(np.append(ref.starts, n))
        return np.repeat(np.arange(len(ref.uttids)), lengths), len(ref.uttids), "utterance"
    size = block_len or DEFAULT_BLOCK_LEN
    if size < 1:
        raise PunctkitError(f"bootstrap block length must be positive, got {size}")
    return np.arange(n) // size, max(1, -(-n // size)), f"block of {size} words"


def bootstrap(ref: Transcript, hyp: Transcript, hyp2: Transcript, samples: int = 1000, seed: int = 1,
              mapping: dict[str, str] | None = None, align: bool = False,
              block_len: int | None = None) -> dict:
    """Paired bootstrap resampling (Koehn 2004): how often HYP's overall F1 beats HYP2's.

    Both hypotheses are scored on the same resampled reference units (utterances,
    or `block_len`-word blocks); `p_better` is the fraction of samples where
    F1(hyp) > F1(hyp2) (ties count as not better).
    """
    if samples < 1:
        raise PunctkitError(f"bootstrap needs at least one sample, got {samples}")
    mapping = mapping or {}
    labels = [O] + _classes((ref, hyp, hyp2), mapping)
    unit_of, n_units, unit = _units(ref, block_len)
    per_unit = []
    for h in (hyp, hyp2):
        pairs = pair_slots(ref, h, align)
        per_unit.append(confusion(_marks(ref, pairs.ref_idx, mapping), _marks(h, pairs.hyp_idx, mapping),
                                  labels, unit_of[pairs.ref_pos()], n_units).reshape(n_units, -1))
    both = np.concatenate(per_unit, axis=1)  # (units, 2*K*K)
    k = len(labels)
    rng = np.random.default_rng(seed)
    f1 = np.empty((samples, 2))
    for s in range(samples):
        weights = np.bincount(rng.integers(0, n_units, n_units), minlength=n_units)
        f1[s] = f1_batch((weights @ both).reshape(2, k, k))
    full = f1_batch(both.sum(axis=0).reshape(2, k, k))
    return {
        "hyp2": hyp2.path, "samples": samples, "seed": seed, "unit": unit, "units": n_units,
        "f1": float(full[0]), "f1_hyp2": float(full[1]),
        "p_better": float(np.mean(f1[:, 0] > f1[:, 1])),
        "f1_ci95": [float(x) for x in np.percentile(f1[:, 0], [2.5, 97.5])],
        "f1_hyp2_ci95": [float(x) for x in np.percentile(f1[:, 1], [2.5, 97.5])],
    }


# ---------------------------------------------------------------- files and report

def score_files(ref_path: str | Path, hyp_path: str | Path, *, ref_format: str | None = None,
                hyp_format: str | None = None, mapping: dict[str, str] | Iterable[str] | None = None,
                align: bool = False, hyp2_path: str | Path | None = None, samples: int = 1000,
                seed: int = 1, inventory: str | None = None, block_len: int | None = None,
                encoding: str | None = None) -> dict:
    """Read REF and HYP (any format), score them, and optionally bootstrap against HYP2."""
    if mapping is not None and not isinstance(mapping, dict):
        mapping = parse_map(mapping)
    ref = read_transcript(ref_path, ref_format, inventory, encoding)
    hyp = read_transcript(hyp_path, hyp_format, inventory, encoding)
    result = score(ref, hyp, mapping, align)
    if hyp2_path is not None:
        hyp2 = read_transcript(hyp2_path, hyp_format, inventory, encoding)
        result["bootstrap"] = bootstrap(ref, hyp, hyp2, samples, seed, mapping, align, block_len)
    return result


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) if c == 0 else cell.rjust(w) for c, (cell, w) in enumerate(zip(r, widths)))
            for r in rows]


def _prf_row(name: str, m: dict) -> list[str]:
    return [name, f"{m['precision']:.1f}", f"{m['recall']:.1f}", f"{m['f1']:.1f}",
            str(m["support"]), str(m["predicted"])]


def _rate_text(x: float | None) -> str:
    """An error rate for the report: `n/a` when undefined (e.g. SER of a reference without marks)."""
    return "n/a" if x is None else f"{x:.1f}"


CASE_TITLES = {"faber": "case (U capitalised, L lower-case):",
               "true": "case (classes of the exact forms: L lower, C Capitalized, U UPPER, M Mixed):"}


def _exact_row(name: str, m: dict) -> list[str]:
    """An exact-form row of the case table: its support and predicted are the reference and
    hypothesis words not all lower case."""
    return _prf_row(name, {**m, "support": m["ref_words"], "predicted": m["hyp_words"]})


def _case_lines(case: dict, head: list[str]) -> list[str]:
    """The case block: per-class P/R/F1, the exact-form figures (all words, inside sentences), counts."""
    rows = [head] + [_prf_row(c, m) for c, m in case["classes"].items()]
    rows += [_exact_row("exact form", case["exact"]), _exact_row("exact, inside sentences", case["exact_inside"])]
    return [CASE_TITLES[case["scheme"]]] + _table(rows) + [
        f"exact form: {case['exact']['hits']} identical ({case['exact_inside']['hits']} inside sentences); "
        f"{case['slots']} word pairs compared, {case['skipped']} reference words skipped "
        f"(no case reference: {CASE_UNKNOWN})",
        "marks and case: {lower_after_end} of {after_end} words after a sentence end begin in lower case; "
        "{capital_inside} words the reference writes in lower case have a capital inside a sentence".format(
            **case["contradictions"])]


def format_report(result: dict) -> str:
    """The human-readable report: P/R/F1 table, error rates, confusion matrix, counts."""
    out = [f"score: {result['hyp']} against {result['ref']}"]
    if result["map"]:
        out.append("map: " + ", ".join(f"{a}={b}" for a, b in result["map"].items()))
    head = ["class", "P", "R", "F1", "support", "predicted"]
    rows = [head] + [_prf_row(c, result["per_class"][c]) for c in result["classes"]]
    rows.append(_prf_row("overall", result["overall"]))
    out += [""] + _table(rows)
    out.append("")
    out.append(f"C {result['C']}  S {result['S']}  D {result['D']}  I {result['I']}  "
               f"SER {_rate_text(result['SER'])}  CER {_rate_text(result['CER'])}")
    labels, matrix = result["confusion"]["labels"], result["confusion"]["matrix"]
    rows = [["ref\\hyp"] + labels + ["sum"]]
    rows += [[lab] + [str(x) for x in row] + [str(sum(row))] for lab, row in zip(labels, matrix)]
    rows.append(["sum"] + [str(sum(col)) for col in zip(*matrix)] + [str(sum(map(sum, matrix)))])
    out += ["", "confusion (rows ref, columns hyp):"] + _table(rows)
    if result["case"]:
        out += [""] + _case_lines(result["case"], head)
    cnt = result["counts"]
    out += ["", f"slots {cnt['slots']}  ref words {cnt['ref_words']} in {cnt['ref_utterances']} utterances  "
                f"hyp words {cnt['hyp_words']} in {cnt['hyp_utterances']} utterances  "
                f"ref marks {cnt['ref_marks']}  hyp marks {cnt['hyp_marks']}"]
    al = result["alignment"]
    if al:
        out.append(f"aligned {al['aligned']} word pairs ({al['matched']} matched, {al['substituted']} substituted); "
                   f"unaligned: {al['ref_unaligned']} ref words ({al['ref_marks_unaligned']} marks), "
                   f"{al['hyp_unaligned']} hyp words ({al['hyp_marks_unaligned']} marks), "
                   f"their marks counted as deletions and insertions")
        if "ref_joined" in al:  # only where a contraction was written split on one side and whole on the other
            out.append(f"contractions written split on one side and whole on the other: {al['ref_joined']} ref "
                       f"and {al['hyp_joined']} hyp pieces joined to the word they end (`wo n't` = `won't`), "
                       f"a mark on such a piece counted as an insertion or a deletion")
    bs = result["bootstrap"]
    if bs:
        out.append(f"bootstrap ({bs['samples']} samples, seed {bs['seed']}, unit {bs['unit']} x {bs['units']}): "
                   f"F1 {bs['f1']:.1f} [{bs['f1_ci95'][0]:.1f}, {bs['f1_ci95'][1]:.1f}] vs "
                   f"{bs['hyp2']} F1 {bs['f1_hyp2']:.1f} [{bs['f1_hyp2_ci95'][0]:.1f}, {bs['f1_hyp2_ci95'][1]:.1f}]; "
                   f"P(hyp better) = {bs['p_better']:.3f}")
    return "\n".join(out) + "\n"


def to_json(result: dict) -> str:
    """The result as one JSON object (keys in a fixed order, full precision)."""
    return json.dumps(result, indent=2)


def read_score(path: str | Path) -> dict:
    """A `score.json` written by `write_score` (`punctkit score -o`); one-line errors naming the file."""
    p = require_file(path, "score file")
    res = read_json_file(p)
    if not isinstance(res, dict) or not isinstance(res.get("overall"), dict):
        raise PunctkitError(f"{p}: no 'overall' section (expected score.json of punctkit score)")
    return res


def write_score(result: dict, out_dir: str | Path) -> tuple[Path, Path]:
    """Write `score.txt` and `score.json` into `out_dir`, each atomically."""
    d = Path(out_dir)
    txt, js = d / "score.txt", d / "score.json"
    with atomic_write(txt) as f:
        f.write(format_report(result))
    with atomic_write(js) as f:
        f.write(to_json(result) + "\n")
    return txt, js
