#!/usr/bin/env python3
"""A cased reference for IWSLT's test2011: its words and marks, each word in the case of the
published text (the IWSLT 2012 MT source, `<seg>` lines), as a true-case data directory.

    python local/cased_reference.py $IWSLT/IWSLT12.TED.MT.tst2011.en-fr.en.xml data/test_ref data/test_cased

TEST_REF is test2011 as prepared (`data/test_ref`: 100-word blocks, lower-case words). The XML's
segments are tokenized as IWSLT's files are (punctkit's tokens, contractions split: `I'm` -> `I 'm`)
and aligned to TEST_REF's words ignoring case (difflib; where they differ, words with the same
letters and digits are aligned too). A word takes the exact form of the XML word it is aligned
with when the two are equal ignoring case, else the case of each of its letters (test2011's `dc`
for the XML's `D.C.` -> `DC`, `st` for `St.` -> `St`). Any other word (test2011's `cannot` for the
XML's `can't`, a word the XML lacks) has no case reference: it keeps TEST_REF's form, and the file
`case_unknown` lists it (`uttid idx ...`, 0-based word indices within the utterance; an utterance
without such words has no line), as `punctkit score` reads it. OUT has TEST_REF's utterance ids,
words (equal ignoring case) and marks; each label's case class is read from its cased word
(`--inventory`, truecase4 by default; with Faber's case4/case6 the words are lower-cased, as their
data hold them, and a label's U says the published word is capitalised). The count of words without a case
reference is printed, and `OUT/cased_reference.log` lists each with its neighbours.
"""
from __future__ import annotations

import argparse
import difflib
import html
import re
import sys
from pathlib import Path
from typing import Iterator

from punctkit.data.datadir import DATA_DIR_FILES, read_data_dir, write_data_dir
from punctkit.data.labels import get_inventory, mark_of
from punctkit.data.tokenize import split_contraction, tokens
from punctkit.data.utterance import Utterance
from punctkit.files import PunctkitError, check_output_dir, write_lines

CASE_UNKNOWN = "case_unknown"
SEG = re.compile(r"<seg[^>]*>(.*?)</seg>", re.DOTALL)


def xml_words(path: Path) -> list[str]:
    """The words of an IWSLT XML file's `<seg>` elements in order, tokenized as IWSLT's files are."""
    text = path.read_text(encoding="utf-8")
    segs = SEG.findall(text)
    if not segs:
        raise PunctkitError(f"{path}: no <seg> elements (not an IWSLT MT XML file?)")
    return [piece for seg in segs for kind, tok in tokens(html.unescape(seg)) if kind == "w"
            for piece in split_contraction(tok)]


def letters(word: str) -> str:
    """The letters and digits of `word`, lower-cased (`D.C.` -> `dc`)."""
    return "".join(c for c in word.lower() if c.isalnum())


def in_case_of(word: str, form: str) -> str:
    """`word` with each letter in the case of the same letter of `form`, whose letters and digits
    are the same (`dc`, `D.C.` -> `DC`); `form` itself when the two are equal ignoring case."""
    if word.lower() == form.lower():
        return form
    cases = iter(c for c in form if c.isalnum())
    return "".join(next(cases) if c.isalnum() else c for c in word)


def matched(a: list[str], b: list[str]) -> Iterator[tuple[int, int]]:
    """(i, j) with a[i] == b[j], in order: difflib's matching blocks of the two lists."""
    for m in difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks():
        yield from zip(range(m.a, m.a + m.size), range(m.b, m.b + m.size))


def cased_forms(words: list[str], source: list[str]) -> tuple[list[str], list[int]]:
    """`words` each in the case of the `source` word aligned with it, and the indices of the words
    with none (left as they are). Words are aligned ignoring case (difflib); between two aligned
    stretches, words with the same letters and digits are aligned too (`dc` and `D.C.`, `st` and `St.`)."""
    pairs: dict[int, int] = {}
    lower = [w.lower() for w in words], [w.lower() for w in source]
    for op, a1, a2, b1, b2 in difflib.SequenceMatcher(None, *lower, autojunk=False).get_opcodes():
        if op == "equal":
            pairs.update(zip(range(a1, a2), range(b1, b2)))
        elif op == "replace":
            inner = matched([letters(w) for w in words[a1:a2]], [letters(w) for w in source[b1:b2]])
            pairs.update((a1 + i, b1 + j) for i, j in inner)
    out = [in_case_of(w, source[pairs[i]]) if i in pairs else w for i, w in enumerate(words)]
    return out, [i for i in range(len(words)) if i not in pairs]


def cased_reference(xml: Path, test_ref: Path, out: Path, inventory: str = "truecase4") -> tuple[int, int]:
    """Write OUT (see the module's docstring); returns (words, words without a case reference)."""
    inv = get_inventory(inventory)
    if not inv.case_aware:
        raise PunctkitError(f"--inventory {inventory}: the cased reference needs a case-aware inventory "
                            f"(truecase4, truecase6, case4, case6)")
    check_output_dir(out, (*DATA_DIR_FILES, CASE_UNKNOWN), inputs=[xml, test_ref])
    dd = read_data_dir(test_ref)
    words = [w for u in dd.utterances for w in u.words]
    labels = [lab for u in dd.utterances for lab in u.labels]
    cased, unknown = cased_forms(words, xml_words(xml))
    utts, unknown_lines, pos = [], [], 0
    missing = set(unknown)
    for u in dd.utterances:
        span = range(pos, pos + len(u.words))
        utts.append(Utterance(u.uttid, [cased[i] if inv.true_case else cased[i].lower() for i in span],
                              [inv.label_for(cased[i], mark_of(labels[i])) for i in span]))
        idx = [str(i - pos) for i in span if i in missing]
        if idx:
            unknown_lines.append(f"{u.uttid} {' '.join(idx)}")
        pos += len(u.words)
    log = [f"# cased_reference.py {xml} {test_ref} -> {out}",
           f"words: {len(words)}  without a case reference: {len(unknown)} (listed in {CASE_UNKNOWN})"]
    log += [f"  {i}: {' '.join(words[max(0, i - 3):i])} [{words[i]}] {' '.join(words[i + 1:i + 4])}" for i in unknown]
    write_data_dir(out, utts, inv, dd.utt2spk, extra={"cased_reference.log": log}, overwrite=True,
                   inputs=[xml, test_ref])
    write_lines(out / CASE_UNKNOWN, unknown_lines)  # always written: an old list would contradict the new text
    return len(words), len(unknown)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("xml", type=Path, help="IWSLT12.TED.MT.tst2011.en-fr.en.xml")
    ap.add_argument("test_ref", type=Path, help="test2011 as prepared (data/test_ref)")
    ap.add_argument("out", type=Path, help="the cased data directory to write (data/test_cased)")
    ap.add_argument("--inventory", default="truecase4",
                    help="a case-aware inventory (truecase4, truecase6, case4, case6)")
    a = ap.parse_args()
    try:
        n, missing = cased_reference(a.xml, a.test_ref, a.out, a.inventory)
    except PunctkitError as e:
        print(f"cased_reference.py: {e}", file=sys.stderr)
        return 1
    print(f"{a.out}: {n} words, {missing} without a case reference (listed in {a.out}/{CASE_UNKNOWN})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
