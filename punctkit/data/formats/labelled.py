"""The labelled corpus formats: `twocol` (one `word<TAB>LABEL` a line, the IWSLT benchmark files;
a blank line ends an utterance) and `punctuator2` (inline mark tokens, `so ,COMMA if we ... .PERIOD`,
one utterance a line). Each has a reader (-> `Utterance`s, repairs in a `Report`), a writer (lines)
and a line classifier for detection (punctkit.data.formats.registry).
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Iterator

from punctkit.data.formats.base import (
    OutputOptions,
    Report,
    Source,
    Utterance,
    as_source,
    chosen_prob,
    input_lines,
    made_id,
)
from punctkit.data.formats.protocol import CorpusRead
from punctkit.data.labels import (
    INVENTORIES,
    MARK_TEXT,
    LabelSet,
    O,
    Substitution,
    case_of,
    mark_of,
)
from punctkit.data.tokenize import model_lowercase, tokens
from punctkit.files import PunctkitError, where

if TYPE_CHECKING:
    from punctkit.data.labelled import Labelled

KNOWN_LABELS = frozenset(lab for inv in INVENTORIES.values() for lab in inv.labels)
# punctuator2's mark tokens and our label names
P2_TOKENS = {
    ",COMMA": "COMMA", ".PERIOD": "PERIOD", "?QUESTIONMARK": "QUESTION",
    "!EXCLAMATIONMARK": "EXCLAMATION", ";SEMICOLON": "SEMICOLON", ":COLON": "COLON",
    "-DASH": "DASH", "...ELLIPSIS": "DOTS",
}
LABEL_P2 = {v: k for k, v in P2_TOKENS.items()}
_P2_TOKEN = re.compile(r"^[^\w\s]+[A-Z]+$")
_PROB = re.compile(r"(0(\.\d*)?|1(\.0*)?)")
_LABEL_LIKE = re.compile(r"[A-Z][A-Z0-9]*(_[A-Z0-9]+)*")


# ---------------------------------------------------------------- line classifiers (detection)

def twocol_fields(line: str) -> list[str]:
    """The fields of a two-column line: split at tabs, else at spaces; a third tab field that is a
    probability (punctuate --probs) is left out."""
    if "\t" not in line:
        return line.split()
    parts = line.split("\t")
    if len(parts) == 3 and _PROB.fullmatch(parts[2].strip()):
        return parts[:2]
    return parts


def twocol_kind(line: str) -> str:
    """`twocol` for two fields (split at the tab, else at spaces) whose second is a known label or
    empty (tab form); `twocol?` when it is only label-like (upper-case letters, digits, `_`); else ''."""
    parts = twocol_fields(line)
    if len(parts) == 2 and parts[0].strip():
        label = parts[1].strip()
        if label in KNOWN_LABELS or not label:
            return "twocol"
        if _LABEL_LIKE.fullmatch(label):
            return "twocol?"
    return ""


def punctuator2_kind(line: str) -> str:
    """`punctuator2` for a line with a known mark token (`,COMMA`, `.PERIOD`, ...), else ''."""
    return "punctuator2" if any(t in P2_TOKENS for t in line.split()) else ""


# ---------------------------------------------------------------- repairs of words

# the first character also upper case: a word that starts with the damage may come back from
# a true-case model Capitalized (`â™?i` -> `Â™?i`), and its reading must not change with that
_MOJIBAKE = [
    (re.compile("[âÂ]€[™˜]"), "'"),        # ’ ‘ read as cp1252
    (re.compile("[âÂ]€[œ\u009d?]"), ""),   # “ ” (the last byte is often lost as '?')
    (re.compile("[âÂ]€[”“]"), " - "),      # — –
    (re.compile("[âÂ]™[ª?«]"), ""),        # ♪ ♫: music notes in TED subtitles
]


# an escaped ampersand left in the text (`r&ampd`, `AT&amp;T`)
_AMP_ENTITY = re.compile(r"&amp;?")


def repair_word(word: str) -> str:
    """Undo UTF-8-read-as-cp1252 damage and escaped ampersands, and strip symbols; '' when nothing
    of a word is left. A line's word is split as the text reader splits it (data/tokenize.py: `J&J`
    and `AT&T` stay whole, `and/or` is two words), so that a twocol file scores against the same
    words in text."""
    fixed = unescaped = _AMP_ENTITY.sub("&", word)
    for pat, rep in _MOJIBAKE:
        fixed = pat.sub(rep, fixed)
    if fixed == unescaped:
        try:
            fixed = unescaped.encode("cp1252").decode("utf-8")
        except (UnicodeEncodeError, UnicodeDecodeError):
            pass
    words = [t for k, t in tokens(fixed) if k == "w"]
    return " ".join(words)


# ---------------------------------------------------------------- readers

def _check_label(label: str, inventory: LabelSet | None, loc: str) -> None:
    ok = label in inventory if inventory is not None else label in KNOWN_LABELS
    if not ok:
        inv = f" (inventory {inventory.name})" if inventory is not None else ""
        raise PunctkitError(f"{loc}: unknown label '{label}'{inv}")


def read_twocol(path: Source, how: CorpusRead) -> list[Utterance]:
    """Read `word<TAB>LABEL` lines; blank lines end an utterance (labels of `how.inventory`, else any known)."""
    p = as_source(path)
    inventory, report = how.inventory, how.report
    utts: list[Utterance] = []
    cur = Utterance(made_id(p.name, 1), [], [])

    def flush() -> None:
        nonlocal cur
        if cur.words:
            utts.append(cur)
        cur = Utterance(made_id(p.name, len(utts) + 1), [], [])

    for i, line in input_lines(p, how.encoding, how.lines):
        if not line.strip():
            flush()
            continue
        parts = twocol_fields(line)
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


def read_punctuator2(path: Source, how: CorpusRead) -> list[Utterance]:
    """Read inline mark tokens (`word ,COMMA word`), one utterance a line."""
    p = as_source(path)
    inventory, rules, report, lowercase = how.inventory, how.rules, how.report, how.lowercase
    utts = []
    for i, line in input_lines(p, how.encoding, how.lines):
        words: list[str] = []
        labels: list[str] = []
        pending: list[str] = []
        for tok in line.split():
            if tok in P2_TOKENS:
                pending.append(P2_TOKENS[tok])
                continue
            if _P2_TOKEN.match(tok):
                raise PunctkitError(f"{where(p, i)}: unknown punctuator2 mark token '{tok}'")
            _close_marks(words, labels, pending, inventory, rules, report)  # type: ignore[arg-type]
            words.append(tok.lower() if lowercase or model_lowercase(inventory) else tok)  # type: ignore[arg-type]
            labels.append(inventory.label_for(tok, O))  # type: ignore[union-attr]
        _close_marks(words, labels, pending, inventory, rules, report)  # type: ignore[arg-type]
        if words:
            utts.append(Utterance(made_id(p.name, i), words, labels))
    return utts


def _close_marks(words: list[str], labels: list[str], pending: list[str], inventory: LabelSet,
                 rules: Substitution, report: Report) -> None:
    kept = [m for m in (rules.apply(MARK_TEXT[x], inventory) for x in pending) if m is not None]
    if words and kept:
        labels[-1] = inventory.relabel(labels[-1], kept[0])
    report.note("marks dropped (rules, or not the first after a word)", len(pending) - (1 if words and kept else 0))
    pending.clear()



# ---------------------------------------------------------------- writers

def twocol_out(utts: list[Utterance]) -> Iterator[str]:
    """`word<TAB>LABEL` lines, a blank line between utterances."""
    for k, u in enumerate(utts):
        if k:
            yield ""
        yield from (f"{w}\t{lab}" for w, lab in zip(u.words, u.labels))


def punctuator2_out(utts: list[Utterance]) -> Iterator[str]:
    """One line of words and mark tokens per utterance."""
    return (_p2_line(u.words, u.labels) for u in utts)


def _p2_line(words: list[str], labels: list[str]) -> str:
    out = []
    for w, lab in zip(words, labels):
        out.append(w.capitalize() if case_of(lab) == "U" else w)
        if mark_of(lab) != O:
            out.append(LABEL_P2[mark_of(lab)])
    return " ".join(out)


def twocol_emit(d: Labelled, opts: OutputOptions) -> Iterator[str]:
    """punctuate's `word<TAB>LABEL` lines of one unit and a blank line: each word as the input gave it, its mark
    in the label, its case changed only by a case-aware model (OutputOptions.word_column: `$5`, `10\u00a0km`,
    `"Hello"`); with probability rows, the chosen label's probability as a third column. A word holding a tab
    or a line break (a JSON word) is a one-line error: a twocol line cannot hold it."""
    utt, labels, rows = d.utt, d.labels, d.rows
    if not utt.words:
        return
    words = opts.word_column(utt, d.shown)
    for k, w in enumerate(words):
        if any(c in w for c in "\t\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"):
            raise PunctkitError(f"{where(opts.src, utt.lineno, utt.uttid)}: word {k + 1} ({w!r}) holds a tab or a "
                                f"line break, which a twocol line cannot hold: use --format jsonl")
    for k, (w, lab) in enumerate(zip(words, labels)):
        if rows is not None and opts.inventory is not None:
            yield f"{w}\t{lab}\t{chosen_prob(rows[k], opts.inventory, lab):.4f}"
        else:
            yield f"{w}\t{lab}"
    yield ""
