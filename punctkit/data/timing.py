"""When a data directory's words were spoken: its `segments` (an utterance's recording and edges, `read_segments`)
and `ctm` (its words' times, `read_ctm`) read into a `datadir.Timing` (`read_timing`), which `punctkit decode` hands
the engine as turns and pauses and `punctkit punctuate DIR/text` reads as decode does (docs/formats.md, "How
`punctkit decode` reads a data directory's streams, turns and pauses"). Here, in data/, so that the readers
(data/formats/text.py) may read them; the audio features (feats/ctm.py, feats/wav.py) read them here too."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from punctkit.data.datadir import TIME_DIGITS, DataDir, Span, Timing
from punctkit.data.formats.asr import read_ctm as read_ctm_lines
from punctkit.files import PunctkitError, finite_number, iter_lines, where


@dataclass(frozen=True)
class Segment:
    """One utterance's span of a recording; `end` None means up to the end."""

    uttid: str
    recid: str
    start: float
    end: float | None
    line: int | None = None  # line in `segments`, for error messages


def read_segments(path: str | Path) -> list[Segment]:
    """Parse `segments` (`uttid recid start end`); errors name the file and line."""
    out = []
    prev = None
    for i, line in iter_lines(path):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 4:
            raise PunctkitError(f"{where(path, i)}: expected 'uttid recid start end', got {len(parts)} fields")
        uttid, recid = parts[0], parts[1]
        loc = where(path, i, uttid)
        start, end = finite_number(parts[2], loc, "start"), finite_number(parts[3], loc, "end")
        if start < 0 or (end >= 0 and end <= start):
            raise PunctkitError(f"{where(path, i, uttid)}: bad segment times {start}..{end}")
        if prev is not None and uttid <= prev:
            raise PunctkitError(f"{where(path, i, uttid)}: not sorted or duplicate ('{uttid}' after '{prev}')")
        prev = uttid
        out.append(Segment(uttid, recid, start, None if end < 0 else end, i))  # Kaldi: end -1 = to the end
    return out


@dataclass(frozen=True)
class CtmWord:
    """One CTM line."""

    start: float
    dur: float
    word: str
    line: int

    @property
    def end(self) -> float:
        return self.start + self.dur


def read_ctm(path: str | Path) -> dict[str, list[CtmWord]]:
    """A whole CTM by utterance (through the format registry's one CTM reader, which checks that each
    utterance's lines are together); the words of an utterance must be in time order."""
    out: dict[str, list[CtmWord]] = {}
    for uttid, lines in read_ctm_lines(path):
        words = out[uttid] = []
        for ln in lines:
            if words and ln.start_s < words[-1].start:
                raise PunctkitError(f"{where(path, ln.lineno, uttid)}: start {ln.start_s} before the previous "
                                    f"word's {words[-1].start}")
            words.append(CtmWord(ln.start_s, ln.dur_s, ln.word, ln.lineno))
    return out


def ctm_text_problems(ctm: dict[str, list[CtmWord]], text: dict[str, str], ctm_path: str | Path,
                      text_path: str | Path) -> list[str]:
    """One message per utterance whose CTM words differ from its text (or that is missing)."""
    problems = []
    for uttid, words in ctm.items():
        if uttid not in text:
            problems.append(f"{where(ctm_path, words[0].line, uttid)}: utterance is not in {text_path}")
            continue
        ref = text[uttid].split()
        hyp = [w.word for w in words]
        if hyp == ref:
            continue
        k = next((j for j, (a, b) in enumerate(zip(hyp, ref)) if a != b), min(len(hyp), len(ref)))
        line = words[min(k, len(words) - 1)].line
        what = (f"word {k + 1} is '{hyp[k]}' but text has '{ref[k]}'" if k < min(len(hyp), len(ref))
                else f"{len(hyp)} words but text has {len(ref)}")
        problems.append(f"{where(ctm_path, line, uttid)}: CTM disagrees with {text_path}: {what}")
    for uttid in text:
        if uttid not in ctm:
            problems.append(f"{where(ctm_path, None, uttid)}: no CTM lines for this utterance of {text_path}")
    return problems


def read_timing(dd: DataDir) -> Timing:
    """The `segments` and `ctm` of a data directory read (a file it lacks: nothing known) and checked against
    its text: with `segments`, every utterance with words has a line (or its recording in `utt2reco`: its times
    unknown); a ctm's lines are keyed by utterance
    (`uttid chan start dur word`, times from the utterance's start, as `punctkit align` writes them) and give
    its words, in order (an utterance without lines: its words' times unknown)."""
    d, timing = dd.path, Timing()
    if (d / "segments").is_file():
        segs = {s.uttid: s for s in read_segments(d / "segments")}
        missing = next((u.uttid for u in dd.utterances
                        if u.words and u.uttid not in segs and u.uttid not in dd.utt2reco), None)
        if missing is not None:
            raise PunctkitError(f"{d / 'segments'}: no line for utterance '{missing}' of {d / 'text'}; give every "
                                f"utterance its 'uttid recid start end' (seconds), or remove the file")
        timing.spans = {u: Span(s.recid, s.start, s.end) for u, s in segs.items()}
    if (d / "ctm").is_file():
        ctm = read_ctm(d / "ctm")
        text = {u.uttid: " ".join(u.words) for u in dd.utterances if u.uttid in ctm}
        problems = ctm_text_problems(ctm, text, d / "ctm", d / "text")
        if problems:
            more = f"; and {len(problems) - 1} more" if len(problems) > 1 else ""
            raise PunctkitError(f"{problems[0]} (a ctm's lines, keyed by utterance, give its words in order{more})")
        for uttid, words in ctm.items():
            base = timing.spans[uttid].start if uttid in timing.spans else 0.0
            timing.words[uttid] = [(round(base + w.start, TIME_DIGITS), round(base + w.end, TIME_DIGITS))
                                   for w in words]
    return timing
