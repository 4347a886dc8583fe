"""A torch model's labels over decoding windows: the `predict` of the inference engine's torch
backend (punctkit/infer/), and what training validates with.

Streams are decoded in overlapping windows (decode/windows.py); taggers take the arg-max per
word, encoder-decoders (`model.seq2seq`) run the beam search of decode/search.py. Every input
word gets exactly one label and the words come back unchanged, in order. `punctkit decode`
(data directories in, labelled data out) is punctkit/decode_data.py, over the engine.
"""
from __future__ import annotations

from typing import Any, Callable

import torch

from punctkit.batch import collate
from punctkit.data.labels import LabelSet
from punctkit.data.streams import Stream, WindowDataset, bucket_batches
from punctkit.decode.decide import Decision
from punctkit.decode.options import resolve
from punctkit.decode.search import beam_search_rows, greedy_rows
from punctkit.decode.windows import Hypothesis, WindowPrediction, decode_windows_rows, tagger_predicted
from punctkit.files import PunctkitError
from punctkit.models.base import PunctModel
from punctkit.progress import progress
from punctkit.text.frontend import Frontend

# ------------------------------------------------------------------ search over windows

@torch.no_grad()
def predict(model: PunctModel, dataset: WindowDataset, batch_size: int = 32, device: torch.device | str = "cpu",
            beam: int = 1, nbest: int = 1, pad_id: int = 0, show: bool = False) -> list[WindowPrediction]:
    """n-best label ids for every window of `dataset` and the 1-best's per-word distributions:
    taggers' arg-max and softmax (decode/windows.py: tagger_predicted), encoder-decoders' greedy
    search (beam <= 1) or beam search with their step distributions (decode/search.py); nbest > 1
    always runs the beam search. `show`: a progress bar over the batches."""
    was_training = model.training
    model.eval()
    lengths = [dataset.n_words(i) for i in range(len(dataset))]
    out = [WindowPrediction.empty() for _ in range(len(dataset))]
    for idx in progress(bucket_batches(lengths, batch_size, shuffle=False), show=show, desc="decode",
                        unit="batch", leave=False):
        batch = {k: v.to(device) for k, v in collate([dataset[i] for i in idx], pad_id).items()}
        n_words = batch["word_mask"].sum(1).tolist()
        res: list[WindowPrediction]
        if nbest > 1 or (model.seq2seq and beam > 1):
            res = [WindowPrediction([Hypothesis(ids, score) for ids, score in hyps], rows)
                   for hyps, rows in beam_search_rows(model, batch, beam=max(beam, nbest), nbest=nbest)]
        elif model.seq2seq:
            pred, rows = greedy_rows(model, batch)
            ids, rows_np = pred.tolist(), rows.double().cpu().numpy()
            res = [WindowPrediction([Hypothesis(ids[b][: n_words[b]], 0.0)], rows_np[b, : n_words[b]])
                   for b in range(len(idx))]
        else:  # a tagger's greedy decoding is its per-word arg-max
            res = tagger_predicted(model(batch).float().cpu().numpy(), n_words)
        for b, i in enumerate(idx):
            if any(len(h.ids) != n_words[b] for h in res[b].hyps):
                raise PunctkitError(f"model {type(model).__name__} returned a label count different from "
                                    f"the {n_words[b]} words of a window")
            out[i] = res[b]
    model.train(was_training)
    return out


def decode_streams_rows(model: PunctModel, frontend: Frontend, streams: list[Stream], window: int = 100,
                        step: int = 50, batch_size: int = 32, device: torch.device | str = "cpu", beam: int = 1,
                        nbest: int = 1, extra: Callable | None = None, show: bool = False,
                        overlap: str = "central") -> list[WindowPrediction]:
    """n-best label ids per stream from `model`, each word's label from its most central window, or
    its windows averaged (`overlap`, decode/windows.py), and the 1-best's per-word distributions
    (words x labels); `show`: a progress bar."""
    return decode_windows_rows(streams, frontend, window, step,
                               lambda ds: predict(model, ds, batch_size, device, beam, nbest, frontend.pad_id, show),
                               extra, overlap)


def validation(trained: dict[str, Any], frontend: Frontend, streams: list[Stream], device: torch.device,
               extra: Callable | None = None, log: Callable[[str], None] | None = None,
               inventory: LabelSet | None = None) -> tuple[Callable[[PunctModel], list[list[int]]], dict]:
    """What training validates with: a function from a model to the best label ids of each dev
    stream, decoded under the options resolved from the training config's `decode:` section
    (the same options `punctkit decode` starts from), and that section resolved. With `inventory`,
    each dev stream's last word ends a sentence, as `punctkit decode` ends it (decode/stream_end.py),
    unless the section says `stream_end: open`."""
    opts = resolve(trained=trained, log=log)
    decision = Decision.argmax(inventory, opts.closes_streams) if inventory is not None else None

    def run(model: PunctModel) -> list[list[int]]:
        out = []
        for s, got in zip(streams, decode_streams_rows(model, frontend, streams, opts.window, opts.step,
                                                       opts.batch_size, device, opts.beam, extra=extra,
                                                       overlap=opts.overlap)):
            out.append(got.best if decision is None else decision.decide(got.rows, s.words, best=got.best))
        return out

    return run, opts.search()
