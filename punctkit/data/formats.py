"""Read and write the text formats punctkit understands.

- `twocol`: one token per line, `word<TAB>LABEL` (the IWSLT benchmark files);
  a blank line separates utterances.
- `punctuator2`: inline mark tokens, `so ,COMMA if we ... .PERIOD`, one utterance a line.
- `text`: plain punctuated text, one utterance (or document) a line.
- `kaldi_text`: like `text` with the utterance id first (`utt1 So, if we ...`).
- `datadir`: a Kaldi-style data directory with `text` and `labels` (see datadir.py).

Every reader returns a list of `Utterance` and records repairs in a `Report`.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from punctkit.data.datadir import read_data_dir, write_data_dir
from punctkit.data.labels import (
    INVENTORIES, MARK_TEXT, O, TEXT_MARK, LabelSet, Substitution, case_of, default_substitution,
    get_inventory, inventory_for, mark_of,
)
from punctkit.data.tokenize import join_marked, segment, tokens
from punctkit.data.utterance import Utterance  # noqa: F401 (its readers' and writers' type, imported from here too)
from punctkit.files import PunctkitError, atomic_write, check_not_input, iter_lines, where

FORMATS = ("twocol", "punctuator2", "text", "kaldi_text", "datadir")
KNOWN_LABELS = frozenset(lab for inv in INVENTORIES.values() for lab in inv.labels)
# punctuator2's mark tokens and our label names
P2_TOKENS = {
    ",COMMA": "COMMA", ".PERIOD": "PERIOD", "?QUESTIONMARK": "QUESTION",
    "!EXCLAMATIONMARK": "EXCLAMATION", ";SEMICOLON": "SEMICOLON", ":COLON": "COLON",
    "-DASH": "DASH", "...ELLIPSIS": "DOTS",
}
LABEL_P2 = {v: k for k, v in P2_TOKENS.items()}
_P2_TOKEN = re.compile(r"^[^\w\s]+[A-Z]+$")


@dataclass
class Report:
    """Counts of repairs and rejections, with the first few locations of each kind.

    `strict` turns every repair into an error naming file and line; notes
    (marks dropped by the substitution rules) never fail.
    """

    strict: bool = False
    repairs: Counter = field(default_factory=Counter)
    notes: Counter = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def repair(self, kind: str, loc: str, detail: str = "") -> None:
        """Record one repair; in strict mode, raise instead."""
        if self.strict:
            raise PunctkitError(f"{loc}: {kind}{': ' + detail if detail else ''} (strict mode)")
        self.repairs[kind] += 1
        ex = self.examples.setdefault(kind, [])
        if len(ex) < 3:
            ex.append(f"{loc}{': ' + detail if detail else ''}")

    def note(self, kind: str, n: int = 1) -> None:
        """Record something expected, such as marks removed by the rules."""
        if n:
            self.notes[kind] += n

    def lines(self) -> list[str]:
        """The report as text lines."""
        out = [f"repairs: {sum(self.repairs.values())}"]
        for kind, n in sorted(self.repairs.items()):
            out.append(f"  {kind}: {n}")
            out += [f"    e.g. {e}" for e in self.examples.get(kind, [])]
        for kind, n in sorted(self.notes.items()):
            out.append(f"note: {kind}: {n}")
        return out


# ---------------------------------------------------------------- repairs of words

_MOJIBAKE = [
    (re.compile("â€[™˜]"), "'"),        # ’ ‘ read as cp1252
    (re.compile("â€[œ\u009d?]"), ""),   # “ ” (the last byte is often lost as '?')
    (re.compile("â€[”“]"), " - "),      # — –
    (re.compile("â™[ª?«]"), ""),        # ♪ ♫: music notes in TED subtitles
]


def repair_word(word: str) -> str:
    """Undo UTF-8-read-as-cp1252 damage and strip symbols; '' when nothing of a word is left."""
    fixed = word
    for pat, rep in _MOJIBAKE:
        fixed = pat.sub(rep, fixed)
    if fixed == word:
        try:
            fixed = word.encode("cp1252").decode("utf-8")
        except (UnicodeEncodeError, UnicodeDecodeError):
            pass
    words = [t for k, t in tokens(fixed) if k == "w"]
    return " ".join(words)


# ---------------------------------------------------------------- readers

def detect_format(path: str | Path) -> str:
    """Guess a file's format from its first lines (a directory is a data dir)."""
    p = Path(path)
    if p.is_dir():
        return "datadir"
    lines = [ln for _, ln in _head(p, 50) if ln.strip()]
    if lines and all(ln.count("\t") == 1 and _looks_label(ln.split("\t")[1]) for ln in lines):
        return "twocol"
    if any(_P2_TOKEN.match(t) and t in P2_TOKENS for ln in lines for t in ln.split()):
        return "punctuator2"
    if p.name == "text" or p.name.endswith(".text"):
        return "kaldi_text"
    return "text"


def _head(p: Path, n: int) -> list[tuple[int, str]]:
    out = []
    for i, ln in iter_lines(p):
        out.append((i, ln))
        if i >= n:
            break
    return out


def _looks_label(s: str) -> bool:
    return s == "" or s in KNOWN_LABELS


def _check_label(label: str, inventory: LabelSet | None, loc: str) -> None:
    ok = label in inventory if inventory is not None else label in KNOWN_LABELS
    if not ok:
        inv = f" (inventory {inventory.name})" if inventory is not None else ""
        raise PunctkitError(f"{loc}: unknown label '{label}'{inv}")


def read_twocol(path: str | Path, inventory: LabelSet | None, report: Report,
                lines: tuple[int, int] | None = None) -> list[Utterance]:
    """Read `word<TAB>LABEL` lines; blank lines end an utterance."""
    p = Path(path)
    utts: list[Utterance] = []
    cur = Utterance(f"{p.name}-{1:06d}", [], [])

    def flush() -> None:
        nonlocal cur
        if cur.words:
            utts.append(cur)
        cur = Utterance(f"{p.name}-{len(utts) + 1:06d}", [], [])

    for i, line in iter_lines(p, lines):
        if not line.strip():
            flush()
            continue
        parts = line.split("\t") if "\t" in line else line.split()
        if len(parts) != 2:
            raise PunctkitError(f"{where(p, i)}: expected 'word<TAB>LABEL', got {len(parts)} fields")
        word, label = parts[0].strip(), parts[1].strip()
        loc = where(p, i)
        if not label:
            report.repair("empty label set to O", loc, repr(word))
            label = O
        _check_label(label, inventory, loc)
        fixed = repair_word(word) if word else ""
        if fixed != word and fixed:
            report.repair("mojibake or symbols repaired", loc, f"{word!r} -> {fixed!r}")
        if not fixed:
            _empty_token(cur, label, report, loc, word)
            continue
        for k, w in enumerate(fixed.split(" ")):  # a repair may leave several words
            cur.words.append(w)
            cur.labels.append(label if k == len(fixed.split(" ")) - 1 else inventory_o(label))
    flush()
    return utts


def inventory_o(label: str) -> str:
    """The no-mark label of the same inventory style (`L_O` for case-aware labels)."""
    case = case_of(label)
    return f"{case}_{O}" if case else O


def _empty_token(cur: Utterance, label: str, report: Report, loc: str, word: str) -> None:
    """An empty token carries no word: its mark moves to the previous word if that has none."""
    what = f"token {word!r}" if word else "empty word"
    if mark_of(label) == O:
        report.repair("token without a word, label O, dropped", loc, what)
    elif cur.labels and mark_of(cur.labels[-1]) == O:
        prev = case_of(cur.labels[-1])
        cur.labels[-1] = f"{prev}_{mark_of(label)}" if prev else mark_of(label)
        report.repair("token without a word, mark moved to the previous word", loc, f"{what} {label}")
    else:
        report.repair("token without a word, mark dropped (previous word already marked)", loc, f"{what} {label}")


def read_punctuator2(path: str | Path, inventory: LabelSet, rules: Substitution, report: Report,
                     lowercase: bool = False, lines: tuple[int, int] | None = None) -> list[Utterance]:
    """Read inline mark tokens (`word ,COMMA word`), one utterance a line."""
    p = Path(path)
    utts = []
    for i, line in iter_lines(p, lines):
        words: list[str] = []
        labels: list[str] = []
        pending: list[str] = []
        for tok in line.split():
            if tok in P2_TOKENS:
                pending.append(P2_TOKENS[tok])
                continue
            if _P2_TOKEN.match(tok):
                raise PunctkitError(f"{where(p, i)}: unknown punctuator2 mark token '{tok}'")
            _close_marks(words, labels, pending, inventory, rules, report)
            words.append(tok.lower() if lowercase or inventory.case_aware else tok)
            labels.append(inventory.make(O, tok[:1].isupper()))
        _close_marks(words, labels, pending, inventory, rules, report)
        if words:
            utts.append(Utterance(f"{p.name}-{i:06d}", words, labels))
    return utts


def _close_marks(words: list[str], labels: list[str], pending: list[str], inventory: LabelSet,
                 rules: Substitution, report: Report) -> None:
    kept = [m for m in (rules.apply(MARK_TEXT[x], inventory) for x in pending) if m is not None]
    if words and kept:
        labels[-1] = inventory.make(kept[0], case_of(labels[-1]) == "U")
    report.note("marks dropped (rules, or not the first after a word)", len(pending) - (1 if words and kept else 0))
    pending.clear()


def read_text(path: str | Path, inventory: LabelSet, rules: Substitution, report: Report,
              lowercase: bool = False, with_ids: bool = False,
              lines: tuple[int, int] | None = None) -> list[Utterance]:
    """Read punctuated text, one utterance a line (`with_ids`: Kaldi `text`, id first)."""
    p = Path(path)
    utts = []
    seen: set[str] = set()
    for i, line in iter_lines(p, lines):
        if with_ids:
            uttid, _, line = line.strip().partition(" ")
            if not uttid:
                continue
            if uttid in seen:
                raise PunctkitError(f"{where(p, i)}: duplicate utterance id '{uttid}'")
            seen.add(uttid)
        else:
            uttid = f"{p.name}-{i:06d}"
        seg = segment(line, inventory, rules, lowercase)
        report.note("marks dropped (rules, or not the first after a word)", seg.dropped_marks)
        report.note("quotes, brackets and other symbols dropped", seg.dropped_symbols)
        if seg.words:
            utts.append(Utterance(uttid, seg.words, seg.marks))
        elif line.strip():
            report.repair("line without any word skipped", where(p, i), line.strip()[:40])
    return utts


def read(path: str | Path, fmt: str | None = None, inventory: LabelSet | str | None = None,
         rules: Substitution | None = None, lowercase: bool = False,
         report: Report | None = None, lines: tuple[int, int] | None = None,
         ) -> tuple[list[Utterance], LabelSet]:
    """Read any format; returns the utterances and their label inventory.

    With no inventory, labelled formats infer the smallest one that fits and
    text formats use 4-class. `lines=(first, last)` reads only those lines of a file.
    """
    p = Path(path)
    if not p.exists():
        raise PunctkitError(f"file not found: {p}")
    fmt = fmt or detect_format(p)
    if fmt not in FORMATS:
        raise PunctkitError(f"unknown format '{fmt}' (known: {', '.join(FORMATS)})")
    inv = get_inventory(inventory) if isinstance(inventory, str) else inventory
    report = report or Report()
    if fmt == "twocol":
        utts = read_twocol(p, inv, report, lines)
    elif fmt == "datadir":
        dd = read_data_dir(p, inv)
        utts, inv = dd.utterances, dd.inventory
    else:
        inv = inv or get_inventory("4class")
        rules = rules or default_substitution(inv)
        if fmt == "punctuator2":
            utts = read_punctuator2(p, inv, rules, report, lowercase, lines)
        else:
            utts = read_text(p, inv, rules, report, lowercase, with_ids=fmt == "kaldi_text", lines=lines)
    if inv is None:
        inv = inventory_for({lab for u in utts for lab in u.labels} or {O})
    if lowercase:
        for u in utts:
            u.words = [w.lower() for w in u.words]
    return utts, inv


# ---------------------------------------------------------------- writers

def _p2_line(words: list[str], labels: list[str]) -> str:
    out = []
    for w, lab in zip(words, labels):
        out.append(w.capitalize() if case_of(lab) == "U" else w)
        if mark_of(lab) != O:
            out.append(LABEL_P2[mark_of(lab)])
    return " ".join(out)


def write(utts: list[Utterance], path: str | Path, fmt: str, inventory: LabelSet | None = None,
          overwrite: bool = False, inputs: list[str | Path] | tuple = ()) -> None:
    """Write utterances in `fmt`; the file appears only when complete.

    A file output may replace an existing file (the user named it), never one of
    `inputs`; a data directory is written by `write_data_dir` (`overwrite` there).
    """
    if fmt == "datadir":
        inv = inventory or inventory_for({lab for u in utts for lab in u.labels} or {O})
        write_data_dir(path, utts, inv, overwrite=overwrite, inputs=inputs)
        return
    if fmt not in FORMATS:
        raise PunctkitError(f"unknown format '{fmt}' (known: {', '.join(FORMATS)})")
    check_not_input(path, inputs)
    with atomic_write(path) as f:
        for k, u in enumerate(utts):
            if fmt == "twocol":
                if k:
                    f.write("\n")
                f.writelines(f"{w}\t{lab}\n" for w, lab in zip(u.words, u.labels))
            elif fmt == "punctuator2":
                f.write(_p2_line(u.words, u.labels) + "\n")
            elif fmt == "text":
                f.write(join_marked(u.words, u.labels) + "\n")
            else:
                f.write(f"{u.uttid} {join_marked(u.words, u.labels)}\n")


def convert(src: str | Path, dst: str | Path, src_fmt: str | None = None, dst_fmt: str | None = None,
            inventory: str | None = None, overwrite: bool = False) -> tuple[int, int]:
    """Convert between formats; returns (utterances, words) written (`dst` never replaces `src`)."""
    check_not_input(dst, [src])
    utts, inv = read(src, src_fmt, inventory)
    if dst_fmt is None:
        dst_fmt = "datadir" if Path(dst).is_dir() or str(dst).endswith("/") else "text"
    write(utts, dst, dst_fmt, inv, overwrite, inputs=[src])
    return len(utts), sum(len(u.words) for u in utts)


def flatten(utts: list[Utterance]) -> tuple[list[str], list[str]]:
    """All words and all labels of a list of utterances, in order."""
    return [w for u in utts for w in u.words], [lab for u in utts for lab in u.labels]


__all__ = [
    "FORMATS", "Utterance", "Report", "read", "write", "convert", "detect_format", "flatten",
    "repair_word", "TEXT_MARK",
]
