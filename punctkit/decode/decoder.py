"""Decode data directories with a trained model directory (`punctkit decode`).

A model dir (written by `punctkit train`) holds `config.yaml` (with its
`resolved:` section), `frontend/`, and checkpoints (`model.avg.pt`,
`model.best.pt`, `checkpoints/epoch_N.pt`). Streams are decoded in overlapping
windows (decode/windows.py); taggers take the arg-max per word, encoder-decoders
(`model.seq2seq`) run the beam search of decode/search.py. Every input word
gets exactly one label and the words come back unchanged, in order.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from punctkit.batch import audio_extra, collate, wants_audio
from punctkit.data.labels import cased_words, get_inventory
from punctkit.data.datadir import check_data_dir_output, read_data_dir, write_data_dir
from punctkit.data.formats import FORMATS, write
from punctkit.data.probs import PROBS_FILE, format_probs, write_probs
from punctkit.data.streams import Stream, WindowDataset, bucket_batches, make_streams
from punctkit.data.utterance import Utterance
from punctkit.decode.options import OPTIONS_FILE, options_lines, read_decode_config, resolve, write_options
from punctkit.decode.search import beam_search_rows, greedy_rows
from punctkit.decode.windows import Hyps, Predicted, decode_windows_rows, tagger_predicted
from punctkit.expdir import load_model, pick_device, read_model_config
from punctkit.files import PunctkitError, atomic_write, check_not_input
from punctkit.models.base import PunctModel
from punctkit.progress import progress
from punctkit.text.frontend import Frontend, load_frontend


# ------------------------------------------------------------------ search over windows

@torch.no_grad()
def predict(model: PunctModel, dataset: WindowDataset, batch_size: int = 32, device: torch.device | str = "cpu",
            beam: int = 1, nbest: int = 1, pad_id: int = 0, show: bool = False) -> list[Predicted]:
    """n-best label ids for every window of `dataset` and the 1-best's per-word distributions:
    taggers' arg-max and softmax (decode/windows.py: tagger_predicted), encoder-decoders' greedy
    search (beam <= 1) or beam search with their step distributions (decode/search.py); nbest > 1
    always runs the beam search. `show`: a progress bar over the batches."""
    was_training = model.training
    model.eval()
    lengths = [dataset.n_words(i) for i in range(len(dataset))]
    out: list[Predicted] = [([], np.zeros((0, 0))) for _ in range(len(dataset))]
    for idx in progress(bucket_batches(lengths, batch_size, shuffle=False), show=show, desc="decode",
                        unit="batch", leave=False):
        batch = {k: v.to(device) for k, v in collate([dataset[i] for i in idx], pad_id).items()}
        n_words = batch["word_mask"].sum(1).tolist()
        res: list[Predicted]
        if nbest > 1 or (model.seq2seq and beam > 1):
            res = beam_search_rows(model, batch, beam=max(beam, nbest), nbest=nbest)
        elif model.seq2seq:
            pred, rows = greedy_rows(model, batch)
            ids, rows_np = pred.tolist(), rows.double().cpu().numpy()
            res = [([(ids[b][: n_words[b]], 0.0)], rows_np[b, : n_words[b]]) for b in range(len(idx))]
        else:  # a tagger's greedy decoding is its per-word arg-max
            res = tagger_predicted(model(batch).float().cpu().numpy(), n_words)
        for b, i in enumerate(idx):
            if any(len(h) != n_words[b] for h, _ in res[b][0]):
                raise PunctkitError(f"model {type(model).__name__} returned a label count different from "
                                    f"the {n_words[b]} words of a window")
            out[i] = (list(res[b][0]), res[b][1])
    model.train(was_training)
    return out


def decode_streams(model: PunctModel, frontend: Frontend, streams: list[Stream], window: int = 100,
                   step: int = 50, batch_size: int = 32, device: torch.device | str = "cpu", beam: int = 1,
                   nbest: int = 1, extra: Callable | None = None) -> list[Hyps]:
    """n-best label ids per stream from `model`, each word's label from its most central window
    (decode/windows.py: decode_windows)."""
    return [h for h, _ in decode_streams_rows(model, frontend, streams, window, step, batch_size, device, beam,
                                              nbest, extra)]


def decode_streams_rows(model: PunctModel, frontend: Frontend, streams: list[Stream], window: int = 100,
                        step: int = 50, batch_size: int = 32, device: torch.device | str = "cpu", beam: int = 1,
                        nbest: int = 1, extra: Callable | None = None, show: bool = False) -> list[Predicted]:
    """`decode_streams` with each stream's per-word label distributions (words x labels) of its 1-best
    (`show`: a progress bar)."""
    return decode_windows_rows(streams, frontend, window, step,
                               lambda ds: predict(model, ds, batch_size, device, beam, nbest, frontend.pad_id, show),
                               extra)


def split_utterances(streams: list[Stream]) -> list[Stream]:
    """One stream per utterance (for n-best lists, which are per utterance)."""
    out = []
    for s in streams:
        for uttid, a, b in s.utt_spans():
            out.append(Stream(uttid, [uttid], [0], s.words[a:b], s.labels[a:b], dict(s.meta)))
    return out


# ------------------------------------------------------------------ data dir in, labelled data out

def decode_dir(model_dir: str | Path | list[str | Path], data_dir: str | Path, out: str | Path,
               fmt: str | None = None, beam: int | None = None, nbest: int | None = None,
               batch_size: int | None = None, checkpoint: str | None = None, ngpu: int = 0,
               window: int | None = None, step: int | None = None, log: Callable[[str], None] | None = None,
               overwrite: bool = False, config: str | Path | None = None, probs: bool = False,
               weights: str | None = None) -> dict[str, Any]:
    """Label every word of `data_dir` and write `out` in the resolved format (+ an `nbest` file
    when nbest > 1, + a `probs` file with `probs`: each word's label distribution, data/probs.py)
    and the resolved options (`decode_options.yaml` in a data-directory `out`,
    else `OUT.decode_options.yaml`).

    The keyword options are the command line (None: unset), `config` a decoding config file;
    decode/options.py resolves them with the model's `decode:` section. A data-directory `out`
    is written by `write_data_dir` (`overwrite` there); no output may be `data_dir`, one of its
    files or a file of `model_dir`.

    Several model dirs decode as an ensemble (decode/combine.py): each with its own options,
    frontend and windows, one after the other; each word's label is the arg-max of their
    distributions averaged with `weights` (`0.6,0.4`; default equal). The options file records
    the first model's options; n-best lists need a single model.
    """
    dirs = list(model_dir) if isinstance(model_dir, (list, tuple)) else [model_dir]
    given = {"format": fmt, "beam": beam, "nbest": nbest, "batch_size": batch_size, "checkpoint": checkpoint,
             "window": window, "step": step}
    confs = [read_model_config(d) for d in dirs]
    all_opts = [resolve(given, c["decode"], read_decode_config(config), str(config), log=log or _stderr)
                for c in confs]
    opts = all_opts[0]
    if opts.format not in FORMATS:
        raise PunctkitError(f"unknown output format '{opts.format}' (known: {', '.join(FORMATS)})")
    if len(dirs) > 1 and opts.nbest > 1:
        raise PunctkitError(f"--nbest {opts.nbest}: n-best lists come from one model's search, not an ensemble "
                            f"of {len(dirs)}")
    if weights is not None or len(dirs) > 1:
        from punctkit.decode.combine import check_inventories, parse_weights

        shares = parse_weights(weights, len(dirs))
        check_inventories([str(d) for d in dirs], [get_inventory(c["resolved"]["inventory"]) for c in confs])
    device = pick_device(ngpu)
    if confs[0]["train"].get("threads"):
        torch.set_num_threads(int(confs[0]["train"]["threads"]))
    inputs = [data_dir, *dirs, *(f for d in (data_dir, *dirs) for f in Path(d).glob("*") if f.is_file())]
    check_not_input(out, inputs)
    if opts.format == "datadir":
        check_data_dir_output(out, overwrite, inputs)
    else:
        check_not_input(f"{out}.{OPTIONS_FILE}", inputs)
        if opts.nbest > 1:
            check_not_input(f"{out}.nbest", inputs)
        if probs:
            check_not_input(f"{out}.{PROBS_FILE}", inputs)
    dd = read_data_dir(data_dir, need_labels=False)
    inv = get_inventory(confs[0]["resolved"]["inventory"])
    if any(u.labels for u in dd.utterances) and dd.inventory.name != inv.name:
        raise PunctkitError(f"{data_dir}: label inventory {dd.inventory.name} differs from the model's "
                            f"{inv.name} ({Path(dirs[0]) / 'config.yaml'})")
    streams = make_streams(dd, inv)
    nbest = opts.nbest
    units = split_utterances(streams) if nbest > 1 else streams
    each = [_decode_units(d, c, o, units, data_dir, device) for d, c, o in zip(dirs, confs, all_opts)]
    if len(each) == 1:
        hyps = each[0]
    else:
        from punctkit.decode.combine import combine

        hyps = []
        for k in range(len(units)):
            avg = combine([member[k][1] for member in each], shares)
            hyps.append(([(avg.argmax(1).tolist(), 0.0)], avg))
    utts, nbest_lines, rows = [], [], {}
    lexicon = load_frontend(Path(dirs[0]) / "frontend").case_lexicon if inv.true_case else None
    for s, (h, dist) in zip(units, hyps):
        best = h[0][0]
        for uttid, a, b in s.utt_spans():
            labels = [inv.labels[i] for i in best[a:b]]
            utts.append(Utterance(uttid, cased_words(s.words[a:b], labels, inv, lexicon), labels))
            rows[uttid] = dist[a:b]
        if nbest > 1:
            nbest_lines += [f"{s.key} {r} {score:.4f} {' '.join(inv.labels[i] for i in ids)}"
                            for r, (ids, score) in enumerate(h, 1)]
    if opts.format == "datadir":
        files = {OPTIONS_FILE: options_lines(opts), **({"nbest": nbest_lines} if nbest > 1 else {})}
        if probs:  # sorted as write_data_dir sorts text and labels
            files[PROBS_FILE] = [format_probs(u, rows[u]) for u in sorted(rows)]
        write_data_dir(out, utts, inv, dd.utt2spk, extra=files, overwrite=overwrite, inputs=inputs)
    else:
        write(sorted(utts, key=lambda u: u.uttid), out, opts.format, inv, inputs=inputs)
        write_options(opts, f"{out}.{OPTIONS_FILE}")
        if nbest > 1:
            with atomic_write(f"{out}.nbest") as f:
                f.writelines(ln + "\n" for ln in nbest_lines)
        if probs:
            write_probs(f"{out}.{PROBS_FILE}", ((u, rows[u]) for u in sorted(rows)))
    n_words = sum(len(u.words) for u in utts)
    if log:
        log(f"decode: {len(utts)} utterances, {n_words} words -> {out}")
    return {"utterances": len(utts), "words": n_words, "out": str(out), "options": opts}


def _decode_units(model_dir: str | Path, conf: dict[str, Any], opts: Any, units: list[Stream],
                  data_dir: str | Path, device: torch.device) -> list[Predicted]:
    """One model dir's n-best and 1-best distributions of every unit (the model is freed after)."""
    model, frontend, _, conf = load_model(model_dir, opts.checkpoint, device, conf)
    words = [w for s in units for w in s.words]
    if frontend.unk_rate(words) == 1.0:
        raise PunctkitError(f"{data_dir}: none of its {len(words)} words is in the vocabulary of {model_dir}")
    extra = None
    if wants_audio(conf, model.needs):  # the config's resolved `audio.use`, else the model's needs
        extra = audio_extra(data_dir)
    return decode_streams_rows(model, frontend, units, opts.window, opts.step, opts.batch_size, device, opts.beam,
                               opts.nbest, extra=extra, show=True)


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def validation(trained: dict[str, Any], frontend: Frontend, streams: list[Stream], device: torch.device,
               extra: Callable | None = None,
               log: Callable[[str], None] | None = None) -> tuple[Callable[[PunctModel], list[list[int]]], dict]:
    """What training validates with: a function from a model to the best label ids of each dev
    stream, decoded under the options resolved from the training config's `decode:` section
    (the same options `punctkit decode` starts from), and that section resolved."""
    opts = resolve(trained=trained, log=log)

    def run(model: PunctModel) -> list[list[int]]:
        hyps = decode_streams(model, frontend, streams, opts.window, opts.step, opts.batch_size, device, opts.beam,
                              extra=extra)
        return [h[0][0] for h in hyps]

    return run, opts.search()
