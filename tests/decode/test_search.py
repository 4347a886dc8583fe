"""Greedy and beam search: one label per word, beam 1 = greedy, exact n-best on tiny cases."""
from __future__ import annotations

import itertools

import pytest
import torch

from punctkit.data.streams import IGNORE
from punctkit.decode.search import beam_search, greedy
from punctkit.models.registry import build_model

VOCAB, N_LABELS, PAD = 25, 4, 0

CONFS = {
    "drnn_lwma": {"type": "drnn_lwma", "n_layers": 2, "n_heads": 2, "d_model": 16},
    "transformer_tagger": {"type": "transformer_tagger", "n_layers": 1, "d_model": 16, "n_heads": 2, "d_ff": 32},
    "transformer_seq2seq": {
        "type": "transformer_seq2seq", "n_layers": 1, "n_dec_layers": 2, "d_model": 16, "n_heads": 2, "d_ff": 32,
    },
}


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def model_for(name: str, seed: int = 0):
    """A small untrained model whose output distributions are far from uniform."""
    torch.manual_seed(seed)
    model = build_model(CONFS[name], vocab_size=VOCAB, n_labels=N_LABELS, pad_id=PAD)
    with torch.no_grad():
        model.out.weight.mul_(8.0)  # peakier distributions: beam and greedy can disagree
    return model.eval()


def batch_of(lengths: list[int], seed: int = 0) -> dict[str, torch.Tensor]:
    """Items of different word counts; every other word is two tokens, labelled on the last."""
    gen = torch.Generator().manual_seed(seed)
    rows = []
    for n in lengths:
        toks, pos = [], []
        for i in range(n):
            toks.extend(torch.randint(1, VOCAB, (2 if i % 2 else 1,), generator=gen).tolist())
            pos.append(len(toks) - 1)
        rows.append((toks, pos))
    b, t_max, w_max = len(rows), max(len(r[0]) for r in rows), max(lengths)
    batch = {
        "tokens": torch.full((b, max(t_max, 1)), PAD),
        "token_mask": torch.zeros(b, max(t_max, 1), dtype=torch.bool),
        "word_pos": torch.zeros(b, w_max, dtype=torch.long),
        "word_mask": torch.zeros(b, w_max, dtype=torch.bool),
    }
    for i, (toks, pos) in enumerate(rows):
        batch["tokens"][i, : len(toks)] = torch.tensor(toks, dtype=torch.long)
        batch["token_mask"][i, : len(toks)] = True
        batch["word_pos"][i, : len(pos)] = torch.tensor(pos, dtype=torch.long)
        batch["word_mask"][i, : len(pos)] = True
    return batch


def sequence_logprob(model, batch: dict[str, torch.Tensor], i: int, labels: list[int]) -> float:
    """Sum of log-probabilities of `labels` for item i, computed by the model's forward pass."""
    n = len(labels)
    one = {k: v[i : i + 1] for k, v in batch.items()}
    one = {k: (v[:, :n] if k in ("word_pos", "word_mask") else v) for k, v in one.items()}
    one["labels"] = torch.tensor([labels])
    with torch.no_grad():
        logp = torch.log_softmax(model(one), -1)[0]
    return float(logp[torch.arange(n), one["labels"][0]].sum())


@pytest.mark.parametrize("name", sorted(CONFS))
def test_beam_gives_one_label_per_word_and_beam_1_equals_greedy(name):
    model = model_for(name)
    lengths = [9, 3, 6, 1]
    batch = batch_of(lengths)
    best = greedy(model, batch)
    assert best.shape == (4, 9)
    for i, n in enumerate(lengths):
        assert (best[i, n:] == IGNORE).all() and (best[i, :n] >= 0).all()
    one = beam_search(model, batch, beam=1)
    six = beam_search(model, batch, beam=6, nbest=6)
    for i, n in enumerate(lengths):
        assert one[i][0][0] == best[i, :n].tolist()
        assert all(len(labels) == n for labels, _ in six[i])
        assert len(six[i]) == (4 if n == 1 else 6)  # one word has only 4 label sequences
        assert six[i][0][1] >= one[i][0][1] - 1e-5  # a wider beam never finds a worse best


@pytest.mark.parametrize("name", sorted(CONFS))
def test_nbest_is_sorted_distinct_and_scored_by_the_model(name):
    model = model_for(name, seed=1)
    batch = batch_of([7, 4], seed=1)
    hyps = beam_search(model, batch, beam=5, nbest=5)
    for i, item in enumerate(hyps):
        scores = [s for _, s in item]
        assert scores == sorted(scores, reverse=True)
        assert len({tuple(labels) for labels, _ in item}) == len(item) == 5
        for labels, score in item:
            assert score == pytest.approx(sequence_logprob(model, batch, i, labels), abs=1e-4)


@pytest.mark.parametrize("name", ["transformer_tagger", "transformer_seq2seq"])
def test_full_beam_finds_the_exact_nbest(name):
    """With a beam as wide as every sequence of 3 labels, the n-best is the exhaustive one."""
    model = model_for(name, seed=2)
    batch = batch_of([3, 2], seed=2)
    hyps = beam_search(model, batch, beam=N_LABELS**3, nbest=5)
    for i, n in enumerate([3, 2]):
        every = sorted(
            ((sequence_logprob(model, batch, i, list(seq)), list(seq))
             for seq in itertools.product(range(N_LABELS), repeat=n)),
            reverse=True,
        )
        assert [labels for labels, _ in hyps[i]] == [seq for _, seq in every[:5]]


def test_tagger_beam_best_is_the_per_word_argmax():
    model = model_for("transformer_tagger", seed=3)
    batch = batch_of([8, 5, 2], seed=3)
    with torch.no_grad():
        argmax = model(batch).argmax(-1)
    for i, n in enumerate([8, 5, 2]):
        assert beam_search(model, batch, beam=6)[i][0][0] == argmax[i, :n].tolist()


def test_seq2seq_greedy_follows_its_own_predictions():
    """Greedy seq2seq decoding equals teacher forcing on its own output, argmax at every word."""
    model = model_for("transformer_seq2seq", seed=4)
    batch = batch_of([6, 4], seed=4)
    pred = greedy(model, batch)
    forced = dict(batch, labels=pred)
    with torch.no_grad():
        again = model(forced).argmax(-1)
    assert torch.equal(again.masked_fill(~batch["word_mask"], IGNORE), pred)


def test_item_without_words_and_search_restores_training_mode():
    model = model_for("transformer_seq2seq").train()
    batch = batch_of([3, 0])
    hyps = beam_search(model, batch, beam=3, nbest=2)
    assert hyps[1] == [([], 0.0)]
    assert len(hyps[0]) == 2
    assert model.training
    with pytest.raises(ValueError, match="beam"):
        beam_search(model, batch, beam=0)
