"""Corpus reading and writing: `read` (any corpus format, its label inventory), `write` (to a file, atomically, or
to a text stream) and `convert` (between formats) of `convert`, `prepare`, `score` and `decode`, through the
registry's entries (their `reader`, and `writer` or `lines`).
"""
from __future__ import annotations

from pathlib import Path
from typing import TextIO

from punctkit.data.datadir import write_data_dir
from punctkit.data.formats.base import Report, Source, TextInput, Utterance, as_source
from punctkit.data.formats.datadir_io import has_turns, turn_dir
from punctkit.data.formats.detect import detect_for, detect_format
from punctkit.data.formats.nlp import one_utterance
from punctkit.data.formats.protocol import CorpusRead
from punctkit.data.formats.registry import get_format
from punctkit.data.formats.turns import TURN_FORMATS, transcript_turns
from punctkit.data.labels import LabelSet, O, Substitution, default_substitution, get_inventory, inventory_for
from punctkit.files import PunctkitError, check_not_input


def read(path: Source, fmt: str | None = None, inventory: LabelSet | str | None = None,
         rules: Substitution | None = None, lowercase: bool = False,
         report: Report | None = None, lines: tuple[int, int] | None = None,
         encoding: str | None = None) -> tuple[list[Utterance], LabelSet]:
    """Read any corpus format; returns the utterances and their label inventory.

    With no inventory, labelled formats infer the smallest one that fits and
    text formats use 4-class. `lines=(first, last)` reads only those lines of a file (or `TextInput`);
    `encoding` decodes a file that is not UTF-8 (or UTF-16/32 with a BOM).
    """
    p = as_source(path)
    if isinstance(p, Path) and not p.exists():
        raise PunctkitError(f"file not found: {p}")
    entry = get_format(fmt, "reader") if fmt is not None else detect_for(p, "reader", encoding)
    if entry.directory and isinstance(p, TextInput):
        raise PunctkitError(f"{p}: format {entry.name} is a directory, which a text cannot be")
    inv = get_inventory(inventory) if isinstance(inventory, str) else inventory
    if not entry.labels:
        inv = inv or get_inventory("4class")
        rules = rules or default_substitution(inv)
    how = CorpusRead(inv, rules, report or Report(), lowercase, lines, encoding)
    utts = entry.reader(p, how)  # type: ignore[misc]
    inv = how.inventory
    if inv is None:
        inv = inventory_for({lab for u in utts for lab in u.labels} or {O})
    if lowercase:
        for u in utts:
            u.words = [w.lower() for w in u.words]
    return utts, inv


def write(utts: list[Utterance], path: str | Path | TextIO, fmt: str, inventory: LabelSet | None = None,
          overwrite: bool = False, inputs: list[str | Path] | tuple = ()) -> None:
    """Write utterances in `fmt` to a file, which appears only when complete, or to a text stream
    (`io.StringIO`, an open file: the format's `lines`, each with its newline).

    A file output may replace an existing file (the user named it), never one of
    `inputs`; a data directory is written by `write_data_dir` (`overwrite` there), never to a stream.
    """
    get_format(fmt, "writer").write_corpus(utts, path, inventory, overwrite, inputs)


def convert(src: str | Path, dst: str | Path, src_fmt: str | None = None, dst_fmt: str | None = None,
            inventory: str | None = None, overwrite: bool = False,
            encoding: str | None = None) -> tuple[int, int]:
    """Convert between formats; returns (utterances, words) written (`dst` never replaces `src`). A transcript
    that says who speaks or when (turns.transcript_turns: an NLP call, an stm, a CTM, the JSON of Whisper and the
    ASR services, subtitles) written as a data directory keeps its turns and times (datadir_io.turn_dir), as
    prepare keeps them; a format punctuate reads that has no corpus reader (turns.TURN_FORMATS) is converted to a
    data directory only, and one without speakers or times is one utterance (as a call is)."""
    check_not_input(dst, [src])
    if dst_fmt is not None:
        get_format(dst_fmt, "writer")  # an unknown name fails before reading
    if dst_fmt is None:
        dst_fmt = "datadir" if Path(dst).is_dir() or str(dst).endswith("/") else "text"
    p = as_source(src)
    if isinstance(p, Path) and not p.exists():
        raise PunctkitError(f"file not found: {p}")
    name = src_fmt or detect_format(p, encoding)
    if name in TURN_FORMATS and dst_fmt != "datadir":
        raise PunctkitError(f"{src}: read as {name}, which convert writes as a data directory only (--to datadir: "
                            f"its turns and times); `punctkit punctuate` writes it in other formats")
    if dst_fmt == "datadir" and name in ("nlp", *TURN_FORMATS):
        inv = get_inventory(inventory or "4class")
        turns = transcript_turns(p, name, CorpusRead(inv, default_substitution(inv), encoding=encoding),
                                 told=src_fmt is not None)
        if turns and has_turns(turns):  # its speaker turns and times kept (datadir_io.turn_dir), as prepare keeps them
            t = turn_dir(p.name, turns)
            write_data_dir(dst, t.utts, inv, t.utt2spk, extra=t.files(), overwrite=overwrite, inputs=[src])
            return len(t.utts), sum(len(u.words) for u in t.utts)
        if name in TURN_FORMATS:  # neither speakers nor times: one stream, as a call without them
            utts = one_utterance(p.name, turns or [])
            write(utts, dst, dst_fmt, inv, overwrite, inputs=[src])
            return len(utts), sum(len(u.words) for u in utts)
    utts, inv = read(src, src_fmt, inventory, encoding=encoding)
    write(utts, dst, dst_fmt, inv, overwrite, inputs=[src])
    return len(utts), sum(len(u.words) for u in utts)
