"""A real recognizer: pocketsphinx's English model (16 kHz) over a data directory's audio.

`punctkit recognize DATA OUT` decodes every utterance of DATA (wav.scp [+ segments],
commands ending in `|` as everywhere) with pocketsphinx's default acoustic model,
language model and dictionary, and writes the data directory OUT:

- `text`: the recognized words, lower-cased, with contractions split as IWSLT
  writes them (`don't` -> `do n't`, `it's` -> `it 's`); `ctm`: their times (a
  split word's span is shared by its parts in proportion to their letters);
- `utt2spk`/`spk2utt`, `wav.scp` (+ `segments`) copied for the utterances kept, `inventory`;
- `labels` when DATA has labels: the reference marks projected onto the
  recognized words (punctkit.mark_projection: a mark follows the aligned recognized word,
  a deleted word's mark goes to the previous recognized word, an inserted word gets O);
- `recognize.json` and `recognize.log`: WER (S/D/I/N against DATA/text), marks
  not projected, utterances skipped, real-time factor per core (CPU seconds per
  second of audio). WER and marks count the utterances in OUT only.

A wav with no speech (pocketsphinx's voice activity detector) or an utterance the
recognizer returns no words for is a one-line error naming it; with `skip_bad` it
is logged, counted and left out of OUT. Jobs as in `align`: `--nj N --job J` leaves
part J in OUT/log/recognize_job.J{,.log,.json}; `--merge` writes OUT.
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from punctkit.align import BadUtterance, JobStats, ctm_lines, decode_pcm, has_speech, new_decoder, read_jobs, run_jobs
from punctkit.data.datadir import check_data_dir_output, read_data_dir, read_table, write_data_dir
from punctkit.data.jobs import PartFiles, check_jobs, part_files
from punctkit.data.labels import get_inventory
from punctkit.data.tokenize import split_contraction
from punctkit.data.utterance import Utterance
from punctkit.files import PunctkitError
from punctkit.mark_projection import Projection, project_marks


def iwslt_split(word: str) -> list[str]:
    """A recognized word as IWSLT tokens, lower-cased: a final contraction split off as prepare's
    --split-contractions splits it (`don't` -> `do n't`, `it's` -> `it 's`; `we've`, `i'd` whole, as
    in IWSLT's files), by the one rule (punctkit.data.tokenize.split_contraction)."""
    return split_contraction(word.lower())


def split_times(parts: list[str], start: float, end: float) -> list[tuple[float, float]]:
    """Share [start, end] among `parts` in proportion to their letters."""
    total = sum(len(p) for p in parts)
    out, t = [], start
    for p in parts:
        nxt = t + (end - start) * len(p) / total
        out.append((t, nxt))
        t = nxt
    return out


def recognize_utterance(decoder: Callable[[], Any], pcm: bytes) -> list[tuple[str, float, float]]:
    """(word, start s, end s) of the recognized IWSLT tokens; BadUtterance for no speech or no words.

    `decoder()` gives the decoder (made on first use: loading the model takes a second or two).
    """
    if not has_speech(pcm):
        raise BadUtterance("no speech in the audio (pocketsphinx's voice activity detector)")
    words = decode_pcm(decoder(), pcm)
    if not words:
        raise BadUtterance("the recognizer returned no words")
    out = []
    for w, a, b in words:
        parts = iwslt_split(w)
        out += [(p, s, e) for p, (s, e) in zip(parts, split_times(parts, a, b))]
    return out


@dataclass
class RecognizeSummary:
    """What `recognize` did; `scores` is None without a reference text."""

    stats: JobStats
    scores: Projection | None
    out: Path
    merged: bool

    def report(self) -> dict:
        """The recognize.json object."""
        s, p = self.stats, self.scores
        return {
            "utterances": s.utterances, "recognized": s.done, "skipped": len(s.bad), "skipped_reports": s.bad,
            "audio_seconds": round(s.audio_s, 2), "cpu_seconds": round(s.cpu_s, 2),
            "rtf_per_core": round(s.rtf, 4), "nj": s.nj,
            "wer": None if p is None else {"percent": round(p.wer, 2), "S": p.substitutions, "D": p.deletions,
                                           "I": p.insertions, "N": p.ref_words},
            "marks": None if p is None else {"reference": p.marks, "not_projected": p.not_projected},
            "counted_over": "the recognized utterances (skipped ones are not in OUT)",
        }

    def line(self) -> str:
        s, p = self.stats, self.scores
        wer = "" if p is None else (f", WER {p.wer:.1f} % (S {p.substitutions}, D {p.deletions}, I {p.insertions}, "
                                    f"N {p.ref_words}), {p.not_projected} of {p.marks} marks not projected")
        skipped = f", {len(s.bad)} skipped (see {self.out / 'recognize.log'})" if s.bad else ", 0 skipped"
        to = f" -> {self.out}" if self.merged else ""
        return (f"recognize: {s.done} of {s.utterances} utterances, {s.audio_s / 3600:.3f} h{wer}{skipped}, "
                f"real-time factor {s.rtf:.3f} per core{to}")


def _job_files(out: Path) -> PartFiles:
    """job J -> its CTM part, log and stats: OUT/log/recognize_job.J{.ctm,.log,.json}."""
    return part_files(out / "log" / "recognize_job", ".ctm", ".log", ".json")


def _by_utterance(lines: list[str]) -> dict[str, list[tuple[str, str]]]:
    """CTM part lines -> uttid -> [(word, line)] in order."""
    out: dict[str, list[tuple[str, str]]] = {}
    for ln in lines:
        f = ln.split()
        out.setdefault(f[0], []).append((f[4], ln))
    return out


def _audio_lines(data: Path, kept: set[str]) -> dict[str, list[str]]:
    """wav.scp (+ segments) lines of the utterances kept."""
    wav = read_table(data / "wav.scp")
    if not (data / "segments").is_file():
        return {"wav.scp": [f"{k} {v}" for k, v in wav.items() if k in kept]}
    segs = {k: v for k, v in read_table(data / "segments").items() if k in kept}
    recs = {v.split()[0] for v in segs.values()}
    return {"wav.scp": [f"{k} {v}" for k, v in wav.items() if k in recs],
            "segments": [f"{k} {v}" for k, v in segs.items()]}


def _merge(data: Path, out: Path, nj: int, overwrite: bool) -> RecognizeSummary:
    """Write OUT from the jobs' parts (projecting the reference marks when DATA has labels)."""
    stats, lines = read_jobs(data, _job_files(out), nj)
    hyp = _by_utterance(lines)
    if not hyp:
        raise PunctkitError(f"{out}: no utterance was recognized (all skipped? see {out / 'log'})")
    ref = read_data_dir(data, need_labels=False) if (data / "text").is_file() else None
    refs = {u.uttid: u for u in ref.utterances} if ref else {}
    inventory = ref.inventory if ref else get_inventory("4class")
    scores = Projection() if ref else None
    has_labels = (data / "labels").is_file()
    utts = []
    for uttid, words in hyp.items():
        hw = [w for w, _ in words]
        labels: list[str] = []
        if ref is not None:  # an utterance DATA/text lacks has no reference words: all inserted
            r = refs.get(uttid, Utterance(uttid, [], []))
            p = project_marks(r.words, r.labels if has_labels else None, hw, inventory)
            scores.add(p)
            labels = p.labels
        utts.append(Utterance(uttid, hw, labels))
    spk = dict(read_table(data / "utt2spk")) if (data / "utt2spk").is_file() else {}
    summary = RecognizeSummary(stats, scores, out, True)
    extra = {"ctm": [ln for _, ws in sorted(hyp.items()) for _, ln in ws], **_audio_lines(data, set(hyp)),
             "recognize.json": json.dumps(summary.report(), indent=1).splitlines(),
             "recognize.log": stats.bad + [summary.line()]}
    write_data_dir(out, utts, inventory, {u.uttid: spk.get(u.uttid, u.uttid) for u in utts}, extra,
                   overwrite=overwrite, inputs=[data])
    return summary


def recognize_data_dir(data: str | Path, out: str | Path, nj: int = 1, job: int | None = None,
                       merge_only: bool = False, skip_bad: bool = False, overwrite: bool = False,
                       show_progress: bool = True) -> RecognizeSummary:
    """Recognize DATA's audio into the data directory OUT; see the module docstring."""
    d, o = Path(data), Path(out)
    if not (d / "wav.scp").is_file():
        raise PunctkitError(f"{d}: no wav.scp (not an audio data directory?)")
    check_jobs(nj, job)
    check_data_dir_output(o, overwrite, [d])
    if not merge_only:
        decoder = functools.cache(new_decoder)

        def per_utt(seg, pcm: bytes) -> list[str]:
            got = recognize_utterance(decoder, pcm)
            return ctm_lines(seg.uttid, [w for w, _, _ in got], [(a, b) for _, a, b in got])

        stats = run_jobs(d, _job_files(o), nj, job, per_utt, "recognize", skip_bad, show_progress)
        if job is not None:
            return RecognizeSummary(stats, None, o, False)
    return _merge(d, o, nj, overwrite)
