"""`datadir`: a data directory (`text`, `labels`, `utt2spk`, ...) as a corpus format, read and written by
punctkit.data.datadir; and a transcript's speaker turns as a data directory (`turn_dir`: an utterance a turn,
`segments` and `ctm` where its words have times, `utt2reco` where they do not), which `prepare` and `convert` write
(docs/formats.md, "Data directories of speaker turns")."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from punctkit.data.datadir import TIME_DIGITS, read_data_dir, write_data_dir
from punctkit.data.formats.base import Utterance
from punctkit.data.formats.nlp import SpokenTurn
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


@dataclass
class TurnDir:
    """A transcript's turns as a data directory's files (`turn_dir`): the utterances, `utt2spk`, and the lines of
    `segments`, `ctm` and `utt2reco` (each empty where none is written)."""

    utts: list[Utterance] = field(default_factory=list)
    utt2spk: dict[str, str] = field(default_factory=dict)
    segments: list[str] = field(default_factory=list)
    ctm: list[str] = field(default_factory=list)
    utt2reco: list[str] = field(default_factory=list)

    def add(self, other: "TurnDir") -> None:
        """Add another document's turns."""
        self.utts += other.utts
        self.utt2spk.update(other.utt2spk)
        self.segments += other.segments
        self.ctm += other.ctm
        self.utt2reco += other.utt2reco

    def files(self) -> dict[str, list[str]]:
        """The files besides text, labels and utt2spk, by name, each sorted by utterance id (C order; a ctm's
        lines of one utterance in word order). `utt2reco` names every utterance's recording where some
        utterance has no `segments` line (its words have no times); without it, `segments` places them all."""
        out = {"segments": sorted(self.segments), "ctm": sorted(self.ctm, key=lambda ln: ln.split(" ", 1)[0])}
        if len(self.segments) < len(self.utts):
            out["utt2reco"] = sorted(self.utt2reco)
        return {name: lines for name, lines in out.items() if lines}


def has_turns(turns: list[SpokenTurn]) -> bool:
    """Whether a transcript says who speaks or when (a speaker, a turn's span or a time of some word): a data
    directory of its turns (`turn_dir`) keeps what it says; else it is one utterance, as a text's."""
    return any(t.speaker is not None or t.span is not None or any(a is not None or b is not None for a, b in t.times)
               for t in turns)


def turn_dir(doc: str, turns: list[SpokenTurn]) -> TurnDir:
    """The turns of document `doc` as a data directory's utterances and files: utterance `<doc>-<n:05d>` a
    stretch of one turn whose words all have times, or none has (a turn whose words are timed in part is cut where
    its times start or stop, so its timed words keep their pauses; ids sort in time order). Its recording is the
    turn's (`SpokenTurn.recording`: an stm's file where it holds several, turns.unit_turns), else `<doc>`; its
    speaker `<reco>-<speaker>` (the recording's speakers apart from others', white space made `_`; `<reco>` where
    the input names none), so the pieces of one turn are one speaker's and no turn change. A timed stretch has its
    `segments` line `uttid <reco> start end` and its `ctm` lines `uttid 1 start dur word`, times from the segment's
    start (as data/timing.py `read_timing` reads them); a turn whose words share its span (`SpokenTurn.span`: an
    stm segment, a cue) has its `segments` line from the span and no ctm. Every utterance's recording is in
    `utt2reco`."""
    out = TurnDir()
    for t in turns:
        reco = doc if t.recording is None else t.recording
        spk = reco if t.speaker is None else f"{reco}-{'_'.join(t.speaker.split())}"
        stretches = _stretches(t.times)
        for a, b, timed in stretches:
            uttid = f"{doc}-{len(out.utts) + 1:05d}"
            out.utts.append(Utterance(uttid, t.words[a:b], t.labels[a:b]))
            out.utt2spk[uttid] = spk
            out.utt2reco.append(f"{uttid} {reco}")
            times = t.times[a:b]
            if timed:
                start, end = times[0][0], times[-1][1]
            else:  # the turn's span places its words where none has a time (not a stretch of a turn timed in part)
                start, end = t.span if t.span is not None and len(stretches) == 1 else (None, None)
            if start is None or end is None or round(end, TIME_DIGITS) <= round(start, TIME_DIGITS):
                continue  # read_segments: a segment ends after it starts
            out.segments.append(f"{uttid} {reco} {_seconds(start)} {_seconds(end)}")
            if timed:
                out.ctm += [f"{uttid} 1 {_seconds(s - start)} {_seconds(e - s)} {w}"  # type: ignore[operator]
                            for w, (s, e) in zip(t.words[a:b], times)]
    return out


def _stretches(times: list[tuple[float | None, float | None]]) -> list[tuple[int, int, bool]]:
    """(first, end, timed) of the stretches of a turn's words: a timed stretch's words each have their (start,
    end), each ending after it starts, the starts in time order (a ctm's); an untimed one's words lack a time.
    A new stretch begins where the words' times start, stop, or go back in time."""
    out: list[tuple[int, int, bool]] = []
    first, was_timed, prev_start = 0, False, 0.0
    for k, (a, b) in enumerate(times):
        timed = a is not None and b is not None and b >= a
        if k > first and (timed != was_timed or (timed and a < prev_start)):  # type: ignore[operator]
            out.append((first, k, was_timed))
            first = k
        was_timed, prev_start = timed, a if timed else prev_start
    if times:
        out.append((first, len(times), was_timed))
    return out


def _seconds(t: float) -> str:
    """A time as segments and ctm write it: TIME_DIGITS decimals, trailing zeros dropped (`3.19`, `0`)."""
    return f"{round(t, TIME_DIGITS):.{TIME_DIGITS}f}".rstrip("0").rstrip(".")
