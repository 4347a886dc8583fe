"""Per-word label probabilities from every model and backend: the Python API and `decode --probs`."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from label_util import words_labels, words_rows
from punct_util import cli, tiny_conf, train_tiny
from punctkit.data.formats import AsrUtterance, read, split_text
from punctkit.data.labels import default_substitution
from punctkit.data.probs import read_probs
from punctkit.decode.search import beam_search_rows, greedy_rows
from punctkit.models.registry import build_model

TAGGER = tiny_conf({"type": "transformer_tagger", "n_layers": 1, "d_model": 32, "n_heads": 2, "d_ff": 64,
                    "dropout": 0.1}, epochs=2)
SEQ2SEQ = {"type": "transformer_seq2seq", "n_layers": 1, "n_dec_layers": 1, "d_model": 16, "n_heads": 2,
           "d_ff": 32}
VOCAB, N_LABELS = 25, 4


@pytest.fixture(scope="module")
def tagger(tmp_path_factory):
    """A tiny tagger trained on 8000 words of dev2012 (d/exp), packed with --onnx (d/m.pkt), test words."""
    d = tmp_path_factory.mktemp("probs")
    cli("pack", train_tiny(d, TAGGER), "-o", d / "m.pkt", *(["--onnx"] if _has_onnxruntime() else []))
    utts, _ = read(d / "test")
    d.joinpath("words.txt").write_text(" ".join(w for u in utts for w in u.words) + "\n")
    return d


def _has_onnxruntime() -> bool:
    import importlib.util

    return importlib.util.find_spec("onnxruntime") is not None


def _words(d) -> list[str]:
    return d.joinpath("words.txt").read_text().split()


def _check_rows(punct, labels: list[str], rows: np.ndarray, ended: bool = True) -> None:
    """Distributions over the inventory whose arg-max is the label; the last word of a stream that
    `ended` takes the sentence-final mark the row ranks highest when its arg-max has none
    (decode/stream_end.py): the row stays the model's."""
    from punctkit.decode.stream_end import closing_label

    assert rows.shape == (len(labels), len(punct.inventory.labels))
    assert np.allclose(rows.sum(1), 1.0, atol=1e-6) and (rows >= 0).all()
    want = [punct.inventory.labels[i] for i in rows.argmax(1)]
    if ended and want:
        want[-1] = closing_label(want[-1], rows[-1], punct.inventory)
    assert want == labels


def test_tagger_rows_are_its_softmax_in_torch_and_onnx(tagger):
    """Torch and ONNX packages: rows sum to one, arg-max = label, same rows within 1e-4."""
    from punctkit import load_model

    words = _words(tagger)[:600]
    fp = load_model(tagger / "m.pkt", threads=1, backend="torch")
    labels, rows = words_labels(fp, words, probs=True)
    _check_rows(fp, labels, rows)
    assert labels == words_labels(fp, words)  # probs changes nothing else
    assert len(set(labels)) > 1 and rows.max(1).min() < 0.99  # real distributions, not one-hot
    assert np.array_equal(words_rows(fp, words), rows)
    if not _has_onnxruntime():
        pytest.skip("onnxruntime is not installed: torch checked only")
    ox = load_model(tagger / "m.pkt", threads=1, backend="onnx")
    labels_o, rows_o = words_labels(ox, words, probs=True)
    _check_rows(ox, labels_o, rows_o)
    assert np.abs(rows_o - rows).max() < 1e-4
    assert labels_o == labels


def test_a_stream_in_chunks_gives_the_one_shot_rows(tagger):
    """A long input read as one stream (`Engine.label`, one_stream) in small segments gives the rows of
    a one-shot call."""
    from punctkit import load_model
    from punctkit.infer.engine import as_unit

    words = _words(tagger)[:700]
    whole = load_model(tagger / "m.pkt", threads=1, backend="torch", chunk_words=100000)
    small = load_model(tagger / "m.pkt", threads=1, backend="torch", chunk_words=45)
    labels, rows = words_labels(whole, words, probs=True)
    done, = small.label([as_unit(words)], one_stream=True, probs=True)
    assert done.labels == labels
    assert np.abs(done.rows - rows).max() < 1e-5
    done, = small.label([as_unit(words)], one_stream=True)
    assert done.labels == labels and done.rows is None  # rows only with probs


def test_fixed_marks_keep_the_model_distribution_and_units_carry_rows(tagger):
    """--keep-input-marks: the label is the input's mark, the row the model's distribution;
    `Engine.label` gives each utterance's rows with probs only."""
    from punctkit import load_model

    punct = load_model(tagger / "m.pkt", threads=1, backend="torch")
    words = _words(tagger)[:200]
    fixed = [None] * len(words)
    fixed[10] = "?" if "?" in punct.inventory.labels else punct.inventory.labels[-1]
    labels, rows = words_labels(punct, words, probs=True)
    kept, kept_rows = words_labels(punct, words, fixed, probs=True)
    assert kept[10] == fixed[10] and np.array_equal(kept_rows, rows)
    rules = default_substitution(punct.inventory)
    passages = [split_text(" ".join(words[a:a + 50]), punct.inventory, rules) for a in range(0, 200, 50)]
    units = [AsrUtterance(f"u{i}", p.words, p.marks, p.written, lineno=i + 1) for i, p in enumerate(passages)]
    for one_stream in (True, False):
        plain = list(punct.label(units, one_stream=one_stream))
        assert all(d.rows is None for d in plain)
        with_rows = list(punct.label(units, one_stream=one_stream, probs=True))
        for k, (d, d2) in enumerate(zip(plain, with_rows)):
            assert (d.utt, d.labels, d.shown) == (d2.utt, d2.labels, d2.shown)
            _check_rows(punct, d2.labels, d2.rows, ended=not one_stream or k == len(plain) - 1)  # a stream's end
        if one_stream:  # the lines as one stream: the rows of the whole stream
            assert np.allclose(np.concatenate([d.rows for d in with_rows]), rows, atol=1e-6)


def test_decode_probs_file_matches_the_api(tagger, tmp_path):
    """`decode --probs` writes OUT/probs (sorted like text and labels) or OUT.probs, read back by read_probs."""
    from punctkit import load_model

    punct = load_model(tagger / "m.pkt", threads=1, backend="torch")
    n = len(punct.inventory.labels)
    cli("decode", tagger / "exp", tagger / "test", tmp_path / "dec", "--probs")
    table = read_probs(tmp_path / "dec" / "probs", n)
    utts, _ = read(tmp_path / "dec")
    assert list(table) == [u.uttid for u in utts] == sorted(table)
    from punctkit.data.labels import SENTENCE_END, mark_of

    for u in utts:
        assert len(table[u.uttid]) == len(u.words)
        want = [punct.inventory.labels[i] for i in table[u.uttid].argmax(1)]
        if u is utts[-1]:  # one stream: its last word ends a sentence (decode/stream_end.py), rows as they were
            assert mark_of(u.labels[-1]) in SENTENCE_END
            want[-1] = u.labels[-1]
        assert want == u.labels
    words = [w for u in utts for w in u.words]
    labels, rows = words_labels(punct, words, probs=True)
    assert np.abs(np.concatenate(list(table.values())) - rows).max() <= 1e-4  # 4 decimals written
    cli("decode", tagger / "exp", tagger / "test", tmp_path / "dec.twocol", "--format", "twocol", "--probs")
    again = read_probs(tmp_path / "dec.twocol.probs", n)
    assert list(again) == list(table) and all(np.array_equal(again[k], table[k]) for k in table)
    cli("decode", tagger / "exp", tagger / "test", tmp_path / "plain")
    assert not (tmp_path / "plain" / "probs").exists()


# ------------------------------------------------------------------ encoder-decoders (decode/search.py)

def _seq2seq(seed: int = 0):
    torch.manual_seed(seed)
    model = build_model(SEQ2SEQ, vocab_size=VOCAB, n_labels=N_LABELS, pad_id=0)
    with torch.no_grad():
        model.out.weight.mul_(8.0)  # peaky distributions: beam and greedy disagree
    return model.eval()


def _batch(lengths: list[int], seed: int = 0) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    w = max(lengths)
    batch = {"tokens": torch.zeros(len(lengths), w, dtype=torch.long),
             "token_mask": torch.zeros(len(lengths), w, dtype=torch.bool),
             "word_pos": torch.arange(w).repeat(len(lengths), 1),
             "word_mask": torch.zeros(len(lengths), w, dtype=torch.bool)}
    for i, n in enumerate(lengths):
        batch["tokens"][i, :n] = torch.randint(1, VOCAB, (n,), generator=gen)
        batch["token_mask"][i, :n] = True
        batch["word_mask"][i, :n] = True
    return batch


def _teacher_forced(model, batch, i: int, labels: list[int]) -> np.ndarray:
    """The model's distributions for item i's words given `labels` as the previous labels (forward pass)."""
    n = len(labels)
    one = {k: v[i:i + 1] for k, v in batch.items()}
    one = {k: (v[:, :n] if k in ("word_pos", "word_mask") else v) for k, v in one.items()}
    one["labels"] = torch.tensor([labels])
    with torch.no_grad():
        return torch.softmax(model(one).float(), -1)[0].double().numpy()


def test_greedy_rows_are_the_steps_given_the_chosen_prefix():
    model = _seq2seq()
    lengths = [9, 4, 1]
    batch = _batch(lengths)
    pred, rows = greedy_rows(model, batch)
    for i, n in enumerate(lengths):
        r = rows[i, :n].double().numpy()
        assert np.allclose(r.sum(1), 1.0, atol=1e-6)
        assert r.argmax(1).tolist() == pred[i, :n].tolist()  # greedy: the label is the arg-max
        assert np.abs(r - _teacher_forced(model, batch, i, pred[i, :n].tolist())).max() < 1e-5


def test_beam_rows_give_the_chosen_label_its_step_probability():
    """Beam search: row t is the step distribution of the best hypothesis given its own prefix, so the
    chosen labels' probabilities multiply to the hypothesis' score; not always the arg-max."""
    model = _seq2seq(seed=3)
    lengths = [10, 7, 3]
    batch = _batch(lengths, seed=3)
    res = beam_search_rows(model, batch, beam=6, nbest=3)
    not_argmax = 0
    for i, (hyps, rows) in enumerate(res):
        best, score = hyps[0]
        assert rows.shape == (lengths[i], N_LABELS) and np.allclose(rows.sum(1), 1.0, atol=1e-6)
        assert np.abs(rows - _teacher_forced(model, batch, i, best)).max() < 1e-5
        assert np.log(rows[np.arange(len(best)), best]).sum() == pytest.approx(score, abs=1e-4)
        not_argmax += int((rows.argmax(1) != np.array(best)).sum())
    greedy = greedy_rows(model, batch)[0]
    assert res[2][0][0][0] != greedy[2, :3].tolist()  # this seed's item 2: the beam beats greedy ...
    assert not_argmax > 0  # ... so one of its chosen labels is not its step's arg-max


def test_calibration_script_bins_the_top_probability(tmp_path):
    """A hand-made decode dir: 4 words in bins 0.9-1.0 (3 right), 0.5-0.6 (1 right of 2); ECE by hand."""
    import subprocess
    import sys

    from conftest import ROOT
    from punctkit.data.datadir import write_data_dir
    from punctkit.data.labels import get_inventory
    from punctkit.data.probs import write_probs
    from punctkit.data.utterance import Utterance

    inv = get_inventory("4class")
    ref = [Utterance("u1", ["a", "b", "c"], ["O", "COMMA", "PERIOD"]),
           Utterance("u2", ["d", "e", "f"], ["O", "O", "QUESTION"])]
    write_data_dir(tmp_path / "ref", ref, inv)
    dec = tmp_path / "dec"
    write_data_dir(dec, [Utterance(u.uttid, u.words, ["O"] * 3) for u in ref], inv)
    rows = {"u1": [[0.95, 0.05, 0, 0], [0.05, 0.95, 0, 0], [0.45, 0.55, 0, 0]],   # right, right, wrong
            "u2": [[0.91, 0.09, 0, 0], [0.92, 0.08, 0, 0], [0, 0, 0.45, 0.55]]}   # right, right, right
    write_probs(dec / "probs", ((k, np.array(v)) for k, v in rows.items()))
    r = subprocess.run([sys.executable, ROOT / "local" / "iwslt" / "calibration.py", dec, tmp_path / "ref"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "| 0.9-1.0 | 4 | 0.933 | 1.000 |" in lines and "| 0.5-0.6 | 2 | 0.550 | 0.500 |" in lines
    assert "| 0.0-0.1 | 0 | - | - |" in lines
    ece = 4 / 6 * (1 - 0.9325) + 2 / 6 * (0.55 - 0.5)
    assert f"ECE: {ece:.4f} (6 words)" in lines
    r = subprocess.run([sys.executable, ROOT / "local" / "iwslt" / "calibration.py", tmp_path / "ref", dec],
                       capture_output=True, text=True)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "probs file" in r.stderr
