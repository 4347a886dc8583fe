"""Decoding options: one dataclass, resolved once (ESPnet's `inference_config` + command line).

Precedence, highest first:
1. the command line (every option defaults to None = unset);
2. what training fixed: the window the model was trained and validated at (its frontend is
   always the model's own). A decoding config cannot change it silently: its window is
   ignored with a log line; only an explicit command-line option can, and that is logged;
3. the decoding config file (beam, step, batch size, n-best, format, checkpoint);
4. the model's own `decode:` section (what training validated with), then the defaults below.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Callable, Mapping

import yaml

from punctkit.decode.joint import THRESHOLD
from punctkit.files import PunctkitError, atomic_write, read_yaml_mapping

OPTIONS_FILE = "decode_options.yaml"  # written next to a decoding output (pack's card reads it)
FIXED_BY_TRAINING = ("window",)
# what the resolved options of a run record (and what a model's `decode:` section holds)
SEARCH_KEYS = ("window", "step", "batch_size", "beam", "stream_end", "overlap", "capital_threshold", "capital_weight")
STREAM_ENDS = ("sentence", "open")  # what the end of a stream is (decode/stream_end.py)
OVERLAPS = ("central", "average")  # how a word seen by several windows takes its prediction (decode/windows.py)


@dataclass(frozen=True)
class DecodeOptions:
    """How a model decodes: windows of `window` words every `step` words, `batch_size` windows
    at once, a `beam` for encoder-decoders (taggers take the arg-max), `nbest` lists, the
    output `format` and the `checkpoint` (None: model.avg.pt, model.best.pt, the last epoch).
    `stream_end`: `sentence` (a stream's last word ends a sentence: a document, a talk, a
    recording) or `open` (streams are chunks cut anywhere, as Faber's rechunked test sets: the
    model's own label stays). `overlap`: a word seen by several windows takes the prediction of
    the most `central` one, or their `average` (decode/windows.py; one-best). `capital_threshold`
    and `capital_weight`: the joint decision's rule for a capital inside a sentence (decode/joint.py,
    rule 2): refused where the training text writes the word with one inside sentences less often
    than the threshold (0: never refused), or, with a weight above 0, weighed instead as weight x
    the log of that share."""

    window: int = 100
    step: int = 50
    batch_size: int = 32
    beam: int = 6
    nbest: int = 1
    format: str = "datadir"
    checkpoint: str | None = None
    stream_end: str = "sentence"
    joint: bool = True  # a case-aware model's marks and case decided together (decode/joint.py)
    overlap: str = "central"  # one of OVERLAPS (decode/windows.py)
    capital_threshold: float = THRESHOLD  # rule 2 of decode/joint.py as a threshold on the prior's share
    capital_weight: float = 0.0  # > 0: rule 2 as a cost, weight x log share, instead of the threshold

    @property
    def closes_streams(self) -> bool:
        """Whether a stream's last word takes a sentence-final mark (decode/stream_end.py)."""
        return self.stream_end == "sentence"

    def search(self) -> dict[str, Any]:
        """The settings that decide the labels (a model's `decode:` section)."""
        return {k: getattr(self, k) for k in SEARCH_KEYS}


NAMES = tuple(f.name for f in fields(DecodeOptions))


def read_decode_config(path: str | Path | None) -> dict[str, Any]:
    """A decode YAML (`beam: 6`, `step: 25`, ...; see NAMES); {} when `path` is None. Read by
    `read_yaml_mapping`; keys other than NAMES are a one-line error (values: `resolve` checks them)."""
    if path is None:
        return {}
    p = Path(path)
    conf = read_yaml_mapping(p, "decode config", f"a mapping of decode options ({', '.join(NAMES)})")
    bad = [k for k in conf if k not in NAMES]
    if bad:
        raise PunctkitError(f"{p}: unknown decode option(s) {', '.join(map(str, bad))} (known: {', '.join(NAMES)})")
    return conf


def resolve(command_line: Mapping[str, Any] | None = None, trained: Mapping[str, Any] | None = None,
            config: Mapping[str, Any] | None = None, config_name: str = "the decoding config",
            log: Callable[[str], None] | None = None) -> DecodeOptions:
    """The one place decoding options are decided (see the module's docstring for the order).

    `command_line`: options given on the command line (None values are unset); `trained`: the
    model's `decode:` section (config.yaml); `config`: a decoding config file's options."""
    cli = {k: v for k, v in (command_line or {}).items() if v is not None}
    trained, config = dict(trained or {}), dict(config or {})
    unknown = [k for k in (*cli, *trained) if k not in NAMES]
    if unknown:
        raise PunctkitError(f"unknown decode option(s) {', '.join(map(str, unknown))} (known: {', '.join(NAMES)})")
    say = log or (lambda _msg: None)
    for k in FIXED_BY_TRAINING:
        if k not in trained:
            continue
        if k in config and config[k] != trained[k] and k not in cli:
            say(f"decode: {config_name} sets {k} {config[k]}, but the model was trained at {trained[k]}: "
                f"keeping {trained[k]} (give --{k} {config[k]} to decode at {config[k]})")
        if k in cli and cli[k] != trained[k]:
            say(f"decode: {k} {cli[k]} from the command line (the model was trained at {trained[k]})")
        config.pop(k, None)
    values = {**{k: v for k, v in trained.items() if k in NAMES}, **config, **cli}
    opts = DecodeOptions(**values)
    check(opts, given=tuple(cli))
    return opts


# options whose values are checked alone (no other option or model makes them right or wrong)
VALUE_KEYS = ("stream_end", "overlap", "capital_threshold", "capital_weight")


def check_given(command_line: Mapping[str, Any] | None) -> None:
    """The command line's values of VALUE_KEYS checked before any model is read: a bad one is the same
    one-line error `resolve` gives, without the wait for a model to load."""
    given = {k: v for k in VALUE_KEYS if (v := (command_line or {}).get(k)) is not None}
    check(DecodeOptions(**given), given=tuple(given))


def check(opts: DecodeOptions, given: tuple[str, ...] = ()) -> None:
    """One-line errors for values no decoding can use (named as options when in `given`)."""
    for k in ("window", "step", "batch_size", "beam", "nbest"):
        v = getattr(opts, k)
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise PunctkitError(f"decode option {k}: expected a positive integer, got {v!r}")
    if opts.step > opts.window:
        name = "--step" if "step" in given else "decode step"
        raise PunctkitError(f"{name} {opts.step}: must be between 1 and the window ({opts.window} words)")
    if not isinstance(opts.format, str):
        raise PunctkitError(f"decode option format: expected a format's name, got {opts.format!r}")
    if opts.stream_end not in STREAM_ENDS:
        name = "--stream-end" if "stream_end" in given else "decode option stream_end"
        raise PunctkitError(f"{name} {opts.stream_end!r}: expected one of {', '.join(STREAM_ENDS)}")
    if opts.overlap not in OVERLAPS:
        name = "--overlap" if "overlap" in given else "decode option overlap"
        raise PunctkitError(f"{name} {opts.overlap!r}: expected one of {', '.join(OVERLAPS)}")
    if opts.overlap == "average" and opts.nbest > 1:
        raise PunctkitError(f"--nbest {opts.nbest} with overlap average: n-best lists come from the most central "
                            f"windows; decode them with --overlap central")
    if not isinstance(opts.joint, bool):
        raise PunctkitError(f"decode option joint: expected true or false, got {opts.joint!r}")
    for k, high in (("capital_threshold", 1.0), ("capital_weight", 10.0)):
        v = getattr(opts, k)
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not 0 <= v <= high:
            name = f"--{k.replace('_', '-')}" if k in given else f"decode option {k}"
            raise PunctkitError(f"{name} {v!r}: expected a number from 0 to {high:g}")
    if opts.checkpoint is not None and not isinstance(opts.checkpoint, str):
        raise PunctkitError(f"decode option checkpoint: expected a file name or null, got {opts.checkpoint!r}")


def options_lines(opts: DecodeOptions) -> list[str]:
    """The options a decoding ran with, as the lines of a YAML file."""
    return yaml.safe_dump(asdict(opts), sort_keys=False).splitlines()


def write_options(opts: DecodeOptions, path: str | Path) -> None:
    """Record the options a decoding ran with (YAML; the file appears when complete)."""
    with atomic_write(path) as f:
        f.writelines(ln + "\n" for ln in options_lines(opts))


def read_options(path: str | Path) -> DecodeOptions:
    """Options recorded by `write_options`, checked as `resolve` checks them (one-line errors)."""
    p = Path(path)
    data = read_yaml_mapping(p, "decode options", "the options punctkit decode writes (window: ..., step: ...)")
    opts = DecodeOptions(**{k: v for k, v in data.items() if k in NAMES})
    try:
        check(opts)
    except PunctkitError as e:
        raise PunctkitError(f"{p}: {e}") from None
    return opts
