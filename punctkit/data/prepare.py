"""Punctuated text -> data directory: blocks, rechunking, the repair report, statistics."""
from __future__ import annotations

import random
import re
from collections import Counter
from pathlib import Path

from punctkit.data.datadir import read_data_dir, write_data_dir
from punctkit.data.formats import Report, Utterance, flatten, read
from punctkit.data.labels import O, SENTENCE_END, LabelSet, default_substitution, get_inventory, load_substitution, mark_of
from punctkit.data.utterance import is_one_word
from punctkit.files import PunctkitError


def parse_chunk_spec(spec: str) -> list[tuple[int, int]]:
    """`25-50,50-75` -> [(25, 50), (50, 75)]; `60` -> [(60, 60)]."""
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


def rechunk(utts: list[Utterance], spec: str, seed: int, prefix: str) -> list[Utterance]:
    """Join all utterances and cut again, once per range of `spec` (Faber 2020 §4.3.1).

    Each range gives one copy of the data; lengths are drawn uniformly from the
    range with a generator seeded by `seed`, so the result is deterministic.
    """
    words, labels = flatten(utts)
    out: list[Utterance] = []
    ranges = parse_chunk_spec(spec)
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


def prepare(inputs: list[Path], out: Path, fmt: str | None = None, inventory: str = "4class",
            rules: Path | None = None, lowercase: bool = False, rechunk_spec: str | None = None,
            block_len: int | None = None, seed: int = 1, strict: bool = False,
            name: str | None = None, lines: tuple[int, int] | None = None, overwrite: bool = False,
            encoding: str | None = None) -> Report:
    """Build the data directory `out` from punctuated text files; returns the repair report.

    Streams (`block_len`): each input is one document cut into consecutive blocks
    that ignore sentence ends; `utt2spk` maps the blocks to their document so
    models can window across them. Rechunked data: each chunk is its own unit.
    `out` is written by `write_data_dir` (see there for `overwrite`); no input may be
    one of its files.
    """
    check_block_len(block_len)
    if rechunk_spec is not None:
        parse_chunk_spec(rechunk_spec)  # a bad spec fails before any input is read
    inv: LabelSet = get_inventory(inventory)
    subst = load_substitution(rules, inv) if rules else default_substitution(inv)
    report = Report(strict=strict)
    if name is not None and not is_one_word(name):
        raise PunctkitError(f"--name {name!r}: the utterance id prefix must be one word, without white space")
    name = name or "_".join(Path(out).name.split()) or "data"  # ids are one word
    utts: list[Utterance] = []
    utt2spk: dict[str, str] = {}
    for k, path in enumerate(inputs):
        got, _ = read(path, fmt, inv, subst, lowercase, report, lines, encoding)
        doc = name if len(inputs) == 1 else f"{name}-{k + 1:03d}"
        if block_len is not None:
            got = blocks(got, block_len, doc)
            utt2spk.update({u.uttid: doc for u in got})
        else:
            for u in got:
                u.uttid = f"{doc}-{u.uttid}"
                utt2spk[u.uttid] = u.uttid
        utts += got
    if rechunk_spec is not None:
        utts = rechunk(utts, rechunk_spec, seed, name)
        utt2spk = {u.uttid: u.uttid for u in utts}
    if not utts:
        raise PunctkitError(f"no words found in {', '.join(map(str, inputs))}")
    log = [f"# punctkit prepare {' '.join(map(str, inputs))} -> {out}",
           f"utterances: {len(utts)}  words: {sum(len(u.words) for u in utts)}"] + report.lines()
    write_data_dir(out, utts, inv, utt2spk, extra={"prepare.log": log}, overwrite=overwrite,
                   inputs=[*inputs, *([rules] if rules else [])])
    return report


def stats(utts: list[Utterance], inventory: LabelSet) -> list[tuple[str, int, float]]:
    """Rows (class, count, % of words) per mark, with words and sentences first."""
    _, labels = flatten(utts)
    marks = Counter(mark_of(lab) for lab in labels)
    n = max(len(labels), 1)
    rows = [("words", len(labels), 100.0),
            ("sentences", sum(marks[m] for m in SENTENCE_END), 100.0 * sum(marks[m] for m in SENTENCE_END) / n)]
    for m in (O,) + inventory.marks:
        rows.append((m, marks[m], 100.0 * marks[m] / n))
    if inventory.case_aware:
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
    lines = [f"{'class':<12} {'count':>9} {'%':>7}"]
    lines += [f"{c:<12} {n:>9} {p:>7.2f}" for c, n, p in stats(utts, inv)]
    return "\n".join(lines)
