"""Decode data directories with a trained model directory (`punctkit decode`).

A model dir (written by `punctkit train`) holds `config.yaml` (with its
`resolved:` section), `frontend/`, and checkpoints (`model.avg.pt`,
`model.best.pt`, `checkpoints/epoch_N.pt`). Streams are decoded in overlapping
windows (decode/windows.py); taggers take the arg-max per word, encoder-decoders
(`model.seq2seq`) run the beam search of decode/search.py. Every input word
gets exactly one label and the words come back unchanged, in order.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from punctkit.data.datadir import check_data_dir_output, read_data_dir, write_data_dir
from punctkit.data.formats import FORMATS, Utterance, write
from punctkit.data.labels import LabelSet, get_inventory
from punctkit.decode.windows import Hyps, decode_windows, tagger_hyps
from punctkit.files import PunctkitError, atomic_write, check_not_input
from punctkit.models.base import PunctModel
from punctkit.models.registry import build_model
from punctkit.text.frontend import Frontend, load_frontend
from punctkit.train.checkpoint import epoch_checkpoints, load_checkpoint
from punctkit.train.config import read_model_config
from punctkit.data.streams import Stream, WindowDataset, bucket_batches, make_streams
from punctkit.train.dataset import collate



def pick_device(ngpu: int) -> torch.device:
    """cuda:0 with `ngpu >= 1` (error if there is none), else the CPU."""
    if ngpu <= 0:
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise PunctkitError(f"--ngpu {ngpu} but no CUDA device is visible")
    return torch.device("cuda", 0)


def model_env(conf: dict[str, Any]) -> dict[str, Any]:
    """The build_model keyword arguments recorded at training time (`resolved:` of config.yaml)."""
    env = dict(conf["resolved"].get("env", {}))
    shape = env.pop("embeddings_shape", None)
    env["embeddings"] = np.zeros(shape, dtype=np.float32) if shape else None  # weights come from the checkpoint
    return env


def find_checkpoint(model_dir: Path, checkpoint: str | None) -> Path:
    """`checkpoint` (a path, or a name inside the model dir), else model.avg.pt, model.best.pt, the last epoch."""
    if checkpoint:
        p = Path(checkpoint)
        return p if p.is_file() else model_dir / checkpoint
    for name in ("model.avg.pt", "model.best.pt"):
        if (model_dir / name).is_file():
            return model_dir / name
    epochs = epoch_checkpoints(model_dir / "checkpoints")
    if not epochs:
        raise PunctkitError(f"{model_dir}: no model.avg.pt, model.best.pt or checkpoints/epoch_N.pt")
    return list(epochs.values())[-1]


def load_model(model_dir: str | Path, checkpoint: str | None = None,
               device: torch.device | str = "cpu") -> tuple[PunctModel, Frontend, LabelSet, dict[str, Any]]:
    """Rebuild a trained model (eval mode, on `device`) with its frontend, inventory and config."""
    d = Path(model_dir)
    conf = read_model_config(d)
    frontend = load_frontend(d / "frontend")
    inventory = get_inventory(conf["resolved"]["inventory"])
    model = build_model(conf["model"], **model_env(conf))
    path = find_checkpoint(d, checkpoint)
    state = load_checkpoint(path)
    try:
        model.load_state_dict(state["model"])
    except RuntimeError as e:
        raise PunctkitError(f"{path}: does not match the model of {d / 'config.yaml'} "
                            f"({str(e).splitlines()[0][:100]})") from None
    return model.to(device).eval(), frontend, inventory, conf


# ------------------------------------------------------------------ search over windows

@torch.no_grad()
def predict(model: PunctModel, dataset: WindowDataset, batch_size: int = 32, device: torch.device | str = "cpu",
            beam: int = 1, nbest: int = 1, pad_id: int = 0) -> list[Hyps]:
    """n-best label ids for every window of `dataset`: taggers' arg-max, encoder-decoders' greedy
    search (beam <= 1) or beam search (decode/search.py); nbest > 1 always runs the beam search."""
    was_training = model.training
    model.eval()
    lengths = [dataset.n_words(i) for i in range(len(dataset))]
    out: list[Hyps] = [[] for _ in range(len(dataset))]
    for idx in bucket_batches(lengths, batch_size, shuffle=False):
        batch = {k: v.to(device) for k, v in collate([dataset[i] for i in idx], pad_id).items()}
        n_words = batch["word_mask"].sum(1).tolist()
        if nbest > 1 or (model.seq2seq and beam > 1):
            from punctkit.decode.search import beam_search

            res = beam_search(model, batch, beam=max(beam, nbest), nbest=nbest)
        elif model.seq2seq:
            from punctkit.decode.search import greedy

            ids = greedy(model, batch).tolist()
            res = [[(ids[b][: n_words[b]], 0.0)] for b in range(len(idx))]
        else:  # a tagger's greedy decoding is its per-word arg-max
            res = tagger_hyps(model(batch).float().cpu().numpy(), n_words)
        for b, i in enumerate(idx):
            if any(len(h) != n_words[b] for h, _ in res[b]):
                raise PunctkitError(f"model {type(model).__name__} returned a label count different from "
                                    f"the {n_words[b]} words of a window")
            out[i] = list(res[b])
    model.train(was_training)
    return out


def decode_streams(model: PunctModel, frontend: Frontend, streams: list[Stream], window: int = 100,
                   step: int = 50, batch_size: int = 32, device: torch.device | str = "cpu", beam: int = 1,
                   nbest: int = 1, extra: Callable | None = None) -> list[Hyps]:
    """n-best label ids per stream from `model`, each word's label from its most central window
    (decode/windows.py: decode_windows)."""
    return decode_windows(streams, frontend, window, step,
                          lambda ds: predict(model, ds, batch_size, device, beam, nbest, frontend.pad_id), extra)


def split_utterances(streams: list[Stream]) -> list[Stream]:
    """One stream per utterance (for n-best lists, which are per utterance)."""
    out = []
    for s in streams:
        for uttid, a, b in s.utt_spans():
            out.append(Stream(uttid, [uttid], [0], s.words[a:b], s.labels[a:b], dict(s.meta)))
    return out


# ------------------------------------------------------------------ data dir in, labelled data out

DECODE_OPTIONS = ("format", "beam", "nbest", "batch_size", "checkpoint", "window", "step")


def read_decode_config(path: str | Path | None) -> dict[str, Any]:
    """A decode YAML (`beam: 6`, `window: 100`, ...; see DECODE_OPTIONS); {} when `path` is None."""
    if path is None:
        return {}
    import yaml

    p = Path(path)
    if not p.is_file():
        raise PunctkitError(f"decode config not found: {p}")
    try:
        conf = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as e:
        raise PunctkitError(f"{p}: not valid YAML: {str(e).splitlines()[0]}") from None
    bad = [k for k in conf if k not in DECODE_OPTIONS] if isinstance(conf, dict) else ["(not a mapping)"]
    if bad:
        raise PunctkitError(f"{p}: unknown decode option(s) {', '.join(map(str, bad))} "
                            f"(known: {', '.join(DECODE_OPTIONS)})")
    return conf

def decode_dir(model_dir: str | Path, data_dir: str | Path, out: str | Path, fmt: str = "datadir",
               beam: int | None = None, nbest: int = 1, batch_size: int | None = None,
               checkpoint: str | None = None, ngpu: int = 0, window: int | None = None,
               step: int | None = None, log: Callable[[str], None] | None = None,
               overwrite: bool = False) -> dict[str, Any]:
    """Label every word of `data_dir` and write `out` in `fmt` (+ an `nbest` file when nbest > 1).

    A data-directory `out` is written by `write_data_dir` (`overwrite` there); no output
    may be `data_dir`, one of its files or a file of `model_dir`.
    """
    if fmt not in FORMATS:
        raise PunctkitError(f"unknown output format '{fmt}' (known: {', '.join(FORMATS)})")
    device = pick_device(ngpu)
    model, frontend, inv, conf = load_model(model_dir, checkpoint, device)
    if conf["train"].get("threads"):
        torch.set_num_threads(int(conf["train"]["threads"]))
    dconf = conf["decode"]
    window, step = window or dconf["window"], step or dconf["step"]
    beam = beam if beam is not None else dconf["beam"]
    batch_size = batch_size or dconf["batch_size"]
    inputs = [data_dir, model_dir, *(f for d in (data_dir, model_dir) for f in Path(d).glob("*") if f.is_file())]
    check_not_input(out, inputs)
    if fmt == "datadir":
        check_data_dir_output(out, overwrite, inputs)
    elif nbest > 1:
        check_not_input(f"{out}.nbest", inputs)
    dd = read_data_dir(data_dir, need_labels=False)
    if any(u.labels for u in dd.utterances) and dd.inventory.name != inv.name:
        raise PunctkitError(f"{data_dir}: label inventory {dd.inventory.name} differs from the model's "
                            f"{inv.name} ({Path(model_dir) / 'config.yaml'})")
    streams = make_streams(dd, inv)
    words = [w for s in streams for w in s.words]
    if frontend.unk_rate(words) == 1.0:
        raise PunctkitError(f"{data_dir}: none of its {len(words)} words is in the vocabulary of {model_dir}")
    units = split_utterances(streams) if nbest > 1 else streams
    extra = None
    from punctkit.train.audio import audio_extra, wants_audio

    if wants_audio(conf, model.needs):  # the config's resolved `audio.use`, else the model's needs
        extra = audio_extra(data_dir)
    hyps = decode_streams(model, frontend, units, window, step, batch_size, device, beam, nbest, extra=extra)
    utts, nbest_lines = [], []
    for s, h in zip(units, hyps):
        best = h[0][0]
        for uttid, a, b in s.utt_spans():
            utts.append(Utterance(uttid, s.words[a:b], [inv.labels[i] for i in best[a:b]]))
        if nbest > 1:
            nbest_lines += [f"{s.key} {r} {score:.4f} {' '.join(inv.labels[i] for i in ids)}"
                            for r, (ids, score) in enumerate(h, 1)]
    if fmt == "datadir":
        write_data_dir(out, utts, inv, dd.utt2spk, extra={"nbest": nbest_lines} if nbest > 1 else None,
                       overwrite=overwrite, inputs=inputs)
    else:
        write(sorted(utts, key=lambda u: u.uttid), out, fmt, inv, inputs=inputs)
        if nbest > 1:
            with atomic_write(f"{out}.nbest") as f:
                f.writelines(ln + "\n" for ln in nbest_lines)
    n_words = sum(len(u.words) for u in utts)
    if log:
        log(f"decode: {len(utts)} utterances, {n_words} words -> {out}")
    return {"utterances": len(utts), "words": n_words, "out": str(out)}
