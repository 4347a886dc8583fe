"""What the input says about the boundary after each word, beside its words: a speaker turn change and the pause.

Diarized and timed transcripts carry two signals the words do not: who speaks (a turn change ends a sentence
77-85 % of the time in conversation) and when (a pause of a second or more ends a sentence far more often than a
pause-less join). Each word gets a *boundary id* for what follows it:

    turn:  0 no turn change known (the same speaker goes on, or the input has no speakers), 1 another speaker
    pause: 0 unknown (no times), else the gap to the next word's start in PAUSE_EDGES' buckets
           (1: < 0.05 s, 2: 0.05-0.2, 3: 0.2-0.5, 4: 0.5-1, 5: >= 1 s)
    id = turn * N_PAUSES + pause              (0: nothing known)

Two users read them: a network's boundary input (models/drnn_lwma.py `boundary_input`, batch key `boundaries`) and
a packaged boundary fusion of a network's distributions (decode/boundary.py `BoundaryFusion`).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from punctkit.data.labelled import Times, word_times

if TYPE_CHECKING:
    from punctkit.data.streams import Extra, Stream, Window

PAUSE_EDGES = (0.05, 0.2, 0.5, 1.0)     # seconds: the pause buckets' upper edges
N_PAUSES = len(PAUSE_EDGES) + 2          # unknown, then the buckets
N_TURNS = 2                              # no change known, another speaker
N_BOUNDARIES = N_TURNS * N_PAUSES
TURN_NONE, TURN_CHANGE = 0, 1
NOTHING = 0                              # the boundary id of a word nothing is known after


def pause_bucket(gap: float | None) -> int:
    """The pause part of a boundary id: 0 unknown (None, not finite), else 1 + the bucket of `gap` seconds (an
    overlap, a negative gap, is no pause)."""
    if gap is None or not math.isfinite(gap):
        return 0
    for k, edge in enumerate(PAUSE_EDGES):
        if gap < edge:
            return 1 + k
    return len(PAUSE_EDGES) + 1


def boundary_id(turn: int, gap: float | None) -> int:
    """The boundary id of a turn state (TURN_*) and a pause (seconds, None unknown)."""
    return turn * N_PAUSES + pause_bucket(gap)




def between(speaker: str | None, times: Times, next_speaker: str | None, next_times: Times) -> int:
    """The boundary id between a word and the next one of its stream (speakers and times None where unknown)."""
    turn = TURN_CHANGE if speaker is not None and next_speaker is not None and speaker != next_speaker else TURN_NONE
    end, nxt = times[1], next_times[0]
    return boundary_id(turn, None if end is None or nxt is None else nxt - end)


def boundaries(speakers: Sequence[str | None], times: Sequence[Times]) -> list[int]:
    """The boundary id after each word of a stream, from each word's speaker (None unknown) and (start, end)
    seconds. The stream's last word: nothing known (the stream's end is decode/stream_end.py's)."""
    n = len(speakers)
    return [between(speakers[k], times[k], speakers[k + 1], times[k + 1]) for k in range(n - 1)] + [NOTHING] * (n > 0)


def stream_boundaries(stream: "Stream") -> list[int]:
    """The boundary id after each word of a data directory's `Stream`, from its per-utterance `speakers` and
    per-word `times` (None: unknown); the stream's last word NOTHING."""
    speakers: list[str | None] = [None] * len(stream)
    if stream.speakers is not None:
        for spk, (_, a, b) in zip(stream.speakers, stream.utt_spans()):
            speakers[a:b] = [spk] * (b - a)
    times: list[Times] = list(stream.times) if stream.times is not None else [(None, None)] * len(stream)
    return boundaries(speakers, times)


def window_boundaries(ids: Sequence[Sequence[int]]) -> "Extra":
    """The `Extra` (data/streams.py) that gives each window its words' boundary ids (batch key `boundaries`),
    cut from `ids`, per stream of the dataset (by index) the boundary id after each of its words."""

    def extra(stream: "Stream", window: "Window") -> dict[str, Any]:
        return {"boundaries": np.asarray(ids[window.stream][window.start:window.end], dtype=np.int64)}

    return extra


def unit_boundaries(lines: Sequence[Any]) -> list[int]:
    """The boundary ids of the words of consecutive lines of one stream (`AsrUtterance`s: each line's `speaker`,
    its words' times in its records)."""
    speakers: list[str | None] = []
    times: list[Times] = []
    for u in lines:
        n = len(u.words)
        speakers += [getattr(u, "speaker", None)] * n
        times += word_times(u.records, n)
    return boundaries(speakers, times)
