"""Punctuated text -> data directory: blocks, rechunking, the repair report, statistics."""
from __future__ import annotations

import random
import re
from collections import Counter
from pathlib import Path
from sys import intern

from punctkit.data.datadir import read_data_dir, write_data_dir
from punctkit.data.formats import CorpusRead, Report, Utterance, detect_format, flatten, get_format, read
from punctkit.data.formats.datadir_io import TurnDir, has_turns, turn_dir
from punctkit.data.formats.nlp import SpokenTurn, one_utterance, read_nlp
from punctkit.data.formats.sclite import trn_lines
from punctkit.data.formats.text import PLAIN, TextOptions, kaldi_text_lines, read_text
from punctkit.data.formats.turns import TURN_FORMATS, transcript_turns
from punctkit.data.labels import (
    SENTENCE_END,
    LabelSet,
    O,
    Substitution,
    default_substitution,
    get_inventory,
    load_substitution,
    mark_of,
)
from punctkit.data.utterance import is_one_word
from punctkit.files import PunctkitError, iter_lines, where
from punctkit.progress import WordProgress

NLP_OPTS = TextOptions(split_contractions=True)  # the one text option an NLP input takes


SENTENCES = "sentences"  # --rechunk sentences: each sentence its own unit (Faber's unrechunked data)


def parse_chunk_spec(spec: str) -> list[tuple[int, int]]:
    """`25-50,50-75` -> [(25, 50), (50, 75)]; `60` -> [(60, 60)]; `sentences` -> [] (cut at sentence ends)."""
    if spec.strip() == SENTENCES:
        return []
    ranges = []
    for part in spec.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not m:
            raise PunctkitError(f"bad chunk length '{part}' in '{spec}' (expected N or A-B)")
        a, b = int(m.group(1)), int(m.group(2) or m.group(1))
        if not 0 < a <= b:
            raise PunctkitError(f"bad chunk range '{part}' in '{spec}'")
        ranges.append((a, b))
    return ranges


def cut(words: list[str], labels: list[str], lengths: "iter[int]", prefix: str) -> list[Utterance]:
    """Cut one word stream into consecutive utterances whose lengths come from `lengths`."""
    out, pos = [], 0
    while pos < len(words):
        n = next(lengths)
        out.append(Utterance(f"{prefix}-{len(out) + 1:06d}", words[pos:pos + n], labels[pos:pos + n]))
        pos += n
    return out


def sentence_lengths(labels: list[str]) -> list[int]:
    """The lengths of the sentences of a labelled word stream: each ends at a sentence-final mark
    (the stream's rest, if it has no such mark at its end, is the last)."""
    out, start = [], 0
    for i, lab in enumerate(labels):
        if mark_of(lab) in SENTENCE_END:
            out.append(i + 1 - start)
            start = i + 1
    return out + ([len(labels) - start] if start < len(labels) else [])


def rechunk(utts: list[Utterance], spec: str, seed: int, prefix: str) -> list[Utterance]:
    """Join all utterances and cut again, once per range of `spec` (Faber 2020 §4.3.1).

    Each range gives one copy of the data; lengths are drawn uniformly from the
    range with a generator seeded by `seed`, so the result is deterministic.
    `sentences`: one copy cut at the sentence ends, each sentence a unit (the sentence
    boundaries kept: Faber's unrechunked data).
    """
    words, labels = flatten(utts)
    out: list[Utterance] = []
    ranges = parse_chunk_spec(spec)
    if not ranges:
        return cut(words, labels, iter(sentence_lengths(labels)), prefix)
    for k, (a, b) in enumerate(ranges, 1):
        rng = random.Random(seed * 1000 + k)
        lengths = iter(lambda: rng.randint(a, b), None)
        tag = f"{prefix}-r{k}" if len(ranges) > 1 else prefix
        out += cut(words, labels, lengths, tag)
    return out


def check_block_len(block_len: int | None) -> None:
    """Raise a one-line error unless `block_len` is None (no blocks) or a positive word count."""
    if block_len is not None and (isinstance(block_len, bool) or not isinstance(block_len, int) or block_len < 1):
        raise PunctkitError(f"--block-len must be a positive number of words, got {block_len!r}")


def blocks(utts: list[Utterance], block_len: int, prefix: str) -> list[Utterance]:
    """Cut each utterance (a word stream) into fixed-length blocks; ids keep the order."""
    check_block_len(block_len)
    out = []
    for j, u in enumerate(utts, 1):
        tag = prefix if len(utts) == 1 else f"{prefix}-{j:05d}"
        out += cut(u.words, u.labels, iter(lambda: block_len, None), tag)
    return out


def read_file_list(path: Path) -> list[tuple[str, Path]]:
    """(id, path) of a file list's `id path` lines (paths as given, relative to the current
    directory, as in Kaldi's scp files); a bad line, a repeated id or a missing file is an error
    naming the list's line."""
    out: list[tuple[str, Path]] = []
    seen: set[str] = set()
    for i, line in iter_lines(path):
        fields = line.split(None, 1)
        if not fields:
            continue
        if len(fields) != 2:
            raise PunctkitError(f"{where(path, i)}: expected 'id path' (an id of one word, then the input's path)")
        uid, name = fields[0], Path(fields[1].strip())
        if uid in seen:
            raise PunctkitError(f"{where(path, i)}: id '{uid}' is listed twice; give every input its own id")
        if not name.is_file():
            raise PunctkitError(f"{where(path, i)}: no such file: {name}")
        seen.add(uid)
        out.append((uid, name))
    if not out:
        raise PunctkitError(f"{path}: lists no input ('id path' lines)")
    return out


# the text formats prepare's repairs apply to, and how each gives its lines' ids (None: made up)
ID_LINES = {"text": None, "kaldi_text": kaldi_text_lines, "trn": trn_lines}


def read_input(path: Path, fmt: str | None, inv: LabelSet, subst: Substitution, lowercase: bool, report: Report,
               lines: tuple[int, int] | None, encoding: str | None, opts: TextOptions) -> list[Utterance]:
    """One input's utterances in inventory `inv`. Repairs and one stream a file (`opts`) need plain
    or Kaldi text; a labelled input whose labels are marks only (IWSLT's files) read into a
    case-aware `inv` gets each word's case class from its letters (`with_case`)."""
    name = fmt or detect_format(path, encoding)
    if name == "nlp" and opts in (PLAIN, NLP_OPTS):  # a call is one stream; its tokens may be split as IWSLT's
        return read_nlp(path, CorpusRead(inv, subst, report, lowercase, lines, encoding), opts.split_contractions)
    if opts != PLAIN:
        if name not in ID_LINES:
            raise PunctkitError(f"{path}: read as {name}, but {' '.join(options_used(opts))} apply to plain "
                                f"text (and Kaldi text and trn) only; give --from text if it is one")
        return read_text(path, CorpusRead(inv, subst, report, lowercase, lines, encoding), ID_LINES[name], opts)
    if name in TURN_FORMATS:  # a transcript's words alone (blocks, rechunking): one stream, as a call's
        if lines is not None:
            raise PunctkitError(f"{path}: --lines is for line-per-utterance text; read as {name}, an input is one "
                                f"stream (leave --lines out)")
        turns = transcript_turns(path, name, CorpusRead(inv, subst, report, lowercase, None, encoding),
                                 told=fmt is not None)
        return one_utterance(path.name, turns or [])
    if inv.case_aware and get_format(name, "reader").labels:
        utts, found = read(path, name, None, subst, lowercase, report, lines, encoding)
        if not found.case_aware:
            return with_case(utts, inv, path)
    return read(path, name, inv, subst, lowercase, report, lines, encoding)[0]


def read_turns(path: Path, fmt: str | None, inv: LabelSet, subst: Substitution, lowercase: bool, report: Report,
               encoding: str | None, opts: TextOptions) -> list[SpokenTurn] | None:
    """One input's speaker turns, each word with its times, where its format keeps them (turns.transcript_turns:
    an NLP call, read as `read_input` reads it, and every format punctuate reads that has no corpus reader: an
    stm, a CTM, the JSON of Whisper and the ASR services, subtitles, ...); None for an input of another format, or
    one with text options that are not its (`read_input` reads it, or refuses them)."""
    name = fmt or detect_format(path, encoding)
    if opts != PLAIN and not (name == "nlp" and opts == NLP_OPTS):
        return None
    return transcript_turns(path, name, CorpusRead(inv, subst, report, lowercase, None, encoding),
                            opts.split_contractions, told=fmt is not None)


def with_case(utts: list[Utterance], inv: LabelSet, path: Path) -> list[Utterance]:
    """Utterances labelled in a case-less inventory (marks only), relabelled in the case-aware `inv`:
    each word's mark kept, its case class read from its letters (`LabelSet.label_for`)."""
    lacking = sorted({lab for u in utts for lab in u.labels} - {O, *inv.marks})
    if lacking:
        raise PunctkitError(f"{path}: its labels hold {', '.join(lacking)}, which inventory {inv.name} "
                            f"lacks; choose an inventory with those marks")
    for u in utts:
        u.labels = [intern(inv.label_for(w, lab)) for w, lab in zip(u.words, u.labels)]
    return utts


def options_used(opts: TextOptions) -> list[str]:
    """The prepare options that `opts` stands for, as a command line writes them."""
    flags = [("--decode-html", opts.html), ("--drop-notes", opts.notes),
             ("--split-contractions", opts.split_contractions), ("--one-stream", opts.one_stream)]
    out = [f for f, on in flags if on]
    if opts.drop_lines is not None:
        out.append(f"--drop-lines {opts.drop_lines.pattern!r}")
    return out


def prepare(inputs: list[Path], out: Path, *, fmt: str | None = None, inventory: str = "4class",
            rules: Path | None = None, lowercase: bool = False, rechunk_spec: str | None = None,
            block_len: int | None = None, seed: int = 1, strict: bool = False,
            name: str | None = None, lines: tuple[int, int] | None = None, overwrite: bool = False,
            encoding: str | None = None, text_opts: TextOptions = PLAIN,
            file_list: Path | None = None, show_progress: bool = True) -> Report:
    """Build the data directory `out` from punctuated text files; returns the repair report.

    Turns: an input that says who speaks or when (`read_turns`: an NLP call's speakers and word times, an stm's
    segments, a Whisper or ASR service's JSON, a CTM, subtitles) is written an utterance a speaker turn, with
    `segments`, `ctm` or `utt2reco` (datadir_io.turn_dir), unless it is cut into blocks or rechunked (its turns
    and times are then dropped, as an input without them has).
    Streams (`block_len`): each input is one document cut into consecutive blocks
    that ignore sentence ends; `utt2spk` maps the blocks to their document so
    models can window across them (plain text is a document a line unless
    `text_opts.one_stream`). Rechunked data: each chunk is its own unit.
    `file_list` (instead of `inputs`): `id path` lines; each input's document id is its id.
    `out` is written by `write_data_dir` (see there for `overwrite`); no input may be
    one of its files. `show_progress`: a bar over the inputs' bytes and words, on standard error
    while it is a terminal and the corpus is large (progress.WordProgress; False: --quiet).
    """
    check_block_len(block_len)
    if rechunk_spec is not None:
        parse_chunk_spec(rechunk_spec)  # a bad spec fails before any input is read
    if bool(inputs) == (file_list is not None):
        raise PunctkitError("give the inputs either as arguments or as --file-list, not both" if inputs
                            else "no input: give text files, or --file-list LIST")
    inv: LabelSet = get_inventory(inventory)
    subst = load_substitution(rules, inv) if rules else default_substitution(inv)
    report = Report(strict=strict)
    if name is not None and not is_one_word(name):
        raise PunctkitError(f"--name {name!r}: the utterance id prefix must be one word, without white space")
    name = name or "_".join(Path(out).name.split()) or "data"  # ids are one word
    sources = read_file_list(file_list) if file_list is not None else [
        (name if len(inputs) == 1 else f"{name}-{k + 1:03d}", Path(p)) for k, p in enumerate(inputs)]
    utts: list[Utterance] = []
    utt2spk: dict[str, str] = {}
    turned = TurnDir()  # the inputs written a turn an utterance
    sizes = [p.stat().st_size if p.is_file() else None for _, p in sources]  # a pipe's: unknown
    done = [0]  # bytes of the inputs read
    total = None if None in sizes else sum(n or 0 for n in sizes)
    with WordProgress("prepare", size=total, read=lambda: done[0], show=show_progress) as bar:
        for (doc, path), size in zip(sources, sizes):
            turns = None if block_len is not None or rechunk_spec is not None or lines is not None else \
                read_turns(path, fmt, inv, subst, lowercase, report, encoding, text_opts)
            if turns is not None and has_turns(turns):
                t = turn_dir(doc, turns)
                turned.add(t)
                got, speakers = t.utts, t.utt2spk
            else:
                got = one_utterance(path.name, turns) if turns is not None else \
                    read_input(path, fmt, inv, subst, lowercase, report, lines, encoding, text_opts)
                got, speakers = document(got, doc, block_len, text_opts.one_stream)
            utt2spk.update(speakers)
            utts += got
            done[0] += size or 0
            bar.update(sum(len(u.words) for u in got))
    if rechunk_spec is not None:
        utts = rechunk(utts, rechunk_spec, seed, name)
        utt2spk = {u.uttid: u.uttid for u in utts}
    given = [p for _, p in sources]
    if not utts:
        raise PunctkitError(f"no words found in {describe_inputs(given, file_list)}")
    log = [f"# punctkit prepare {describe_inputs(given, file_list)} -> {out}",
           *([f"options: {' '.join(options_used(text_opts))}"] if text_opts != PLAIN else []),
           f"utterances: {len(utts)}  words: {sum(len(u.words) for u in utts)}",
           *([f"speaker turns: {len(turned.utts)} (timed: {len(turned.segments)})"] if turned.utts else []),
           ] + report.lines()
    extra_inputs = [*([rules] if rules else []), *([file_list] if file_list else [])]
    write_data_dir(out, utts, inv, utt2spk, extra={"prepare.log": log, **turned.files()}, overwrite=overwrite,
                   inputs=[*given, *extra_inputs])
    return report


def document(got: list[Utterance], doc: str, block_len: int | None,
             one_stream: bool) -> tuple[list[Utterance], dict[str, str]]:
    """One input's utterances as document `doc`'s and their speakers (utt2spk): cut into blocks whose speaker is
    the document (`block_len`); else each utterance its own speaker, its id prefixed by the document's (the
    document's id alone for `one_stream` text)."""
    if block_len is not None:
        got = blocks(got, block_len, doc)
        return got, {u.uttid: doc for u in got}
    for u in got:
        u.uttid = doc if one_stream else f"{doc}-{u.uttid}"
    return got, {u.uttid: u.uttid for u in got}


def describe_inputs(paths: list[Path], file_list: Path | None) -> str:
    """The inputs as the log and messages name them: the paths, or the file list and its size."""
    if file_list is not None:
        return f"--file-list {file_list} ({len(paths)} files)"
    return " ".join(map(str, paths))


def stats(utts: list[Utterance], inventory: LabelSet) -> list[tuple[str, int, float]]:
    """Rows (class, count, % of words) per mark, with words and sentences first; case-aware
    inventories add their case classes (true case: L, C, U, M; case4/case6: capitalised)."""
    _, labels = flatten(utts)
    marks = Counter(mark_of(lab) for lab in labels)
    n = max(len(labels), 1)
    rows = [("words", len(labels), 100.0),
            ("sentences", sum(marks[m] for m in SENTENCE_END), 100.0 * sum(marks[m] for m in SENTENCE_END) / n)]
    for m in (O,) + inventory.marks:
        rows.append((m, marks[m], 100.0 * marks[m] / n))
    if inventory.true_case:
        cases = Counter(lab[0] for lab in labels)
        rows += [(f"case {c} ({inventory.case_style(c)})", cases[c], 100.0 * cases[c] / n) for c in inventory.cases]
    elif inventory.case_aware:
        up = sum(1 for lab in labels if lab.startswith("U_"))
        rows.append(("capitalised", up, 100.0 * up / n))
    return rows


def stats_table(path: Path, encoding: str | None = None) -> str:
    """The label distribution table of a data directory (or any readable file)."""
    if Path(path).is_dir():
        dd = read_data_dir(path)
        utts, inv = dd.utterances, dd.inventory
    else:
        utts, inv = read(path, encoding=encoding)
    lines = [f"{'class':<16} {'count':>9} {'%':>7}"]
    lines += [f"{c:<16} {n:>9} {p:>7.2f}" for c, n, p in stats(utts, inv)]
    return "\n".join(lines)
