"""`datadir`: a data directory (`text`, `labels`, `utt2spk`, ...) as a corpus format, read and written by
punctkit.data.datadir."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

from punctkit.data.datadir import read_data_dir, write_data_dir
from punctkit.data.formats.base import Utterance
from punctkit.data.formats.protocol import CorpusRead
from punctkit.data.labels import LabelSet, O, inventory_for


def read_datadir(path: Path, how: CorpusRead) -> list[Utterance]:
    """A data directory's utterances; its own inventory (its `inventory` file, else `how.inventory`) set in
    `how.inventory`."""
    dd = read_data_dir(path, how.inventory)
    how.inventory = dd.inventory
    return dd.utterances


def write_datadir(utts: list[Utterance], path: str | Path, inventory: LabelSet | None = None,
                  overwrite: bool = False, inputs: Iterable[str | Path] = ()) -> None:
    """A data directory of `utts`, labelled in `inventory` (else the smallest that fits their labels)."""
    inv = inventory or inventory_for({lab for u in utts for lab in u.labels} or {O})
    write_data_dir(path, utts, inv, overwrite=overwrite, inputs=list(inputs))
