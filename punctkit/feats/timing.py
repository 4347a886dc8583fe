"""When a data directory's words were spoken: its `segments` (an utterance's recording and edges) and `ctm` (its
words' times) read into a `datadir.Timing`, which `punctkit decode` hands the engine as turns and pauses
(docs/formats.md, "How `punctkit decode` reads a data directory's streams, turns and pauses"). Here, not in
data/datadir.py, because the readers of those files are the audio features' (feats/ctm.py, feats/wav.py)."""
from __future__ import annotations

from punctkit.data.datadir import TIME_DIGITS, DataDir, Span, Timing
from punctkit.feats.ctm import ctm_text_problems, read_ctm
from punctkit.feats.wav import read_segments
from punctkit.files import PunctkitError


def read_timing(dd: DataDir) -> Timing:
    """The `segments` and `ctm` of a data directory read (a file it lacks: nothing known) and checked against
    its text: with `segments`, every utterance with words has a line; a ctm's lines are keyed by utterance
    (`uttid chan start dur word`, times from the utterance's start, as `punctkit align` writes them) and give
    its words, in order (an utterance without lines: its words' times unknown)."""
    d, timing = dd.path, Timing()
    if (d / "segments").is_file():
        segs = {s.uttid: s for s in read_segments(d / "segments")}
        missing = next((u.uttid for u in dd.utterances if u.words and u.uttid not in segs), None)
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
