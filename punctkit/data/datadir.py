"""Kaldi-style data directories: the interface between stages.

Files, each sorted by key (C locale) with one line per utterance:
- `text`     `uttid w1 w2 ...` (unpunctuated words)
- `labels`   `uttid L1 L2 ...` (one label per word of `text`)
- `utt2spk`  `uttid spk` (for text streams the speaker is the document: windows
             may cross consecutive utterances of one speaker)
- `spk2utt`  `spk utt1 utt2 ...`
- `inventory` the label inventory name (`4class`, `case4`, ...)
Audio adds `wav.scp`, `segments`, `ctm`, `feats.scp`, `utt2num_frames` (feats/).
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from punctkit.data.formats import Utterance
from punctkit.data.labels import LabelSet, get_inventory, inventory_for
from punctkit.files import PunctkitError, atomic_dir, iter_lines, where

# Files keyed by utterance id (split/combine keep them consistent).
UTT_FILES = ("text", "labels", "utt2spk", "segments", "feats.scp", "utt2num_frames", "ctm", "utt2dur")


def read_table(path: str | Path, check_sorted: bool = True) -> "OrderedDict[str, str]":
    """Read `key rest-of-line` lines into an ordered dict; errors name file and line."""
    p = Path(path)
    table: OrderedDict[str, str] = OrderedDict()
    prev = None
    for i, line in iter_lines(p):
        if not line.strip():
            continue
        key, _, rest = line.partition(" ")
        if key in table:
            raise PunctkitError(f"{where(p, i)}: duplicate key '{key}'")
        if check_sorted and prev is not None and key < prev:
            raise PunctkitError(f"{where(p, i)}: not sorted ('{key}' after '{prev}'); sort with LC_ALL=C")
        table[key] = rest.strip()
        prev = key
    return table


@dataclass
class DataDir:
    """A data directory read into memory (text, labels, speakers)."""

    path: Path
    utterances: list[Utterance]
    inventory: LabelSet
    utt2spk: dict[str, str] = field(default_factory=dict)

    def words(self) -> int:
        """Number of words over all utterances."""
        return sum(len(u.words) for u in self.utterances)


def read_data_dir(path: str | Path, inventory: LabelSet | None = None, need_labels: bool = True) -> DataDir:
    """Read and check `text`/`labels` (+ `utt2spk`) of a data directory."""
    d = Path(path)
    if not d.is_dir():
        raise PunctkitError(f"data directory not found: {d}")
    text = read_table(d / "text") if (d / "text").is_file() else None
    if text is None:
        raise PunctkitError(f"{d}: no 'text' file (not a data directory?)")
    if inventory is None and (d / "inventory").is_file():
        inventory = get_inventory((d / "inventory").read_text().strip())
    labels = read_table(d / "labels") if (d / "labels").is_file() else None
    if labels is None and need_labels:
        raise PunctkitError(f"{d}: no 'labels' file")
    utts = []
    lines = {k: i for i, k in enumerate(labels or {}, 1)}
    for uttid, words in text.items():
        ws = words.split()
        if labels is None:
            utts.append(Utterance(uttid, ws, []))
            continue
        if uttid not in labels:
            raise PunctkitError(f"{d / 'labels'}: no line for utterance '{uttid}' of {d / 'text'}")
        labs = labels[uttid].split()
        loc = where(d / "labels", lines[uttid], uttid)
        if len(labs) != len(ws):
            raise PunctkitError(f"{loc}: {len(labs)} labels for {len(ws)} words in text")
        if inventory is not None:
            for lab in labs:
                if lab not in inventory:
                    raise PunctkitError(f"{loc}: unknown label '{lab}' (inventory {inventory.name})")
        utts.append(Utterance(uttid, ws, labs))
    if labels is not None and len(labels) != len(text):
        extra = next(k for k in labels if k not in text)
        raise PunctkitError(f"{d / 'labels'}: utterance '{extra}' is not in {d / 'text'}")
    if inventory is None:
        inventory = inventory_for({lab for u in utts for lab in u.labels} or {"O"})
    utt2spk = dict(read_table(d / "utt2spk")) if (d / "utt2spk").is_file() else {u.uttid: u.uttid for u in utts}
    return DataDir(d, utts, inventory, utt2spk)


def write_data_dir(path: str | Path, utts: list[Utterance], inventory: LabelSet,
                   utt2spk: dict[str, str] | None = None, extra: dict[str, list[str]] | None = None) -> None:
    """Write a data directory atomically (sorted by utterance id); `extra`: other files' lines."""
    utts = sorted(utts, key=lambda u: u.uttid)
    ids = [u.uttid for u in utts]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise PunctkitError(f"{path}: duplicate utterance id '{dup}'")
    spk = utt2spk or {u.uttid: u.uttid for u in utts}
    with atomic_dir(path) as tmp:
        _write_lines(tmp / "text", (f"{u.uttid} {' '.join(u.words)}" for u in utts))
        if any(u.labels for u in utts):
            _write_lines(tmp / "labels", (f"{u.uttid} {' '.join(u.labels)}" for u in utts))
        _write_lines(tmp / "utt2spk", (f"{i} {spk[i]}" for i in ids))
        spk2utt: dict[str, list[str]] = {}
        for i in ids:
            spk2utt.setdefault(spk[i], []).append(i)
        _write_lines(tmp / "spk2utt", (f"{s} {' '.join(us)}" for s, us in sorted(spk2utt.items())))
        (tmp / "inventory").write_text(inventory.name + "\n")
        for name, lines in (extra or {}).items():
            _write_lines(tmp / name, lines)


def _write_lines(path: Path, lines) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for ln in lines:
            f.write(ln + "\n")
