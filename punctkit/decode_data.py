"""`punctkit decode`: a data directory labelled by the inference engine built from one or more
trained model directories or packed models (an ensemble), written as a data directory or a corpus file.

A model dir (written by `punctkit train`) holds `config.yaml` (with its `resolved:` section),
`frontend/`, and checkpoints (`model.avg.pt`, `model.best.pt`, `checkpoints/epoch_N.pt`).
A package (`punctkit pack`, a file) decodes as `punctuate` runs it (ONNX where it has a graph,
int8 where packed so): a recipe scores, or a teacher labels, with exactly what users run.
The engine (punctkit/infer/engine.py: built by its one loader, `read_sources` and `build_engine`) is the one
`punctuate`, `serve` and `--stream` run from a package, so what a recipe scores is what users run.
"""
from __future__ import annotations

import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from punctkit.data.datadir import check_data_dir_output, read_data_dir, write_data_dir
from punctkit.data.formats import FORMATS, write
from punctkit.data.labels import SENTENCE_END, LabelSet, cased_words, get_inventory, mark_of
from punctkit.data.probs import PROBS_FILE, format_probs, write_probs
from punctkit.data.streams import make_streams, split_utterances
from punctkit.data.timing import read_timing
from punctkit.data.utterance import Utterance
from punctkit.decode.combine import check_inventories, parse_weights
from punctkit.decode.options import (
    OPTIONS_FILE,
    DecodeOptions,
    check_given,
    options_lines,
    read_decode_config,
    resolve,
    write_options,
)
from punctkit.files import PunctkitError, atomic_write, check_not_input, check_output_file
from punctkit.infer.engine import Source, build_engine, read_sources
from punctkit.infer.scorers import Ensemble
from punctkit.package import Package
from punctkit.progress import WordProgress


def decode_dir(model_dir: str | Path | list[str | Path], data_dir: str | Path, out: str | Path, *,
               fmt: str | None = None, beam: int | None = None, nbest: int | None = None,
               batch_size: int | None = None, checkpoint: str | None = None, ngpu: int = 0,
               window: int | None = None, step: int | None = None, log: Callable[[str], None] | None = None,
               overwrite: bool = False, config: str | Path | None = None, probs: bool = False,
               weights: str | None = None, stream_end: str | None = None,
               threads: int | None = None, overlap: str | None = None, capital_threshold: float | None = None,
               capital_weight: float | None = None, quiet: bool = False) -> dict[str, Any]:
    """Label every word of `data_dir` and write `out` in the resolved format (+ an `nbest` file
    when nbest > 1, + a `probs` file with `probs`: each word's label distribution, data/probs.py)
    and the resolved options (`decode_options.yaml` in a data-directory `out`,
    else `OUT.decode_options.yaml`).

    The keyword options are the command line (None: unset), `config` a decoding config file;
    decode/options.py resolves them with the model's `decode:` section. A data-directory `out`
    is written by `write_data_dir` (`overwrite` there); no output may be `data_dir`, one of its
    files or a file of `model_dir`.

    Several model dirs decode as an ensemble (infer/scorers.py, members in turn): each with its own
    options, frontend and windows; each word's label is the arg-max of their distributions averaged with
    `weights` (`0.6,0.4`; default equal). The options file records the first model's options; n-best
    lists need a single model; an ensemble package is a one-line error (decode its members).

    A model that is a file is a package (`punctkit pack`): its packed config and decoding options
    (under the command line's), its backend as `punctuate` picks it; --checkpoint and n-best lists
    need an experiment dir. `threads`: CPU threads (None: the first model's training threads).
    `log` gets the notes on the options and the summary line; `quiet`: no summary and no progress bar
    (one over the words, on standard error while it is a terminal: progress.WordProgress).
    """
    dirs = list(model_dir) if isinstance(model_dir, (list, tuple)) else [model_dir]
    given = {"format": fmt, "beam": beam, "nbest": nbest, "batch_size": batch_size, "checkpoint": checkpoint,
             "window": window, "step": step, "stream_end": stream_end, "overlap": overlap,
             "capital_threshold": capital_threshold, "capital_weight": capital_weight}
    check_given(given)  # a bad value is an error before any model (or torch) loads
    sources = [_checked(s, checkpoint, nbest) for s in read_sources(dirs, dirs=True, ensembles=(
        "decode with its members' packages or experiment dirs (several MODEL_DIRS are an ensemble)"))[0]]
    confs = [s.conf or {} for s in sources]
    names = [s.name for s in sources]
    all_opts = [resolve(given, c["decode"], read_decode_config(config), str(config), log=log or _stderr)
                for c in confs]
    opts = all_opts[0]
    if opts.format not in FORMATS:
        raise PunctkitError(f"unknown output format '{opts.format}' (known: {', '.join(FORMATS)})")
    if len(sources) > 1 and opts.nbest > 1:
        raise PunctkitError(f"--nbest {opts.nbest}: n-best lists come from one model's search, not an ensemble "
                            f"of {len(sources)}")
    parse_weights(weights, len(sources))  # a bad --weights is an error before any model loads
    if weights is not None or len(sources) > 1:
        check_inventories(names, [get_inventory(c["resolved"]["inventory"]) for c in confs])
    inputs = [data_dir, *dirs, *(f for d in (data_dir, *dirs) for f in Path(d).glob("*") if f.is_file())]
    _check_outputs(out, opts, probs=probs, overwrite=overwrite, inputs=inputs)
    dd = read_data_dir(data_dir, need_labels=False)
    inv = get_inventory(confs[0]["resolved"]["inventory"])
    if any(u.labels for u in dd.utterances) and dd.inventory.name != inv.name:
        raise PunctkitError(f"{data_dir}: label inventory {dd.inventory.name} differs from the model's "
                            f"{inv.name} ({Path(dirs[0]) / 'config.yaml'})")
    timing = read_timing(dd)  # segments: a recording's utterances one stream; ctm: its words' times
    streams = make_streams(dd, inv, timing if timing.known else None)
    nbest = opts.nbest
    units = split_utterances(streams) if nbest > 1 else streams
    if threads is None:  # the first model's training threads, if any
        threads = int(confs[0].get("train", {}).get("threads") or 0)
    engine = build_engine(sources, weights if len(sources) > 1 else None, ngpu=ngpu, threads=threads,
                          options=all_opts, run="in_turn")
    members = engine.scorer.members if isinstance(engine.scorer, Ensemble) else [engine.scorer]
    words = [w for s in units for w in s.words]
    for name, m in zip(names, members):
        if m.frontend.unk_rate(words) == 1.0:
            raise PunctkitError(f"{data_dir}: none of its {len(words)} words is in the vocabulary of {name}")
    extra = audio_inputs(data_dir) if any(m.needs_audio for m in members) else None
    utts, nbest_lines, rows = [], [], {}
    lexicon = engine.frontend.case_lexicon if inv.true_case else None
    opens = {s.uttids[0] for s in units}  # a stream's first utterance begins a sentence
    ended = True  # the utterance before (in order, a stream's after one another) ended one
    started = time.monotonic()
    with WordProgress("decode", total=len(words), show=not quiet) as bar:
        for done in engine.label(units, probs=probs, extra=extra, nbest=nbest):  # the one labelling call
            u = done.utt
            bar.update(len(u.words))
            shown = cased_words(u.words, done.labels, inv, lexicon, start=u.uttid in opens or ended)
            ended = bool(done.labels) and mark_of(done.labels[-1]) in SENTENCE_END
            utts.append(Utterance(u.uttid, shown, done.labels))
            if probs:
                rows[u.uttid] = done.rows
            nbest_lines += [f"{u.uttid} {r} {h.score:.4f} {' '.join(inv.labels[i] for i in h.ids)}"
                            for r, h in enumerate(done.hyps or [], 1)]
    _write_outputs(out, opts, utts, inv, dd.utt2spk, nbest_lines, rows if probs else None,
                   overwrite=overwrite, inputs=inputs)
    n_words = sum(len(u.words) for u in utts)
    seconds = time.monotonic() - started
    if log and not quiet:
        rate = n_words / seconds if seconds > 0 else 0.0
        log(f"decode: {len(utts):,} utterances, {n_words:,} words in {seconds:.2f} s ({rate:,.0f} words/s "
            f"labelling and writing, the models loaded) -> {out}")
    return {"utterances": len(utts), "words": n_words, "out": str(out), "options": opts}


def _check_outputs(out: str | Path, opts: DecodeOptions, *, probs: bool, overwrite: bool, inputs: list[Any]) -> None:
    """Before any model loads: a data-directory `out` may be (re)written, or no output file (`out` and the
    options, n-best and probs files beside it) replaces a file punctkit did not write, without `overwrite`."""
    if opts.format == "datadir":
        check_not_input(out, inputs)
        check_data_dir_output(out, overwrite, inputs)
    else:  # files: none replaces a file punctkit did not write, without --overwrite
        for path in [out, f"{out}.{OPTIONS_FILE}"] + [f"{out}.nbest"] * (opts.nbest > 1) \
                + [f"{out}.{PROBS_FILE}"] * probs:
            check_output_file(path, inputs, overwrite=overwrite)


def _write_outputs(out: str | Path, opts: DecodeOptions, utts: list[Utterance], inv: LabelSet,
                   utt2spk: dict[str, str], nbest_lines: list[str], rows: dict[str, Any] | None, *, overwrite: bool,
                   inputs: list[Any]) -> None:
    """Write the labelled `utts` to `out` in `opts.format`, with the resolved options, the n-best lines (when
    nbest > 1) and each word's distribution (`rows`, when given): files of a data directory, else files beside
    `out`."""
    nbest = opts.nbest
    if opts.format == "datadir":
        files = {OPTIONS_FILE: options_lines(opts), **({"nbest": nbest_lines} if nbest > 1 else {})}
        if rows is not None:  # sorted as write_data_dir sorts text and labels
            files[PROBS_FILE] = [format_probs(u, rows[u]) for u in sorted(rows)]
        write_data_dir(out, utts, inv, utt2spk, extra=files, overwrite=overwrite, inputs=inputs)
    else:
        write(sorted(utts, key=lambda u: u.uttid), out, opts.format, inv, inputs=inputs)
        write_options(opts, f"{out}.{OPTIONS_FILE}")
        if nbest > 1:
            with atomic_write(f"{out}.nbest") as f:
                f.writelines(ln + "\n" for ln in nbest_lines)
        if rows is not None:
            write_probs(f"{out}.{PROBS_FILE}", ((u, rows[u]) for u in sorted(rows)))


def _checked(src: Source, checkpoint: str | None, nbest: int | None) -> Source:
    """A model to decode with, its config read: one-line errors for a package given what only an experiment
    dir has (--checkpoint, n-best lists)."""
    if not isinstance(src.model, Package):
        return replace(src, conf=experiment_config(src.model))
    if checkpoint is not None:
        raise PunctkitError(f"--checkpoint {checkpoint}: {src.name} is a package (its weights are fixed): give the "
                            f"experiment dir to decode another checkpoint")
    if nbest is not None and nbest > 1:
        raise PunctkitError(f"--nbest {nbest}: n-best lists come from an experiment dir's search; {src.name} is a "
                            f"package")
    return replace(src, conf=src.model.conf)


def experiment_config(exp: str | Path) -> dict[str, Any]:
    """An experiment dir's config (punctkit.expdir, which loads torch: only an experiment needs it)."""
    from punctkit.expdir import read_model_config

    return read_model_config(exp)


def audio_inputs(data_dir: str | Path) -> Any:
    """The acoustic inputs of a data dir for the audio models (punctkit.batch, which loads torch)."""
    from punctkit.batch import audio_extra

    return audio_extra(data_dir)


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)
