"""Word timings for any audio: forced alignment of `text` with pocketsphinx's English model.

`punctkit align DATA` aligns each utterance's words (DATA/text) with its audio
(DATA/wav.scp [+ segments], 16 kHz; commands ending in `|` as everywhere) and
writes a CTM (`uttid 1 start dur word`, seconds from the utterance start, the
words of `text` as written) to DATA/ctm or `-o CTM`, never over an existing one
without --overwrite (atomic write, after every job has finished).

Pronunciations come from pocketsphinx's CMU dictionary (looked up lower-cased).
A word it lacks gets one from espeak-ng's IPA phonemes mapped to CMU phones
(`IPA_TO_CMU`); IWSLT's split contractions (`n't`, `'s`, ...) have their own
(`CLITIC_PHONES`). An utterance with a word neither gives, with no speech (by
pocketsphinx's voice activity detector), or that the aligner cannot align, is a
one-line error naming it; with `skip_bad` it is logged and left out. The search is
a grammar of the words with optional silence between them; when it cannot reach
the last word, a second one without silences is tried (see `Aligner`).

Jobs as in extract-feats: `--nj N --job J` aligns part J and leaves its CTM
part, log and stats in `<CTM dir>/log/align_<ctm name>.J{,.log,.json}`;
`--merge` joins them. Without --job every part runs here, then the merge.
The pocketsphinx helpers (decoder, audio, speech check) serve `recognize` too.
"""
from __future__ import annotations

import json
import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from punctkit.data.datadir import read_table
from punctkit.data.jobs import (
    PartFiles,
    check_jobs,
    check_part_record,
    finished_parts,
    jobs_to_run,
    part_files,
    part_key,
    split_parts,
)
from punctkit.data.timing import Segment
from punctkit.data.tokenize import non_speech
from punctkit.feats.wav import data_segments, iter_audio
from punctkit.files import PunctkitError, atomic_write, check_not_input, iter_lines, parse_json, where, write_lines

SAMPLE_RATE = 16000  # pocketsphinx's English acoustic model
FRAME_RATE = 100     # its frames per second
MIN_SPEECH_FRAMES = 3  # 30 ms VAD frames: less than 90 ms of speech is no speech

# IWSLT's split contractions: the sounds they add to the word before (alternatives tried by the aligner).
CLITIC_PHONES: dict[str, tuple[str, ...]] = {
    "n't": ("N T", "AH N T"), "'s": ("Z", "S", "IH Z"), "'m": ("M",), "'re": ("R", "ER"),
    "'ve": ("V", "AH V"), "'ll": ("L", "AH L"), "'d": ("D", "AH D"), "'em": ("AH M",),
}

# espeak-ng's English IPA (`espeak-ng -q --ipa -v en-us`) -> CMU (ARPAbet) phones, stress removed.
IPA_TO_CMU: dict[str, str] = {
    # vowels and diphthongs
    "iː": "IY", "i": "IY", "ɪ": "IH", "ᵻ": "IH", "ɛ": "EH", "e": "EH", "æ": "AE", "a": "AE",
    "ɑː": "AA", "ɑ": "AA", "ɒ": "AA", "ɔː": "AO", "ɔ": "AO", "ʊ": "UH", "uː": "UW", "u": "UW",
    "ʌ": "AH", "ə": "AH", "ɐ": "AH", "ɜː": "ER", "ɜ": "ER", "ɝ": "ER", "ɚ": "ER", "eɪ": "EY",
    "aɪ": "AY", "ɔɪ": "OY", "aʊ": "AW", "oʊ": "OW", "əʊ": "OW", "o": "OW", "oː": "OW",
    "ɪə": "IH R", "ɛə": "EH R", "ʊə": "UH R", "aɪə": "AY ER", "aɪɚ": "AY ER", "aʊə": "AW ER",
    "əl": "AH L", "l̩": "AH L", "n̩": "AH N", "m̩": "AH M",
    # consonants
    "p": "P", "b": "B", "t": "T", "d": "D", "k": "K", "ɡ": "G", "g": "G", "f": "F", "v": "V",
    "θ": "TH", "ð": "DH", "s": "S", "z": "Z", "ʃ": "SH", "ʒ": "ZH", "h": "HH", "m": "M", "n": "N",
    "ŋ": "NG", "l": "L", "ɫ": "L", "ɹ": "R", "r": "R", "ɾ": "T", "ʔ": "T", "w": "W", "j": "Y",
    "tʃ": "CH", "dʒ": "JH", "x": "K", "ç": "HH", "ʍ": "W", "ɬ": "L",
}
_IGNORED = "ˈˌ\u0361\u035c-‿"  # stress, ties and linking: no sound of their own
_VARIANT = re.compile(r"\(\d+\)$")        # `and(2)`: a pronunciation variant of `and`


class BadUtterance(PunctkitError):
    """An utterance that cannot be aligned or recognized (reported, or skipped with --skip-bad)."""


# ------------------------------------------------------------------ pocketsphinx

def pocketsphinx_module() -> Any:
    """The pocketsphinx package, or a one-line error saying how to install it."""
    try:
        import pocketsphinx
    except ImportError:
        raise PunctkitError("pocketsphinx is not installed: pip install 'punctkit[speech]'") from None
    return pocketsphinx


# Forced alignment searches a small grammar: no phone-loop lookahead, wide beams, and the best
# path of the search itself (pocketsphinx's lattice best path often drops the grammar's end);
# no language model (adding a word to the dictionary would rebuild its search: seconds).
ALIGN_OPTIONS = {"lm": None, "bestpath": False, "pl_window": 0, "beam": 1e-100, "wbeam": 1e-100, "pbeam": 1e-100,
                 "maxhmmpf": -1}


def new_decoder(**options: Any) -> Any:
    """A pocketsphinx Decoder with the English model, quiet, and CMN per utterance (so a result
    depends on the utterance only, never on the ones decoded before it or on --nj)."""
    ps = pocketsphinx_module()
    return ps.Decoder(samprate=SAMPLE_RATE, loglevel="FATAL", cmn="batch", **options)


def pcm_bytes(samples: np.ndarray, rate: int) -> bytes:
    """16-bit little-endian PCM of one utterance; the rate must be the model's 16 kHz."""
    if rate != SAMPLE_RATE:
        raise BadUtterance(f"sample rate {rate} Hz, but pocketsphinx's English model needs {SAMPLE_RATE} Hz "
                           f"(resample in wav.scp, e.g. 'sox x.wav -r {SAMPLE_RATE} -t wav - |')")
    return np.clip(np.round(samples), -32768, 32767).astype("<i2").tobytes()


def has_speech(pcm: bytes) -> bool:
    """Whether pocketsphinx's voice activity detector hears at least 90 ms of speech."""
    vad = pocketsphinx_module().Vad(3, SAMPLE_RATE, 0.03)
    n = vad.frame_bytes
    found = 0
    for k in range(0, len(pcm) - n + 1, n):
        found += vad.is_speech(pcm[k:k + n])
        if found >= MIN_SPEECH_FRAMES:
            return True
    return False


def decode_pcm(decoder: Any, pcm: bytes) -> list[tuple[str, float, float]]:
    """Run the decoder's current search over one utterance: (word, start s, end s), fillers dropped,
    pronunciation variants named by their word."""
    decoder.start_utt()
    decoder.process_raw(pcm, full_utt=True)
    decoder.end_utt()
    if decoder.hyp() is None:
        return []
    return [(_VARIANT.sub("", s.word), s.start_frame / FRAME_RATE, (s.end_frame + 1) / FRAME_RATE)
            for s in (decoder.seg() or []) if not non_speech(s.word)]  # <s> </s> <sil> [NOISE]: not words


# ------------------------------------------------------------------ pronunciations

def ipa_to_cmu(ipa: str) -> str | None:
    """CMU phones for espeak-ng IPA (phonemes separated by spaces); None if a symbol is unknown.

    A phoneme missing from the table is split greedily into the longest known pieces.
    """
    phones = []
    for tok in ipa.split():
        tok = "".join(c for c in tok if c not in _IGNORED)
        while tok:
            k = next((k for k in range(len(tok), 0, -1) if tok[:k] in IPA_TO_CMU), 0)
            if not k:
                return None
            phones.append(IPA_TO_CMU[tok[:k]])
            tok = tok[k:]
    return " ".join(phones) or None


def espeak_ipa(word: str) -> str:
    """espeak-ng's US English IPA for one word, phonemes separated by spaces ('' if it fails)."""
    try:
        proc = subprocess.run(["espeak-ng", "-q", "--ipa", "--sep= ", "-v", "en-us", word],
                              capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return proc.stdout.decode("utf-8", errors="replace").strip() if proc.returncode == 0 else ""


def _add_word(decoder: Any, name: str, phones: str, update: bool = True) -> bool:
    try:
        decoder.add_word(name, phones, update)
    except RuntimeError:
        return False
    return True


@dataclass
class Aligner:
    """Forced alignment with two pocketsphinx decoders sharing the words added to their dictionary.

    The first lets silence and noise fillers in between words (pauses stay out of
    the words); for the few utterances whose grammar search then never reaches the
    last word (about 1 in 10 of espeak-ng's IWSLT utterances), the second, without
    fillers, aligns them, with pauses inside the words around them (`fallbacks` counts them).
    """

    decoders: list[Any] = field(default_factory=lambda: [new_decoder(**ALIGN_OPTIONS),
                                                          new_decoder(**ALIGN_OPTIONS, fsgusefiller=False)])
    added: dict[str, str] = field(default_factory=dict)  # word -> phones, for the log
    missing: set[str] = field(default_factory=set)
    fallbacks: int = 0

    def __post_init__(self) -> None:
        for dec in self.decoders:
            for clitic, prons in CLITIC_PHONES.items():
                have = dec.lookup_word(clitic) is not None
                for k, phones in enumerate(prons):  # variants are named `'s(2)`, `'s(3)`, ...
                    n = k + 1 + have
                    _add_word(dec, clitic if n == 1 else f"{clitic}({n})", phones, k == len(prons) - 1)

    def entry(self, word: str) -> str | None:
        """The dictionary name of `word` (lower-cased), adding an espeak-ng pronunciation if needed."""
        key = word.lower()
        if key in self.missing:
            return None
        if self.decoders[0].lookup_word(key) is not None:
            return key
        phones = ipa_to_cmu(espeak_ipa(key)) if "(" not in key else None
        if phones is None or not all(_add_word(dec, key, phones) for dec in self.decoders):
            self.missing.add(key)
            return None
        self.added[key] = phones
        return key

    def align(self, words: list[str], pcm: bytes) -> list[tuple[float, float]]:
        """(start, end) seconds of each word; BadUtterance when it cannot be aligned."""
        if not words:
            raise BadUtterance("no words in text to align")
        if not has_speech(pcm):
            raise BadUtterance("no speech in the audio (pocketsphinx's voice activity detector)")
        entries = [self.entry(w) for w in words]
        missing = [w for w, e in zip(words, entries) if e is None]
        if missing:
            raise BadUtterance(f"no pronunciation for {', '.join(repr(w) for w in missing[:5])} (not in "
                               f"pocketsphinx's dictionary and espeak-ng gave none)")
        got: list[tuple[str, float, float]] = []
        for k, dec in enumerate(self.decoders):
            try:
                dec.set_align_text(" ".join(entries))
            except RuntimeError:
                raise BadUtterance("pocketsphinx could not set up the alignment of this text") from None
            got = decode_pcm(dec, pcm)
            if len(got) == len(words):
                self.fallbacks += k > 0
                return [(a, b) for _, a, b in got]
        raise BadUtterance(f"the aligner could not align the text to the audio ({len(got)} of {len(words)} "
                           f"words placed in {len(pcm) / 2 / SAMPLE_RATE:.2f} s): is this the audio of this text?")


def ctm_lines(uttid: str, words: list[str], times: list[tuple[float, float]]) -> list[str]:
    """CTM lines (`uttid 1 start dur word`, times from the utterance start)."""
    return [f"{uttid} 1 {a:.2f} {b - a:.2f} {w}" for w, (a, b) in zip(words, times)]


# ------------------------------------------------------------------ jobs

@dataclass
class JobStats:
    """What one job did: counts, bad utterances with their one-line reasons, audio and CPU seconds."""

    job: int
    nj: int
    utterances: int = 0
    done: int = 0
    bad: list[str] = field(default_factory=list)  # one-line reports
    audio_s: float = 0.0
    cpu_s: float = 0.0
    part: str = ""  # the first and last utterance of the part, and how many, as a check at the merge

    def to_json(self) -> str:
        return json.dumps(self.__dict__, indent=1)

    @classmethod
    def read(cls, path: Path) -> "JobStats":
        try:
            return cls(**parse_json(path.read_text(encoding="utf-8")))
        except (ValueError, TypeError) as e:
            raise PunctkitError(f"{path}: not a job summary written by punctkit ({e})") from None

    def add(self, other: "JobStats") -> None:
        """Count `other` in (the sum of several jobs)."""
        self.utterances += other.utterances
        self.done += other.done
        self.bad += other.bad
        self.audio_s += other.audio_s
        self.cpu_s += other.cpu_s

    @property
    def rtf(self) -> float:
        """Real-time factor per core: CPU seconds per second of audio."""
        return self.cpu_s / self.audio_s if self.audio_s else 0.0


def audio_lines(data: Path) -> Callable[[Segment], str]:
    """`file:line (utterance u)` of an utterance's line in `segments`, else in `wav.scp`."""
    if (data / "segments").is_file():
        return lambda seg: where(data / "segments", seg.line, seg.uttid)
    lines = {ln.split(" ", 1)[0]: i for i, ln in iter_lines(data / "wav.scp") if ln.strip()}
    return lambda seg: where(data / "wav.scp", lines.get(seg.recid), seg.uttid)


def run_jobs(data: Path, job_files: PartFiles, nj: int, job: int | None,
             per_utt: Callable[[Segment, bytes], list[str]], name: str, skip_bad: bool,
             show_progress: bool) -> JobStats:
    """Run part `job` of `nj` (or all parts): `per_utt` gives each utterance's CTM lines or raises
    BadUtterance. Each part writes its CTM part, log and stats (job_files(J) -> ctm, log, json)."""
    from punctkit.progress import progress

    jobs = jobs_to_run(nj, job)
    parts = split_parts([s.uttid for s in data_segments(data)], nj)
    utt_loc = audio_lines(data)
    total = JobStats(0, nj)
    bar = progress(total=sum(len(parts[j - 1]) for j in jobs), desc=name, unit="utt", show=show_progress)
    try:
        for j in jobs:
            ctm_part, log_path, json_path = job_files(j)
            log_path.parent.mkdir(parents=True, exist_ok=True)
            stats = JobStats(j, nj, utterances=len(parts[j - 1]), part=part_key(parts[j - 1]))
            lines: list[str] = []
            with atomic_write(log_path) as logf:
                def log(msg: str) -> None:
                    logf.write(msg + "\n")
                    bar.write(f"{name}: {msg}")

                for seg, rate, x in iter_audio(data, set(parts[j - 1])):
                    bar.update(1)
                    t0 = time.process_time()
                    try:
                        if isinstance(x, PunctkitError):
                            raise BadUtterance(str(x))
                        try:
                            pcm = pcm_bytes(x, rate)
                            stats.audio_s += len(x) / rate
                            lines += per_utt(seg, pcm)
                        except BadUtterance as e:
                            raise BadUtterance(f"{utt_loc(seg)}: {e}") from None
                        stats.done += 1
                    except BadUtterance as e:
                        if not skip_bad:
                            raise
                        stats.bad.append(str(e))
                        log(f"skipped: {e}")
                    finally:
                        stats.cpu_s += time.process_time() - t0
                logf.write(f"job {j}/{nj}: {stats.done} of {stats.utterances} utterances, {stats.audio_s:.1f} s "
                           f"of audio, {len(stats.bad)} skipped, real-time factor {stats.rtf:.3f} per core\n")
            write_lines(ctm_part, lines)
            with atomic_write(json_path) as f:
                f.write(stats.to_json() + "\n")
            total.add(stats)
    finally:
        bar.close()
    return total


def read_jobs(data: Path, job_files: PartFiles, nj: int) -> tuple[JobStats, list[str]]:
    """The summed stats and the CTM lines (in job order) of jobs 1..nj; a missing job, or one
    that ran over other utterances than DATA's part now, is an error."""
    parts = split_parts([s.uttid for s in data_segments(data)], nj)
    total = JobStats(0, nj)
    lines: list[str] = []
    finished = finished_parts(nj, lambda j: (job_files(j)[2], job_files(j)[0]))  # (json, CTM part)
    for j, (json_path, ctm_part) in enumerate(finished, 1):
        stats = JobStats.read(json_path)
        check_part_record(json_path, j, nj, stats.nj, stats.part, parts[j - 1], data)
        total.add(stats)
        lines += [ln for ln in ctm_part.read_text(encoding="utf-8").splitlines() if ln.strip()]
    return total, lines


# ------------------------------------------------------------------ the command

@dataclass
class AlignSummary:
    """What `align` did (the merged stats when the CTM was written)."""

    stats: JobStats
    ctm: Path
    merged: bool

    def line(self) -> str:
        s = self.stats
        skipped = f", {len(s.bad)} skipped (see {self.ctm.parent / 'log'})" if s.bad else ", 0 skipped"
        where_to = f" -> {self.ctm}" if self.merged else ""
        return (f"align: {s.done} of {s.utterances} utterances aligned, {s.audio_s / 3600:.3f} h{skipped}, "
                f"real-time factor {s.rtf:.3f} per core{where_to}")


def _align_files(ctm: Path) -> PartFiles:
    """job J -> its CTM part, log and stats: `<CTM dir>/log/align_<ctm name>.J{,.log,.json}`."""
    return part_files(ctm.parent / "log" / f"align_{ctm.name}", "", ".log", ".json")


def _check_ctm_output(data: Path, ctm: Path, overwrite: bool) -> None:
    check_not_input(ctm, [data / n for n in ("text", "wav.scp", "segments", "utt2spk")] + [data])
    if ctm.exists() and not ctm.is_file():
        raise PunctkitError(f"{ctm}: exists and is not a file; choose another -o")
    if ctm.is_file() and not overwrite:
        raise PunctkitError(f"{ctm}: exists; pass --overwrite to replace it (or -o to write elsewhere)")


def align_data_dir(data: str | Path, ctm: str | Path | None = None, nj: int = 1, job: int | None = None,
                   merge_only: bool = False, skip_bad: bool = False, overwrite: bool = False,
                   show_progress: bool = True) -> AlignSummary:
    """Forced-align DATA/text with DATA's audio into `ctm` (default DATA/ctm); see the module docstring."""
    d = Path(data)
    out = Path(ctm) if ctm is not None else d / "ctm"
    for name in ("wav.scp", "text"):
        if not (d / name).is_file():
            raise PunctkitError(f"{d}: no '{name}' file (align needs an audio data directory with text)")
    check_jobs(nj, job)
    _check_ctm_output(d, out, overwrite)
    files = _align_files(out)
    if not merge_only:
        text = {k: v.split() for k, v in read_table(d / "text").items()}
        aligner = Aligner()

        def per_utt(seg: Segment, pcm: bytes) -> list[str]:
            if seg.uttid not in text:
                raise BadUtterance(f"no line in {d / 'text'}")
            return ctm_lines(seg.uttid, text[seg.uttid], aligner.align(text[seg.uttid], pcm))

        stats = run_jobs(d, files, nj, job, per_utt, "align", skip_bad, show_progress)
        with open(files(job or 1)[1], "a", encoding="utf-8") as logf:
            logf.write("".join(f"pronunciation from espeak-ng: {w} {p}\n" for w, p in sorted(aligner.added.items())))
            logf.write(f"aligned without silence between words (fallback): {aligner.fallbacks} utterances\n")
        if job is not None:
            return AlignSummary(stats, out, False)
    total, lines = read_jobs(d, files, nj)
    _check_ctm_output(d, out, overwrite)  # again: another process may have written it meanwhile
    with atomic_write(out) as f:
        for ln in sorted(lines, key=lambda s: s.split(" ", 1)[0]):
            f.write(ln + "\n")
    summary = AlignSummary(total, out, True)
    with atomic_write(out.parent / "log" / f"align_{out.name}.log") as f:
        f.write("".join(b + "\n" for b in total.bad) + summary.line() + "\n")
    return summary


def boundary_errors(ref: dict[str, list[Any]], hyp: dict[str, list[Any]]) -> np.ndarray:
    """|start difference| and |end difference| in seconds of every word in both CTMs (read by
    feats.ctm.read_ctm); utterances whose word sequences differ are left out."""
    errs: list[float] = []
    for uttid, rw in ref.items():
        hw = hyp.get(uttid)
        if hw is None or [w.word for w in hw] != [w.word for w in rw]:
            continue
        for a, b in zip(rw, hw):
            errs += [abs(a.start - b.start), abs(a.end - b.end)]
    return np.array(errs)

