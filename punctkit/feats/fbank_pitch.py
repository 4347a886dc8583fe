"""Log-mel filterbank + Kaldi pitch features with kaldi-native-fbank, stored with kaldiio.

The 43-dim default is 40 log-mel bins followed by Kaldi's 3 processed pitch
features (POV, normalised log-pitch, delta-pitch), i.e. what Kaldi's
`make_fbank_pitch.sh` pastes together. kaldi-native-fbank computes both with
Kaldi's arithmetic (`OnlineFbank`, `compute_and_process_kaldi_pitch`).
Options come from Kaldi-style conf files (`--num-mel-bins=40`, one per line).

Features are stored at the full frame rate; the frame subsampling factor is
recorded in `DATA/feats.info` and applied when features are loaded
(punctkit.feats.loader), so one archive serves any factor.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import kaldi_native_fbank as knf
import numpy as np

from punctkit.data.datadir import read_table
from punctkit.data.jobs import check_jobs, finished_parts, jobs_to_run, part_path, split_parts
from punctkit.data.timing import Segment
from punctkit.feats.ark import ArkWriter
from punctkit.feats.wav import data_segments, iter_audio
from punctkit.files import (
    PunctkitError,
    atomic_write,
    check_output_dir,
    iter_lines,
    output_dir,
    positive_number,
    where,
    write_lines,
)

KINDS = ("fbank_pitch", "fbank", "pitch")
# Kaldi's paste-feats --length-tolerance: fbank and pitch frame counts may differ this much.
LENGTH_TOLERANCE = 2
# What extract-feats writes: into FEATDIR (the archives, per-job lists, logs) and into DATA.
FEATDIR_FILES = ("feats.ark", "feats.scp", "raw_*.ark", "raw_*.scp", "utt2num_frames*", "feats.info", "log/")
DATA_OUTPUTS = ("feats.scp", "utt2num_frames", "feats.info")


# ------------------------------------------------------------------ Kaldi-style conf files

def read_conf(path: str | Path | None) -> dict[str, tuple[str, int]]:
    """`--name=value` lines (`#` comments) -> {name: (value, line)}; a bare `--flag` is true."""
    if path is None:
        return {}
    out: dict[str, tuple[str, int]] = {}
    for i, line in iter_lines(path):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if not line.startswith("--"):
            raise PunctkitError(f"{where(path, i)}: expected '--option=value', got '{line}'")
        name, eq, value = line[2:].partition("=")
        out[name.strip()] = (value.strip() if eq else "true", i)
    return out


def _parse(value: str, kind: type, loc: str, name: str):
    try:
        if kind is bool:
            if value.lower() not in ("true", "false", "1", "0"):
                raise ValueError
            return value.lower() in ("true", "1")
        return kind(value)
    except ValueError:
        raise PunctkitError(f"{loc}: --{name} expects {kind.__name__}, got '{value}'") from None


# conf option -> (object path inside the options, type)
_FBANK_OPTS = {
    "sample-frequency": ("frame_opts.samp_freq", float), "frame-shift": ("frame_opts.frame_shift_ms", float),
    "frame-length": ("frame_opts.frame_length_ms", float), "dither": ("frame_opts.dither", float),
    "preemphasis-coefficient": ("frame_opts.preemph_coeff", float),
    "remove-dc-offset": ("frame_opts.remove_dc_offset", bool), "window-type": ("frame_opts.window_type", str),
    "round-to-power-of-two": ("frame_opts.round_to_power_of_two", bool),
    "blackman-coeff": ("frame_opts.blackman_coeff", float), "snip-edges": ("frame_opts.snip_edges", bool),
    "num-mel-bins": ("mel_opts.num_bins", int), "low-freq": ("mel_opts.low_freq", float),
    "high-freq": ("mel_opts.high_freq", float), "vtln-low": ("mel_opts.vtln_low", float),
    "vtln-high": ("mel_opts.vtln_high", float), "htk-mode": ("mel_opts.htk_mode", bool),
    "use-energy": ("use_energy", bool), "energy-floor": ("energy_floor", float), "raw-energy": ("raw_energy", bool),
    "htk-compat": ("htk_compat", bool), "use-log-fbank": ("use_log_fbank", bool), "use-power": ("use_power", bool),
}
_PITCH_OPTS = {
    "sample-frequency": ("samp_freq", float), "frame-shift": ("frame_shift_ms", float),
    "frame-length": ("frame_length_ms", float), "preemphasis-coefficient": ("preemph_coeff", float),
    "min-f0": ("min_f0", float), "max-f0": ("max_f0", float), "soft-min-f0": ("soft_min_f0", float),
    "penalty-factor": ("penalty_factor", float), "lowpass-cutoff": ("lowpass_cutoff", float),
    "resample-frequency": ("resample_freq", float), "delta-pitch": ("delta_pitch", float),
    "nccf-ballast": ("nccf_ballast", float), "nccf-ballast-online": ("nccf_ballast_online", bool),
    "lowpass-filter-width": ("lowpass_filter_width", int), "upsample-filter-width": ("upsample_filter_width", int),
    "max-frames-latency": ("max_frames_latency", int), "frames-per-chunk": ("frames_per_chunk", int),
    "simulate-first-pass-online": ("simulate_first_pass_online", bool), "recompute-frame": ("recompute_frame", int),
    "snip-edges": ("snip_edges", bool),
}
_PROCESS_OPTS = {
    "pitch-scale": ("pitch_scale", float), "pov-scale": ("pov_scale", float), "pov-offset": ("pov_offset", float),
    "delta-pitch-scale": ("delta_pitch_scale", float), "delta-pitch-noise-stddev": ("delta_pitch_noise_stddev", float),
    "normalization-left-context": ("normalization_left_context", int),
    "normalization-right-context": ("normalization_right_context", int), "delta-window": ("delta_window", int),
    "delay": ("delay", int), "add-pov-feature": ("add_pov_feature", bool),
    "add-normalized-log-pitch": ("add_normalized_log_pitch", bool), "add-delta-pitch": ("add_delta_pitch", bool),
    "add-raw-log-pitch": ("add_raw_log_pitch", bool),
}


def _set(obj, dotted: str, value) -> None:
    *parents, last = dotted.split(".")
    for p in parents:
        obj = getattr(obj, p)
    setattr(obj, last, value)


def _apply(conf_path, conf: dict[str, tuple[str, int]], targets: list[tuple[object, dict]]) -> None:
    for name, (value, line) in conf.items():
        loc = where(conf_path, line)
        hit = [(obj, table[name]) for obj, table in targets if name in table]
        if not hit:
            raise PunctkitError(f"{loc}: unknown option --{name}")
        for obj, (dotted, kind) in hit:
            try:
                _set(obj, dotted, _parse(value, kind, loc, name))
            except (TypeError, OverflowError):  # the C++ option is narrower than Python's int
                raise PunctkitError(f"{loc}: --{name}={value} is out of range") from None


def fbank_options(conf_path: str | Path | None = None) -> knf.FbankOptions:
    """FbankOptions from a Kaldi fbank.conf (Kaldi's defaults otherwise, but 40 bins and no dither)."""
    opts = knf.FbankOptions()
    opts.mel_opts.num_bins = 40
    opts.frame_opts.dither = 0.0
    _apply(conf_path, read_conf(conf_path), [(opts, _FBANK_OPTS)])
    return opts


def pitch_options(conf_path: str | Path | None = None) -> tuple[knf.PitchExtractionOptions, knf.ProcessPitchOptions]:
    """Pitch extraction and post-processing options from a Kaldi pitch.conf."""
    po, pp = knf.PitchExtractionOptions(), knf.ProcessPitchOptions()
    _apply(conf_path, read_conf(conf_path), [(po, _PITCH_OPTS), (pp, _PROCESS_OPTS)])
    return po, pp


# ------------------------------------------------------------------ computing features

@dataclass
class FeatureConfig:
    """What to compute: the kind and the kaldi-native-fbank options."""

    kind: str = "fbank_pitch"
    fbank: knf.FbankOptions = field(default_factory=fbank_options)
    pitch: knf.PitchExtractionOptions = field(default_factory=lambda: pitch_options()[0])
    process: knf.ProcessPitchOptions = field(default_factory=lambda: pitch_options()[1])

    @classmethod
    def from_files(cls, kind: str = "fbank_pitch", fbank_conf: str | Path | None = None,
                   pitch_conf: str | Path | None = None) -> "FeatureConfig":
        """Read the conf files the kind needs; checks that fbank and pitch agree on rate and shift."""
        if kind not in KINDS:
            raise PunctkitError(f"unknown feature kind '{kind}' (known: {', '.join(KINDS)})")
        po, pp = pitch_options(pitch_conf if kind != "fbank" else None)
        cfg = cls(kind, fbank_options(fbank_conf if kind != "pitch" else None), po, pp)
        if kind == "fbank_pitch":
            fo = cfg.fbank.frame_opts
            if fo.samp_freq != po.samp_freq or fo.frame_shift_ms != po.frame_shift_ms:
                raise PunctkitError(f"{fbank_conf} and {pitch_conf} disagree on --sample-frequency or "
                                    f"--frame-shift ({fo.samp_freq:g}/{fo.frame_shift_ms:g} vs "
                                    f"{po.samp_freq:g}/{po.frame_shift_ms:g})")
        return cfg

    @property
    def sample_rate(self) -> float:
        return self.pitch.samp_freq if self.kind == "pitch" else self.fbank.frame_opts.samp_freq

    @property
    def frame_shift(self) -> float:
        """Frame shift in seconds."""
        ms = self.pitch.frame_shift_ms if self.kind == "pitch" else self.fbank.frame_opts.frame_shift_ms
        return ms / 1000.0

    @property
    def dim(self) -> int:
        fbank = self.fbank.mel_opts.num_bins + int(self.fbank.use_energy) if self.kind != "pitch" else 0
        return fbank + (self.process.dim if self.kind != "fbank" else 0)


def compute_fbank(samples: np.ndarray, opts: knf.FbankOptions) -> np.ndarray:
    """Log-mel filterbank (frames, bins) of float samples at 16-bit scale."""
    fb = knf.OnlineFbank(opts)
    fb.accept_waveform(opts.frame_opts.samp_freq, samples)
    fb.input_finished()
    n = fb.num_frames_ready
    if n == 0:
        return np.zeros((0, opts.mel_opts.num_bins + int(opts.use_energy)), dtype=np.float32)
    return np.stack([fb.get_frame(i) for i in range(n)]).astype(np.float32, copy=False)


def compute_pitch(samples: np.ndarray, po: knf.PitchExtractionOptions, pp: knf.ProcessPitchOptions) -> np.ndarray:
    """Kaldi's processed pitch features (POV, normalised log-pitch, delta-pitch by default)."""
    if len(samples) < po.frame_length_ms * po.samp_freq / 1000.0:
        return np.zeros((0, pp.dim), dtype=np.float32)
    return np.asarray(knf.compute_and_process_kaldi_pitch(po, pp, samples), dtype=np.float32)


def compute_features(samples: np.ndarray, rate: int, cfg: FeatureConfig) -> np.ndarray:
    """Features of one utterance; PunctkitError for a rate mismatch or no frames."""
    if rate != int(cfg.sample_rate):
        raise PunctkitError(f"sample rate {rate} Hz does not match the configured --sample-frequency "
                            f"{cfg.sample_rate:g} (resample it, e.g. 'sox x.wav -r {cfg.sample_rate:g} -t wav - |')")
    samples = np.ascontiguousarray(samples, dtype=np.float32)
    parts = []
    if cfg.kind in ("fbank", "fbank_pitch"):
        parts.append(compute_fbank(samples, cfg.fbank))
    if cfg.kind in ("pitch", "fbank_pitch"):
        parts.append(compute_pitch(samples, cfg.pitch, cfg.process))
    n = min(len(p) for p in parts)
    if n == 0:
        raise PunctkitError(f"no frames ({len(samples) / rate:.3f} s of audio is shorter than one frame)")
    if max(len(p) for p in parts) - n > LENGTH_TOLERANCE:
        raise PunctkitError(f"fbank and pitch frame counts differ: {[len(p) for p in parts]}")
    return np.concatenate([p[:n] for p in parts], axis=1)


# ------------------------------------------------------------------ data directories

@dataclass
class ExtractSummary:
    """What one extract-feats call did."""

    utterances: int = 0
    frames: int = 0
    seconds: float = 0.0
    bad: list[str] = field(default_factory=list)
    scp_files: list[Path] = field(default_factory=list)


def job_names(featdir: Path, kind: str, job: int | None) -> tuple[Path, Path, Path]:
    """(ark, scp, utt2num_frames) of part `job` (punctkit.data.jobs naming); None: the files of a
    single unsplit run (feats.ark, feats.scp, utt2num_frames)."""
    if job is None:
        return featdir / "feats.ark", featdir / "feats.scp", featdir / "utt2num_frames"
    raw = featdir / f"raw_{kind}"
    return part_path(raw, job, ".ark"), part_path(raw, job, ".scp"), part_path(featdir / "utt2num_frames", job)


def _write_job(data: Path, cfg: FeatureConfig, keep: set[str], names: tuple[Path, Path, Path],
               skip_bad: bool, log: Callable[[str], None], progress: Callable[[int], None]) -> ExtractSummary:
    """Compute and store the features of the utterances in `keep` (one job)."""
    ark, scp, u2n = names
    summary = ExtractSummary()
    n_lines = []
    with ArkWriter(ark, scp) as writer:
        for seg, rate, x in iter_audio(data, keep):
            progress(1)
            try:
                if isinstance(x, PunctkitError):
                    raise x
                try:
                    feats = compute_features(x, rate, cfg)
                except PunctkitError as e:
                    raise PunctkitError(f"{_utt_loc(data, seg)}: {e}") from None
            except PunctkitError as e:
                if not skip_bad:
                    raise
                summary.bad.append(seg.uttid)
                log(f"skipped: {e}")
                continue
            writer.write(seg.uttid, feats)
            n_lines.append(f"{seg.uttid} {len(feats)}")
            summary.utterances += 1
            summary.frames += len(feats)
            summary.seconds += len(x) / rate
    write_lines(u2n, n_lines)
    summary.scp_files.append(scp)
    return summary


def _utt_loc(data: Path, seg: Segment) -> str:
    return where(data / "segments", seg.line, seg.uttid) if seg.line else where(data / "wav.scp", None, seg.uttid)


def write_info(featdir: Path, cfg: FeatureConfig, subsample: int) -> None:
    """`FEATDIR/feats.info`: what the features are and the subsampling to apply when loading."""
    with atomic_write(featdir / "feats.info") as f:
        f.write(f"kind {cfg.kind}\ndim {cfg.dim}\nframe_shift {cfg.frame_shift:g}\n"
                f"sample_rate {cfg.sample_rate:g}\nsubsample {subsample}\n")


def read_info(data: str | Path) -> dict[str, str]:
    """`feats.info` of a data (or feature) directory as a dict (empty when absent)."""
    p = Path(data) / "feats.info"
    return dict(read_table(p, check_sorted=False)) if p.is_file() else {}


def info_number(data: str | Path, key: str, default: float, integer: bool = False,
                info: dict[str, str] | None = None) -> float:
    """A positive number of DATA/feats.info (`info`: that file already read; `default` when it has
    none); a one-line error naming the file."""
    value = (read_info(data) if info is None else info).get(key)
    if value is None:
        return default
    return positive_number(value, f"{Path(data) / 'feats.info'}", key, integer)


def merge_jobs(data: str | Path, featdir: str | Path, nj: int) -> int:
    """Join the jobs' scp and utt2num_frames into DATA/feats.scp and DATA/utt2num_frames (atomically).

    FEATDIR/feats.info (written by every job) says the kind and goes to DATA/feats.info.
    """
    d, fd = Path(data), Path(featdir)
    if not (fd / "feats.info").is_file():
        raise PunctkitError(f"{fd / 'feats.info'}: missing (no extract-feats job has finished in {fd})")
    kind = read_info(fd).get("kind", "fbank_pitch")

    def part(j: int) -> tuple[Path, Path]:  # (scp, utt2num_frames); one part may be an unsplit run's
        _, s, n = job_names(fd, kind, j)
        return (s, n) if nj > 1 or s.is_file() else job_names(fd, kind, None)[1:]

    scp, u2n = [], []
    for s, n in finished_parts(nj, part):
        scp += [f"{k} {v}" for k, v in read_table(s, check_sorted=False).items()]
        u2n += [f"{k} {v}" for k, v in read_table(n, check_sorted=False).items()]
    if not scp:
        raise PunctkitError(f"{fd}: no utterance has features (all skipped? see {fd / 'log'})")
    info = (fd / "feats.info").read_text(encoding="utf-8").splitlines()
    with output_dir(d, DATA_OUTPUTS, add=True) as out:  # the Kaldi way: DATA's other files stay
        out.write_lines("feats.scp", sorted(scp))
        out.write_lines("utt2num_frames", sorted(u2n))
        out.write_lines("feats.info", info)
    return len(scp)


def extract_feats(data: str | Path, featdir: str | Path, fbank_conf: str | Path | None = None,
                  pitch_conf: str | Path | None = None, kind: str = "fbank_pitch", nj: int = 1,
                  job: int | None = None, subsample: int = 3, skip_bad: bool = False,
                  merge_only: bool = False, show_progress: bool = True, overwrite: bool = False) -> ExtractSummary:
    """Features of every utterance of `data` into `featdir` (Kaldi's make_fbank_pitch.sh).

    `job=J` computes only part J of `nj` (for a cluster launcher; merge with
    `merge_only=True` afterwards); otherwise all parts run here and DATA/feats.scp,
    DATA/utt2num_frames and DATA/feats.info are written at the end. A bad
    utterance stops everything unless `skip_bad`, which logs it and goes on.
    DATA gains (or has replaced) only its feats.scp, utt2num_frames and feats.info;
    FEATDIR may hold only feature files unless `overwrite` (other files are kept).
    """
    from punctkit.progress import progress

    d, fdir = Path(data), Path(featdir)
    if not (d / "wav.scp").is_file():
        raise PunctkitError(f"{d}: no wav.scp (not an audio data directory?)")
    if subsample < 1:
        raise PunctkitError(f"--subsample must be at least 1, got {subsample}")
    check_jobs(nj, job)
    if merge_only:
        return ExtractSummary(utterances=merge_jobs(d, fdir, nj))
    cfg = FeatureConfig.from_files(kind, fbank_conf, pitch_conf)
    inputs = [f for f in d.glob("*") if f.is_file() and f.name not in DATA_OUTPUTS]
    check_output_dir(fdir, FEATDIR_FILES, overwrite=overwrite, inputs=inputs)

    parts = split_parts([s.uttid for s in data_segments(d)], nj)
    jobs = jobs_to_run(nj, job)
    (fdir / "log").mkdir(parents=True, exist_ok=True)
    write_info(fdir, cfg, subsample)  # the same from every job
    total = ExtractSummary()
    bar = progress(total=sum(len(parts[j - 1]) for j in jobs), desc="extract-feats", unit="utt",
                   show=show_progress)
    try:
        for j in jobs:
            names = job_names(fdir, kind, j if (nj > 1 or job is not None) else None)
            with open(part_path(fdir / "log" / f"make_{kind}", j, ".log"), "w", encoding="utf-8") as logf:
                def log(msg: str) -> None:
                    logf.write(msg + "\n")
                    bar.write(f"extract-feats: {msg}")

                s = _write_job(d, cfg, set(parts[j - 1]), names, skip_bad, log, bar.update)
                logf.write(f"job {j}/{nj}: {s.utterances} utterances, {s.frames} frames, {s.seconds:.1f} s, "
                           f"{len(s.bad)} skipped\n")
            total.utterances += s.utterances
            total.frames += s.frames
            total.seconds += s.seconds
            total.bad += s.bad
            total.scp_files += s.scp_files
    finally:
        bar.close()
    if job is None:
        merge_jobs(d, fdir, nj)
    return total
