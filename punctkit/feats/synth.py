"""Synthesized speech with espeak-ng: punctuated text -> 16 kHz wav + an exact word-level CTM.

libespeak-ng is driven through ctypes in synchronous mode. Its events give,
in samples of the synthesized audio, where each word starts (espeakEVENT_WORD,
with the word's character position in the text) and where each phoneme starts
(espeakEVENT_PHONEME, pauses are phonemes named `_...`). A word ends where the
next pause or the next word starts, so the CTM boundaries are the
synthesizer's own segment boundaries, not estimates. Where espeak speaks two
of our words as one word (a split contraction, `do n't` -> `don't`, or a
function word it joins to the word before, `of the`), the later word gets the
last phonemes of that espeak word (as many as espeak gives it alone: two for
`n't`), so the boundary between them is a phoneme boundary.

espeak-ng keeps state between calls (intonation, waveform phase), so the same
text synthesized twice in one process differs slightly. Each utterance is
therefore synthesized in its own freshly forked process: the output depends
only on the text, the voice, the rate and the seed, never on --nj or order.
Audio is resampled from espeak's 22050 Hz with sox (no dither).

flite voices (`flite:rms`, or any voice with `--engine flite`) are spoken by the
`flite` program; it gives no word events, so a directory with any flite
utterance gets no `ctm` (`punctkit align` writes one by forced alignment).

Prosody (`Prosody`): the synthesizer need not receive every reference mark.
Each mark reaches it with a fixed probability per class and a comma is given
where there is no mark at a fixed rate (a hesitation), drawn from an RNG that
depends only on (seed, uttid), so pauses and intonation are evidence for the
marks, not an answer key. `labels` are never changed: only what is spoken.
"""
from __future__ import annotations

import ctypes
import hashlib
import multiprocessing as mp
import shutil
import subprocess
import tempfile
import wave
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from punctkit.data.datadir import check_data_dir_output, read_data_dir, write_data_dir
from punctkit.data.labels import MARK_TEXT, SENTENCE_END, O, case_of, mark_of
from punctkit.data.tokenize import CLITICS, display_words
from punctkit.files import PunctkitError, check_output_dir

VOICES = ("en-us", "en", "en+f3", "en-us+m3", "en+f4")
RATES = (150, 165, 180, 195)  # words per minute
ENGINES = ("espeak", "flite")
FLITE_WPM = 170  # flite's own speaking rate: a rate R is spoken with duration_stretch FLITE_WPM / R
WAV_DIR_FILES = ("*.wav",)  # what synthesize writes into its wav directory

_EVENT_WORD, _EVENT_PHONEME, _EVENT_END_LIST = 1, 7, 0
_AUDIO_OUTPUT_SYNCHRONOUS, _INIT_PHONEME_EVENTS, _INIT_DONT_EXIT = 2, 0x1, 0x8000
_CHARS_UTF8, _POS_CHARACTER, _PARAM_RATE = 1, 1, 1


class _Event(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("unique_identifier", ctypes.c_uint), ("text_position", ctypes.c_int),
                ("length", ctypes.c_int), ("audio_position", ctypes.c_int), ("sample", ctypes.c_int),
                ("user_data", ctypes.c_void_p), ("id", ctypes.c_char * 8)]


_Callback = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.POINTER(_Event))


@dataclass
class Spoken:
    """Synthesizer output: samples, their rate, word events (char pos, sample) and phoneme events."""

    samples: np.ndarray
    rate: int
    words: list[tuple[int, int]]      # (0-based character position, start sample)
    phonemes: list[tuple[int, str]]   # (start sample, phoneme name)


def espeak(text: str, voice: str, wpm: int) -> Spoken:
    """Synthesize `text` with libespeak-ng (call once per process: the library keeps state)."""
    try:
        lib = ctypes.CDLL("libespeak-ng.so.1")
    except OSError:
        raise PunctkitError("libespeak-ng not found (apt-get install espeak-ng libespeak-ng1)") from None
    rate = lib.espeak_Initialize(_AUDIO_OUTPUT_SYNCHRONOUS, 0, None, _INIT_PHONEME_EVENTS | _INIT_DONT_EXIT)
    if rate <= 0:
        raise PunctkitError("espeak-ng failed to initialise (is espeak-ng-data installed?)")
    chunks: list[np.ndarray] = []
    words: list[tuple[int, int]] = []
    phonemes: list[tuple[int, str]] = []

    def callback(wav, n, events) -> int:
        if n > 0:
            chunks.append(np.ctypeslib.as_array(wav, shape=(n,)).copy())
        i = 0
        while events[i].type != _EVENT_END_LIST:
            e = events[i]
            if e.type == _EVENT_WORD and e.length > 0:
                words.append((e.text_position - 1, e.sample))
            elif e.type == _EVENT_PHONEME:
                phonemes.append((e.sample, bytes(e.id).split(b"\0")[0].decode(errors="replace")))
            i += 1
        return 0

    cb = _Callback(callback)
    lib.espeak_SetSynthCallback(cb)
    if lib.espeak_SetVoiceByName(voice.encode()) != 0:
        raise PunctkitError(f"espeak-ng has no voice '{voice}' (see espeak-ng --voices)")
    lib.espeak_SetParameter(_PARAM_RATE, int(wpm), 0)
    data = text.encode("utf-8")
    if lib.espeak_Synth(data, len(data) + 1, 0, _POS_CHARACTER, 0, _CHARS_UTF8, None, None) != 0:
        raise PunctkitError(f"espeak-ng could not synthesize: {text[:60]!r}")
    lib.espeak_Synchronize()
    samples = np.concatenate(chunks) if chunks else np.zeros(0, np.int16)
    return Spoken(samples.astype(np.int16), rate, words, phonemes)


def phoneme_counts(words: list[str]) -> list[int]:
    """How many phonemes espeak-ng gives each word said alone (call after `espeak`, same process).

    Split contractions are fixed: two for `n't`, one for `'s`, `'m`, `'re`, ...
    """
    lib = ctypes.CDLL("libespeak-ng.so.1")
    lib.espeak_TextToPhonemes.restype = ctypes.c_char_p
    out = []
    for w in words:
        if w.lower() == "n't" or w.startswith("'"):
            out.append(2 if w.lower() == "n't" else 1)
            continue
        ptr = ctypes.c_char_p(w.encode("utf-8"))
        ph = lib.espeak_TextToPhonemes(ctypes.byref(ptr), _CHARS_UTF8, ord("|") << 8) or b""
        out.append(max(1, len([p for p in ph.decode(errors="replace").replace(" ", "|").split("|") if p])))
    return out


def word_boundaries(spoken: Spoken, spans: list[tuple[int, int]], groups: list[list[int]],
                    tail_phonemes: list[int]) -> list[tuple[int, int]]:
    """(start, end) sample of each word from the synthesizer's events.

    `groups` lists the words written as one (a word and its glued contractions)
    and `spans` their character spans in the text. A group with no word event
    was spoken together with the one before (espeak says `of the` as one word)
    and joins it. A word that is not the first of its espeak word takes the last
    `tail_phonemes[word]` phonemes of it, so every boundary is a phoneme boundary.
    """
    n = len(spoken.samples)
    starts: list[list[int]] = [[] for _ in groups]
    for pos, sample in spoken.words:
        g = next((k for k, (a, b) in enumerate(spans) if a <= pos < b), None)
        if g is not None:
            starts[g].append(sample)
    spoken_words: list[tuple[list[int], list[int]]] = []  # (word indices, their word-event samples)
    for g, members in enumerate(groups):
        if starts[g] or not spoken_words:
            spoken_words.append((list(members), starts[g]))
        else:
            spoken_words[-1][0].extend(members)
    pauses = [s for s, name in spoken.phonemes if name.startswith("_")]
    out: list[tuple[int, int]] = []
    for g, (members, st) in enumerate(spoken_words):
        if not st:  # nothing spoken before the first word event: zero-length words at 0
            out += [(0, 0)] * len(members)
            continue
        start, last = min(st), max(st)
        nxt = min([min(s) for _, s in spoken_words[g + 1:] if s] + [n])
        end = min([p for p in pauses if last < p <= nxt] + [nxt])
        cuts = [start, end]
        inner = [s for s, name in spoken.phonemes if start <= s < end and not name.startswith("_")]
        for w in reversed(members[1:]):
            k = tail_phonemes[w]
            split = inner[-k] if len(inner) > k else (cuts[0] + cuts[1]) // 2
            inner = [s for s in inner if s < split]
            cuts.insert(1, split)
        out += [(cuts[i], cuts[i + 1]) for i in range(len(members))]
    return out


@dataclass
class SynthJob:
    """One utterance to synthesize."""

    uttid: str
    words: list[str]
    labels: list[str]
    voice: str
    wpm: int
    wav: Path
    sample_rate: int = 16000
    engine: str = "espeak"


def synthesize_utterance(job: SynthJob) -> tuple[str, float, list[tuple[float, float]] | None, str]:
    """Write job.wav from job.labels (the marks to speak); returns (uttid, duration,
    word (start, end) seconds or None for flite, which gives no word events, spoken text)."""
    shown, glued = display_words(job.words, job.labels)
    text, spans, groups = "", [], []
    for i, (s, g) in enumerate(zip(shown, glued)):
        if g and groups:
            groups[-1].append(i)
            spans[-1] = (spans[-1][0], len(text) + len(s))
        else:
            if text:
                text += " "
            groups.append([i])
            spans.append((len(text), len(text) + len(s)))
        text += s
    if job.engine == "flite":
        return job.uttid, flite(text, job.voice, job.wpm, job.wav, job.sample_rate), None, text
    spoken = espeak(text, job.voice, job.wpm)
    bounds = word_boundaries(spoken, spans, groups, phoneme_counts(job.words))
    _resample_to_wav(spoken, job.wav, job.sample_rate)
    sr = spoken.rate
    times = [(a / sr, b / sr) for a, b in bounds]
    return job.uttid, len(spoken.samples) / sr, times, text


def _resample_to_wav(spoken: Spoken, path: Path, rate: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    cmd = ["sox", "-D", "-t", "raw", "-r", str(spoken.rate), "-e", "signed", "-b", "16", "-c", "1", "-",
           "-t", "wav", "-r", str(rate), "-b", "16", "-c", "1", str(tmp)]
    try:
        proc = subprocess.run(cmd, input=spoken.samples.astype("<i2").tobytes(), capture_output=True)
    except FileNotFoundError:
        raise PunctkitError("sox not found (apt-get install sox)") from None
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise PunctkitError(f"sox failed on {path}: {proc.stderr.decode(errors='replace').strip()}")
    tmp.replace(path)


def voice_for(uttid: str, seed: int, voices: tuple[str, ...] = VOICES, rates: tuple[int, ...] = RATES,
              ) -> tuple[str, int]:
    """The voice and speaking rate of an utterance, a fixed function of (seed, uttid)."""
    h = int.from_bytes(hashlib.sha256(f"{seed}:{uttid}".encode()).digest()[:8], "big")
    return voices[h % len(voices)], rates[(h // len(voices)) % len(rates)]


@dataclass(frozen=True)
class Prosody:
    """Which reference marks the synthesizer receives, and how often it hesitates.

    `mark_prob`: mark -> probability that it is spoken (empty: every mark); a mark not
    named takes PERIOD's probability if it ends a sentence, else COMMA's (1 when those
    are not named either). `hesitation_rate`: probability that a word without a mark,
    other than the last, is followed by a comma all the same.
    """

    mark_prob: dict[str, float] = field(default_factory=dict)
    hesitation_rate: float = 0.0

    def __post_init__(self) -> None:
        for name, p in list(self.mark_prob.items()) + [("hesitation rate", self.hesitation_rate)]:
            if not 0.0 <= p <= 1.0:
                raise PunctkitError(f"synthesize: {name} probability must be in [0, 1], not {p}")
        unknown = [m for m in self.mark_prob if m not in MARK_TEXT]
        if unknown:
            raise PunctkitError(f"synthesize: unknown mark '{unknown[0]}' in the mark probabilities "
                                f"(known: {', '.join(MARK_TEXT)})")

    def prob(self, mark: str) -> float:
        """Probability that `mark` reaches the synthesizer."""
        if mark in self.mark_prob:
            return self.mark_prob[mark]
        return self.mark_prob.get("PERIOD" if mark in SENTENCE_END else "COMMA", 1.0)


def parse_mark_prob(spec: str) -> dict[str, float]:
    """`PERIOD=0.8,QUESTION=0.8,COMMA=0.5` -> {mark: probability}; '' -> {} (every mark)."""
    out: dict[str, float] = {}
    for item in filter(None, (x.strip() for x in spec.split(","))):
        name, eq, value = item.partition("=")
        try:
            out[name.strip().upper()] = float(value)
        except ValueError:
            raise PunctkitError(f"synthesize: --mark-prob expects MARK=P,..., got '{item}'") from None
        if not eq:
            raise PunctkitError(f"synthesize: --mark-prob expects MARK=P,..., got '{item}'")
    return out


def spoken_labels(labels: list[str], prosody: Prosody, seed: int, uttid: str,
                  words: list[str] | None = None) -> list[str]:
    """The labels the synthesizer speaks: each mark kept with its probability, a comma added
    after an unmarked word (not the last, nor one before a clitic of `words`: `do , n't`)
    at the hesitation rate. One uniform draw per word from an RNG seeded by (seed, uttid) only."""
    h = int.from_bytes(hashlib.sha256(f"prosody:{seed}:{uttid}".encode()).digest()[:8], "big")
    draws = np.random.default_rng(h).random(len(labels))
    out = []
    for k, (lab, u) in enumerate(zip(labels, draws)):
        mark, case = mark_of(lab), case_of(lab)
        if mark != O:
            mark = mark if u < prosody.prob(mark) else O
        elif k < len(labels) - 1 and u < prosody.hesitation_rate and not (
                words and words[k + 1].lower() in CLITICS):
            mark = "COMMA"
        out.append(f"{case}_{mark}" if case else mark)
    return out


def engine_voice(voice: str, engine: str = "espeak") -> tuple[str, str]:
    """`flite:rms` -> ('flite', 'rms'); an unprefixed voice belongs to `engine`."""
    head, colon, rest = voice.partition(":")
    if colon and head in ENGINES:
        return head, rest
    if engine not in ENGINES:
        raise PunctkitError(f"synthesize: unknown engine '{engine}' (known: {', '.join(ENGINES)})")
    return engine, voice


def check_voices(voices: tuple[str, ...], engine: str = "espeak") -> None:
    """One-line error for a flite voice flite does not have (flite itself silently falls back)."""
    flite_voices = [v for e, v in (engine_voice(x, engine) for x in voices) if e == "flite"]
    if not flite_voices:
        return
    if shutil.which("flite") is None:
        raise PunctkitError("flite not found (apt-get install flite)")
    listed = subprocess.run(["flite", "-lv"], capture_output=True, text=True).stdout
    have = set(listed.split(":", 1)[-1].split())
    for v in flite_voices:
        if v not in have:
            raise PunctkitError(f"flite has no voice '{v}' (flite -lv lists: {' '.join(sorted(have))})")


def flite(text: str, voice: str, wpm: int, path: Path, rate: int) -> float:
    """Speak `text` with the flite program into `path` (`rate` Hz, 16 bit mono); returns seconds."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with tempfile.TemporaryDirectory() as d:
        txt, raw = Path(d) / "text.txt", Path(d) / "flite.wav"
        txt.write_text(text + "\n", encoding="utf-8")  # from a file: text starting with '-' is no option
        cmd = ["flite", "-voice", voice, "--setf", f"duration_stretch={FLITE_WPM / wpm:.4f}", "-f", str(txt),
               "-o", str(raw)]
        proc = subprocess.run(cmd, capture_output=True)
        if proc.returncode != 0 or not raw.is_file():
            raise PunctkitError(f"flite failed on {path.name}: {proc.stderr.decode(errors='replace').strip()[:200]}")
        resample = ["sox", "-D", str(raw), "-t", "wav", "-r", str(rate), "-b", "16", "-c", "1", str(tmp)]
        proc = subprocess.run(resample, capture_output=True)
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise PunctkitError(f"sox failed on {path}: {proc.stderr.decode(errors='replace').strip()}")
    tmp.replace(path)
    with wave.open(str(path)) as w:
        return w.getnframes() / w.getframerate()


def _run_fresh(job: SynthJob):
    ctypes.CDLL(None).srand(0)  # a forked child inherits libc's rand() state; espeak may use it
    return synthesize_utterance(job)


def synthesize_data_dir(src: str | Path, out: str | Path, wav_dir: str | Path | None = None, seed: int = 1,
                        nj: int = 1, voices: tuple[str, ...] = VOICES, rates: tuple[int, ...] = RATES,
                        sample_rate: int = 16000, show_progress: bool = True,
                        overwrite: bool = False, prosody: Prosody | None = None,
                        engine: str = "espeak") -> tuple[int, float]:
    """Audio data directory `out` (wav.scp, ctm, utt2dur, utt2voice + src's text/labels/speakers).

    Wavs go to `wav_dir` (default: `<out>_wav` beside it). Returns (utterances, seconds).
    `prosody` decides which marks are spoken (default: all, no hesitations); voices are
    espeak-ng voices or `flite:NAME` (unprefixed ones belong to `engine`). With any flite
    utterance no `ctm` is written (an old one is removed): `punctkit align` makes it.
    `out` is written by `write_data_dir` and `wav_dir` may hold only wavs, unless
    `overwrite` (files punctkit does not write are kept either way).
    """
    from punctkit.progress import progress

    dd = read_data_dir(src)
    out = Path(out)
    wav_dir = Path(wav_dir) if wav_dir else out.with_name(out.name + "_wav")
    check_data_dir_output(out, overwrite, [src])
    check_output_dir(wav_dir, WAV_DIR_FILES, overwrite=overwrite, inputs=[src])
    check_voices(voices, engine)
    prosody = prosody or Prosody()
    jobs = []
    for u in dd.utterances:
        voice, wpm = voice_for(u.uttid, seed, voices, rates)
        eng, name = engine_voice(voice, engine)
        jobs.append(SynthJob(u.uttid, u.words, spoken_labels(u.labels, prosody, seed, u.uttid, u.words), name, wpm,
                             (wav_dir / f"{u.uttid}.wav").resolve(), sample_rate, eng))
    results = {}
    ctx = mp.get_context("fork")
    with ctx.Pool(max(1, nj), maxtasksperchild=1) as pool:
        it = pool.imap(_run_fresh, jobs, chunksize=1)
        for res in progress(it, total=len(jobs), desc="synthesize", unit="utt", show=show_progress):
            results[res[0]] = res
    wav_scp, ctm, utt2dur, utt2voice, log = [], [], [], [], []
    total = 0.0
    for job in sorted(jobs, key=lambda j: j.uttid):
        _, dur, times, text = results[job.uttid]
        total += dur
        wav_scp.append(f"{job.uttid} {job.wav}")
        utt2dur.append(f"{job.uttid} {dur:.4f}")
        voice = job.voice if job.engine == "espeak" else f"{job.engine}:{job.voice}"
        utt2voice.append(f"{job.uttid} {voice} {job.wpm}")
        if times is not None:
            ctm += [f"{job.uttid} 1 {a:.4f} {b - a:.4f} {w}" for w, (a, b) in zip(job.words, times)]
        log.append(f"{job.uttid} {voice} {job.wpm} {text}")
    timed = all(job.engine == "espeak" for job in jobs)
    extra = {"wav.scp": wav_scp, "utt2dur": utt2dur, "utt2voice": utt2voice, "synthesize.log": log}
    if timed:
        extra["ctm"] = ctm
    write_data_dir(out, dd.utterances, dd.inventory, dd.utt2spk, extra=extra, overwrite=overwrite, inputs=[src])
    if not timed:
        (out / "ctm").unlink(missing_ok=True)  # an earlier run's word timings, not of this audio
    return len(jobs), total
