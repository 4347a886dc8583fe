"""ASR-robustness augmentation: measured rates, labels aligned with words, rates 0 = identity,
seeded draws, soft rows carried along, and a training run with it."""
from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine_util import TINY, make_dirs
from punctkit.batch import collate
from punctkit.data.streams import IGNORE, Stream, Window, WindowDataset
from punctkit.files import PunctkitError
from punctkit.text.frontend import train_frontend
from punctkit.train.augment import INSERT, SUBSTITUTE, Augmenter, AugmentOptions, plan

WORDS = [f"w{i}" for i in range(300)]


@pytest.fixture(scope="module")
def fe(tmp_path_factory):
    return train_frontend({"kind": "word"}, [WORDS], tmp_path_factory.mktemp("fe"))


def test_measured_rates_match_the_set_rates():
    opts = AugmentOptions(substitute=0.1, insert=0.05, delete=0.07)
    n = 40000
    steps = plan(n, opts, np.random.default_rng(5))
    kinds = [k for _, k in steps]
    kept = {i for i, k in steps if k != INSERT}
    for measured, rate in ((kinds.count(SUBSTITUTE) / n, 0.1), (kinds.count(INSERT) / n, 0.05),
                           ((n - len(kept)) / n, 0.07)):
        assert abs(measured - rate) < 4 * (rate * (1 - rate) / n) ** 0.5 + 1e-3, (measured, rate)
    sources = [i for i, k in steps if k != INSERT]
    assert sources == sorted(set(sources))  # each word at most once, in order


def test_rates_zero_are_off_and_the_identity(fe):
    assert AugmentOptions.from_section({}) is None
    assert AugmentOptions.from_section({"substitute": 0, "insert": 0.0, "delete": 0}) is None
    words, labels = WORDS[:50], [i % 4 for i in range(50)]
    ids, pos, labs, soft = Augmenter(AugmentOptions(), seed=1)(fe, words, labels, None, (1, 0, 0))
    assert (ids, pos, labs, soft) == (*fe.encode(words), labels, None)


def test_options_are_checked():
    for bad, what in (({"substitute": 0.6, "delete": 0.5}, "sum to at most 1"), ({"insert": -0.1}, ">= 0"),
                      ({"token": "mask", "insert": 0.1}, "token must be one of"), ({"swap": 0.1}, "unknown option"),
                      ({"insert": "lots"}, "insert must be a number"), ({"delete": float("nan")}, "finite")):
        with pytest.raises(PunctkitError, match=what):
            AugmentOptions.from_section(bad)


def check_aligned(fe, words, labels, out):
    """Every output word is a source word in order with its own label, a substituted word
    (<unk>, its label kept) or an inserted <unk> (label 0)."""
    ids, pos, labs, _ = out
    assert len(pos) == len(labs) and len(ids) == len(pos)  # word frontend: one token per word
    index = {fe.word_ids(w)[0]: k for k, w in enumerate(words)}
    last = -1
    for t, lab in zip((ids[p] for p in pos), labs):
        if t == fe.unk_id:
            assert lab == 0 or lab in labels[last + 1:]  # inserted (O), or substituted with its label
        else:
            assert index[t] > last and lab == labels[index[t]]
            last = index[t]


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 60), sub=st.floats(0, 0.4), ins=st.floats(0, 0.3), dele=st.floats(0, 0.3),
       key=st.integers(0, 10 ** 6))
def test_labels_stay_aligned_with_words(fe, n, sub, ins, dele, key):
    words = WORDS[:n]
    labels = [i % 4 if i % 7 else IGNORE for i in range(n)]
    unk = Augmenter(AugmentOptions(sub, ins, dele, "unk"), seed=3)(fe, words, labels, None, (key, 0, 0))
    assert len(unk[0]) >= 1
    check_aligned(fe, words, labels, unk)
    # `random`: the same draws, a random non-padding id where `unk` put <unk>
    rnd = Augmenter(AugmentOptions(sub, ins, dele, "random"), seed=3)(fe, words, labels, None, (key, 0, 0))
    assert rnd[1:] == unk[1:]
    for a, b in zip(unk[0], rnd[0]):
        assert a == b if a != fe.unk_id else b != fe.pad_id and 0 <= b < fe.vocab_size


def test_draws_are_seeded_by_epoch_and_window_and_soft_rows_follow(fe):
    opts = AugmentOptions(substitute=0.2, insert=0.2, delete=0.2)
    s = Stream("s", ["u"], [0], WORDS[:80], [i % 4 for i in range(80)])
    soft = [np.tile(np.eye(4, dtype=np.float32), (20, 1))]  # word i's row: one-hot of i % 4 = its label
    ds = WindowDataset([s], fe, windows=[Window(0, 0, 80)], soft=soft, augment=Augmenter(opts, seed=1))
    first = ds[0]
    again = ds[0]  # the same epoch and window: the same draw
    assert again["tokens"] == first["tokens"] and np.array_equal(again["soft"], first["soft"])
    ds.set_windows([Window(0, 0, 80)], epoch=2)
    assert ds[0]["tokens"] != first["tokens"]
    for ex in (first, ds[0]):
        for lab, row, t in zip(ex["labels"], ex["soft"], (ex["tokens"][p] for p in ex["word_pos"])):
            if (row == IGNORE).all():  # only an inserted token has no teacher row
                assert lab == 0 and t == fe.unk_id
            else:
                assert row.argmax() == lab
    batch = collate([first, ds[0]], fe.pad_id)
    assert batch["soft"].shape[:2] == batch["labels"].shape
    with pytest.raises(PunctkitError, match="cannot be used with audio"):
        WindowDataset([s], fe, extra=lambda s, w: {}, augment=Augmenter(opts, 1))


def test_plm_pieces_keep_one_label_per_word():
    from punctkit.text.plm import PlmFrontend

    try:
        plm = PlmFrontend.from_path("auto")
    except PunctkitError as e:
        pytest.skip(str(e))
    words = "the unbelievably long antidisestablishmentarianism debate ended , well".split()
    labels = [i % 4 for i in range(len(words))]
    ids, pos, labs, _ = Augmenter(AugmentOptions(substitute=0.3, insert=0.3, delete=0.2), 7)(
        plm, words, labels, None, (1, 2, 3))
    assert len(pos) == len(labs) and ids[:1] == plm.prefix and ids[-1:] == plm.suffix
    kept = [w for w in words if plm.word_ids(w)[0] in [ids[p] for p in pos]]
    assert len(kept) < len(words) or plm.unk_id in ids


def test_training_with_augmentation_runs_and_differs(tmp_path):
    from conftest import IWSLT
    from punctkit.fit import train

    if not (IWSLT / "dev2012").is_file():
        pytest.skip(f"IWSLT reference data not found at {IWSLT}")
    dirs = make_dirs(IWSLT, tmp_path, "1:1000", "1001:1200")
    losses = []
    for name, aug in (("plain", {}), ("aug", {"substitute": 0.1, "insert": 0.1, "delete": 0.1})):
        conf = copy.deepcopy(TINY)
        conf["train"].update(epochs=1, augment=aug)
        losses.append(train(conf, *dirs, tmp_path / name, quiet=True).history[0]["loss"])
    assert losses[0] != losses[1] and all(np.isfinite(losses))
