"""Check a data directory the way Kaldi's utils/validate_data_dir.sh does; report every problem.

Checked: each table is sorted (C locale) without duplicate keys; the same
utterances in text, labels, utt2spk, segments, feats.scp, utt2num_frames,
utt2dur and ctm; utt2spk and spk2utt are inverses; one label per word;
segments inside their recordings (when the duration is known from reco2dur or
readable from a WAV header); recordings of segments (or utterances) in
wav.scp; CTM words equal to the text and CTM times inside the utterance.
"""
from __future__ import annotations

from pathlib import Path

from punctkit.data.timing import ctm_text_problems, read_ctm
from punctkit.feats.wav import wav_duration
from punctkit.files import PunctkitError, finite_number, iter_lines, positive_number, where

# Tables keyed by utterance id that must list exactly the utterances of `text`.
_UTT_TABLES = ("labels", "utt2spk", "segments", "feats.scp", "utt2num_frames", "utt2dur")
_OTHER_TABLES = ("spk2utt", "wav.scp", "reco2dur", "cmvn.scp")
_TOLERANCE = 0.05  # seconds a segment or a CTM word may run past the end (= feats.wav.MAX_OVERSHOOT)


def _table(path: Path, problems: list[str]) -> dict[str, tuple[int, str]]:
    """key -> (line, rest); sorting, duplicates and empty values go into `problems`."""
    out: dict[str, tuple[int, str]] = {}
    prev = None
    for i, line in iter_lines(path):
        if not line.strip():
            problems.append(f"{where(path, i)}: empty line")
            continue
        key, _, rest = line.partition(" ")
        if key in out:
            problems.append(f"{where(path, i)}: duplicate key '{key}'")
            continue
        if prev is not None and key.encode() < prev.encode():
            problems.append(f"{where(path, i)}: not sorted ('{key}' after '{prev}'); sort with LC_ALL=C")
        if not rest.strip():
            problems.append(f"{where(path, i)}: '{key}' has no value")
        out[key] = (i, rest.strip())
        prev = key
    return out


def validate_data_dir(path: str | Path) -> list[str]:
    """All problems of a data directory as `file:line: message` lines (empty when valid)."""

    d = Path(path)
    if not d.is_dir():
        raise PunctkitError(f"data directory not found: {d}")
    problems: list[str] = []
    if not (d / "text").is_file():
        return [f"{d / 'text'}: missing"]
    tables = {name: _table(d / name, problems) for name in ("text",) + _UTT_TABLES + _OTHER_TABLES
              if (d / name).is_file()}
    text = tables["text"]
    utts = set(text)
    for name in _UTT_TABLES:
        if name in tables:
            _same_keys(d / name, tables[name], d / "text", utts, problems)
    if "labels" in tables:
        for u, (i, labs) in tables["labels"].items():
            if u in text and len(labs.split()) != len(text[u][1].split()):
                problems.append(f"{where(d / 'labels', i, u)}: {len(labs.split())} labels for "
                                f"{len(text[u][1].split())} words in text")
    if "utt2spk" in tables:
        _check_speakers(d, tables["utt2spk"], tables.get("spk2utt"), problems)
    durations = _check_audio(d, tables, problems, wav_duration)
    if (d / "ctm").is_file():
        try:
            ctm = read_ctm(d / "ctm")
        except PunctkitError as e:
            problems.append(str(e))
        else:
            problems += ctm_text_problems(ctm, {u: w for u, (_, w) in text.items()}, d / "ctm", d / "text")
            for u, words in ctm.items():
                dur = durations.get(u)
                if dur is not None and words and words[-1].end > dur + _TOLERANCE:
                    problems.append(f"{where(d / 'ctm', words[-1].line, u)}: word ends at {words[-1].end:.2f} s, "
                                    f"after the end of the utterance ({dur:.2f} s)")
    return problems


def _same_keys(path: Path, table: dict, text_path: Path, utts: set[str], problems: list[str]) -> None:
    for u, (i, _) in table.items():
        if u not in utts:
            problems.append(f"{where(path, i, u)}: utterance is not in {text_path}")
    for u in sorted(utts - set(table)):
        problems.append(f"{path}: no line for utterance '{u}' of {text_path}")


def _check_speakers(d: Path, utt2spk: dict, spk2utt: dict | None, problems: list[str]) -> None:
    if spk2utt is None:
        problems.append(f"{d / 'spk2utt'}: missing (utils/utt2spk_to_spk2utt.pl makes it from utt2spk)")
        return
    expected: dict[str, list[str]] = {}
    for u, (_, spk) in utt2spk.items():
        expected.setdefault(spk, []).append(u)
    for spk, (i, us) in spk2utt.items():
        if sorted(us.split()) != sorted(expected.get(spk, [])):
            problems.append(f"{where(d / 'spk2utt', i)}: speaker '{spk}' does not list the utterances "
                            f"utt2spk gives it ({len(us.split())} vs {len(expected.get(spk, []))})")
    for spk in sorted(set(expected) - set(spk2utt)):
        problems.append(f"{d / 'spk2utt'}: no line for speaker '{spk}' of {d / 'utt2spk'}")


def _check_audio(d: Path, tables: dict, problems: list[str], wav_duration) -> dict[str, float]:
    """Recordings and segment bounds; returns the known utterance durations."""
    durations: dict[str, float] = {}
    if "utt2dur" in tables:
        for u, (i, v) in tables["utt2dur"].items():
            try:
                durations[u] = positive_number(v, where(d / 'utt2dur', i, u), "the duration")
            except PunctkitError as e:
                problems.append(str(e))
    wavs = tables.get("wav.scp")
    if wavs is None:
        if "segments" in tables:
            problems.append(f"{d / 'wav.scp'}: missing but there is a segments file")
        return durations
    reco_dur = {}
    for r, (i, v) in tables.get("reco2dur", {}).items():
        try:
            reco_dur[r] = positive_number(v, where(d / 'reco2dur', i), "the duration")
        except PunctkitError as e:
            problems.append(str(e))
    if "segments" not in tables:
        _same_keys(d / "wav.scp", wavs, d / "text", set(tables["text"]), problems)
        for u, (_, spec) in wavs.items():
            dur = reco_dur.get(u) if u in reco_dur else wav_duration(spec)
            if dur is not None:
                durations.setdefault(u, dur)
        return durations
    _check_segments(d, tables["segments"], wavs, reco_dur, durations, problems, wav_duration)
    return durations


def _check_segments(d: Path, segments: dict, wavs: dict, reco_dur: dict, durations: dict[str, float],
                    problems: list[str], wav_duration) -> None:
    """Each segment's recording and bounds (a recording's duration from `reco_dur`, else its WAV header, kept in
    `reco_dur`); each utterance's duration goes into `durations` where not known already."""
    for u, (i, rest) in segments.items():
        loc = where(d / "segments", i, u)
        parts = rest.split()
        if len(parts) != 3:
            problems.append(f"{loc}: expected 'uttid recid start end'")
            continue
        rec = parts[0]
        try:
            start, end = finite_number(parts[1], loc, "start"), finite_number(parts[2], loc, "end")
        except PunctkitError as e:
            problems.append(str(e))
            continue
        if rec not in wavs:
            problems.append(f"{loc}: recording '{rec}' is not in {d / 'wav.scp'}")
            continue
        if start < 0 or (end != -1 and end <= start):
            problems.append(f"{loc}: bad segment times {start}..{end}")
            continue
        if rec not in reco_dur:
            reco_dur[rec] = wav_duration(wavs[rec][1])
        rdur = reco_dur[rec]
        if rdur is not None and (end > rdur + _TOLERANCE or start >= rdur):
            problems.append(f"{loc}: segment {start:.2f}..{end:.2f} s is past the end of recording "
                            f"'{rec}' ({rdur:.2f} s)")
        if end != -1:
            durations.setdefault(u, end - start)
        elif rdur is not None:
            durations.setdefault(u, rdur - start)
