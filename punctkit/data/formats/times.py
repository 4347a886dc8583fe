"""What a time is, in one place: the check every reader calls where a time enters (`seconds`, `checked`), and
the timed writers' last line of defence (`Timeline`).

A time (a word's start or end, a segment's or cue's, a duration) is a number of seconds that is finite, not
negative and at most MAX_SECONDS (10^7 s, about 115 days: longer than any recording, and what an SRT or WebVTT
stamp, a CTM or stm field can write). Any other time read (JSON's `NaN`, `Infinity`, `1e999`, `1e308`, `-1`, a
time as a string that is none of these, a subtitle's hours in the millions) is a one-line error naming the file,
its line and where in it (`segment 2, word 3`), never a repair: a recognizer that wrote it is broken, and no time
near it can be trusted.

Times that go backwards (a word or cue that ends before it starts, a word or segment that starts before the one
before it) are read as they are: recognizers write them (overlapping windows, alignment slips), and the words are
still right. The timed writers (srt, vtt, timed-json, ctm and stm for inputs of other formats) pass every word's
times through a `Timeline`, which moves such a word forward (its start not before the previous word's, its end
not before its own start) and counts it; punctuate says the count once on stderr. A subtitle cue is written in
whole milliseconds, each starting no earlier than the cue before it and ending at least 1 ms after it starts
(`Timeline.cue`), so that every SRT and WebVTT file written is one a strict player accepts.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from punctkit.files import PunctkitError

MAX_SECONDS = 10_000_000  # the latest time accepted, in seconds (about 115 days)


def time_error(loc: str, what: str, given: Any) -> PunctkitError:
    """The one-line error for a time that is not one (`given`: the value as the input wrote it)."""
    text = given if isinstance(given, str) else repr(given)
    return PunctkitError(f"{loc}: {what} must be a time from 0 to {MAX_SECONDS} seconds (finite, not negative), "
                         f"got {text[:40]!r}; correct that time in the input")


def checked(t: float, loc: str, what: str = "the time", given: Any = None) -> float:
    """`t` (seconds) if it is a time (finite, not negative, at most MAX_SECONDS), else `time_error` at `loc`,
    naming `given` (the value as written; `t` itself when None)."""
    if not (math.isfinite(t) and 0 <= t <= MAX_SECONDS):
        raise time_error(loc, what, t if given is None else given)
    return float(t)


def seconds(value: Any, loc: str, what: str = "the time", per: float = 1) -> float:
    """A time read from the input: `value` (a number, or a number written as a string: a JSON value, a CTM or
    stm field, whisper-tsv's milliseconds) in units of which `per` make a second (1000 for milliseconds, 10^7
    for ticks), checked (`checked`); anything else (a boolean, a list, text, an integer too long to be a float)
    is `time_error`."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise time_error(loc, what, value)
    try:
        t = float(value) / per
    except (ValueError, OverflowError):  # not a number; an integer beyond a float (10**400)
        raise time_error(loc, what, value) from None
    return checked(t, loc, what, value)


@dataclass
class TimeRepairs:
    """What the timed writers of one output did to times that went backwards (punctuate reports it)."""

    moved: int = 0  # words moved forward: started before the word before, or ended before they started

    def warning(self) -> str:
        """The report's words for it ('' when nothing was moved)."""
        if not self.moved:
            return ""
        return (f"times of {self.moved} word{'s' if self.moved != 1 else ''} went backwards (ending before they "
                f"start, or starting before the word before): moved forward in the output")


@dataclass
class Timeline:
    """The timed writers' one last line of defence: times made monotone as they are written, each change
    counted in `repairs` (module docstring). One Timeline is one output's (or one utterance's) run of times."""

    repairs: TimeRepairs = field(default_factory=TimeRepairs)
    start: float = 0.0    # the latest start written
    cue_ms: int = 0       # the latest cue start written, in milliseconds

    def span(self, start: float, end: float) -> tuple[float, float]:
        """A word's (start, end) as written: its start not before the previous word's, its end not before its
        start."""
        s = max(start, self.start)
        e = max(end, s)
        if (s, e) != (start, end):
            self.repairs.moved += 1
        self.start = s
        return s, e

    def cue(self, start: float, end: float) -> tuple[int, int]:
        """A subtitle cue's (start, end) in whole milliseconds: its start not before the previous cue's, its end
        at least 1 ms after its start."""
        a = max(round(start * 1000), self.cue_ms)
        b = max(round(end * 1000), a + 1)
        self.cue_ms = a
        return a, b
