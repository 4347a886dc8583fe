"""Streaming punctuation with a bounded look-ahead (issue #19): decode/lookahead.py, punctkit/infer/stream.py,
`punctkit punctuate --stream`, and time-delay training windows."""
from __future__ import annotations

import codecs
import json
import random
import select
import subprocess
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from punct_util import PK, cli
from punctkit.data.formats import read
from punctkit.data.labels import SENTENCE_END, mark_of
from punctkit.data.streams import Stream, TimeDelay, train_windows
from punctkit.decode.lookahead import (
    covering_windows,
    decode_lookahead,
    delay,
    owner_window,
    parse_lookahead,
    word_window,
    word_windows,
)
from punctkit.decode.options import OVERLAPS
from punctkit.decode.windows import centrality, decode_windows_rows, owners, plan_windows
from punctkit.files import PunctkitError
from punctkit.infer.stream import PunctStream


@pytest.fixture(scope="module")
def packed(tiny_package, tmp_path_factory):
    """The run's tiny DRNN-LWMA, trained with time-delay windows and packed with --onnx (conftest.tiny_package),
    copied here, and 1000 test2011 words."""
    pytest.importorskip("onnxruntime", reason="the onnx extra (onnxruntime) is not installed")
    return tiny_package.copy_to(tmp_path_factory.mktemp("stream"), utts=10)


@pytest.fixture(scope="module")
def tiny_torch_engine(packed):
    from punctkit import load_model

    return load_model(packed / "m.pkt", threads=1, backend="torch")


def _words(packed) -> list[str]:
    return (packed / "words.txt").read_text().split()


# ------------------------------------------------------------------ windows (pure)

@settings(max_examples=300, deadline=None)
@given(st.integers(1, 300), st.integers(1, 60), st.data())
def test_owner_window_is_the_owner_of_the_whole_plan(n, window, data):
    """`owner_window` picks what `owners` picks over the whole plan, and once `window` further words
    have arrived no later word changes it (so unlimited streaming equals offline decoding)."""
    step = data.draw(st.integers(1, window))
    plan = plan_windows(n, window, step)
    own = owners(n, plan)
    for i in range(n):
        assert owner_window(i, n, window, step) == plan[own[i][0]]
    i = data.draw(st.integers(0, n - 1))
    later = data.draw(st.integers(n, n + 200))
    if n > i + window:
        assert owner_window(i, later, window, step) == owner_window(i, n, window, step)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 300), st.integers(1, 60), st.data())
def test_covering_windows_are_the_plan_windows_holding_the_word(n, window, data):
    """`covering_windows` lists the windows of the whole plan that hold word i (what `overlap: average`
    averages), and once `window` further words have arrived no later word adds or changes one."""
    step = data.draw(st.integers(1, window))
    plan = plan_windows(n, window, step)
    i = data.draw(st.integers(0, n - 1))
    assert covering_windows(i, n, window, step) == [(a, b) for a, b in plan if a <= i < b]
    later = data.draw(st.integers(n, n + 200))
    if n > i + window:
        assert covering_windows(i, later, window, step) == covering_windows(i, n, window, step)
    assert word_windows(i, n, window, step, None, "central") == [owner_window(i, n, window, step)]
    assert word_windows(i, n, window, step, 3, "average") == [word_window(i, n, window, step, 3)]


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 300), st.integers(1, 60), st.integers(0, 80), st.data())
def test_lookahead_window_ends_lookahead_words_after_its_word(n, window, lookahead, data):
    i = data.draw(st.integers(0, n - 1))
    a, b = word_window(i, n, window, 1, lookahead)
    assert a <= i < b <= n and b - a == min(window, b)  # left context up to the window
    assert b - 1 - i == min(lookahead, window - 1, n - 1 - i)
    # decided from the first n' words as soon as L further words are there: the same window
    known = i + 1 + delay(window, lookahead)
    if known <= n:
        assert word_window(i, known, window, 1, lookahead) == (a, b)


def test_parse_lookahead():
    assert [parse_lookahead(v) for v in ("0", "4", 16, None, "inf", "-1", "unlimited")] == [0, 4, 16, None,
                                                                                             None, None, None]
    for bad in ("-2", "four", "1.5"):
        with pytest.raises(PunctkitError, match="--lookahead"):
            parse_lookahead(bad)


# ------------------------------------------------------------------ time-delay training windows

def _streams(lengths: list[int]) -> list[Stream]:
    return [Stream(f"s{k}", ["u"], [0], ["w"] * n, [0] * n) for k, n in enumerate(lengths)]


@settings(max_examples=300, deadline=None)
@given(n=st.integers(1, 2000), window=st.integers(2, 300), seed=st.integers(0, 50), epoch=st.integers(0, 5))
def test_training_windows_cover_each_stream_once_within_half_to_one_and_a_half_windows(n, window, seed, epoch):
    """A stream is cut into consecutive windows covering it once; each is shorter than 1.5 windows (a PLM's
    `max_len` is sized by that), and at least half a window unless the stream is shorter than that."""
    s = Stream("s", ["u"], [0], ["w"] * n, [0] * n)
    wins = train_windows([s], window, seed, epoch)
    assert wins[0].start == 0 and wins[-1].end == n
    assert all(a.end == b.start for a, b in zip(wins, wins[1:]))
    assert all(w.end - w.start < window + window // 2 or n <= window for w in wins)
    assert all(w.end - w.start >= window // 2 for w in wins) or n < window + window // 2


def test_time_delay_windows_cut_as_specified():
    streams = _streams([1234, 517, 40, 2000])
    plain = train_windows(streams, 100, seed=3, epoch=2)
    assert train_windows(streams, 100, 3, 2, TimeDelay(8, 0.0)) == plain  # p = 0: unchanged
    cut = train_windows(streams, 100, 3, 2, TimeDelay(8, 1.0))
    assert len(cut) == len(plain)
    shorter = 0
    for w, c in zip(plain, cut):
        assert (c.stream, c.start) == (w.stream, w.start) and c.end <= w.end  # a prefix of the window
        # cut after a word t of the second half plus 0..8 words of right context
        assert c.end >= w.start + (w.end - w.start) // 2 + 1
        shorter += c.end < w.end
    assert shorter > len(cut) // 2
    tight = train_windows(streams, 100, 3, 2, TimeDelay(0, 1.0))  # max 0: t is the last word kept
    ends = {c.end - c.start for c in tight}
    assert len(ends) > 5  # random positions, not one length
    half = train_windows(streams * 20, 100, 3, 2, TimeDelay(8, 0.5))
    plain20 = train_windows(streams * 20, 100, 3, 2)
    frac = sum(h.end < p.end for h, p in zip(half, plain20)) / len(half)
    assert 0.3 < frac < 0.6  # about p of the windows (a cut may land on the end: slightly less)
    assert train_windows(streams, 100, 3, 3, TimeDelay(8, 0.5)) != train_windows(streams, 100, 3, 2,
                                                                                 TimeDelay(8, 0.5))


@pytest.mark.parametrize("bad", [{"max": -1, "p": 0.5}, {"max": 8}, {"max": 8, "p": 2}, "8", {"max": 1.5, "p": 0.1}])
def test_time_delay_option_is_checked(bad):
    from punctkit.config import load_config
    from punctkit.train.trainer import TrainOptions

    conf = load_config({"model": {"type": "drnn_lwma"}, "train": {"lookahead": bad}})
    with pytest.raises(PunctkitError, match="train.lookahead"):
        TrainOptions.from_section(conf["train"])


def test_lookahead_conf_is_the_ctx_conf_plus_the_option():
    from conftest import ROOT
    from punctkit.config import load_config

    conf_dir = ROOT / "recipes" / "iwslt" / "conf"
    base = load_config(conf_dir / "train_drnn_lwma_minilm_ctx.yaml")
    la = load_config(conf_dir / "train_drnn_lwma_minilm_ctx_lookahead.yaml")
    assert la["train"].pop("lookahead") == {"max": 8, "p": 0.5}
    base["train"].pop("lookahead")
    assert la == base


# ------------------------------------------------------------------ the Python API

def test_trained_with_the_option(packed):
    import yaml

    conf = yaml.safe_load((packed / "exp" / "config.yaml").read_text())
    assert conf["train"]["lookahead"] == {"max": 4, "p": 0.5}


@pytest.mark.parametrize("L", [0, 1, 3, None])
def test_stream_commits_only_after_lookahead_words_and_never_revises(tiny_torch_engine, packed, L):
    """Fed word by word: after n words exactly the first n - L are committed (n - window when
    unlimited), in order, each once; the result equals decoding the whole stream at that look-ahead."""
    words = _words(packed)[:160]
    s = PunctStream(tiny_torch_engine, L)
    d = delay(tiny_torch_engine.window, L)
    got: list[tuple[str, str, str]] = []
    for n, w in enumerate(words, 1):
        new = s.feed([w])
        got += new
        assert len(got) == max(0, n - d)
        assert s.pending == n - len(got)
    got += s.finish()
    assert [w for w, _, _ in got] == words  # every word exactly once, in order
    p = tiny_torch_engine
    want = decode_lookahead([words], p.frontend, p.window, p.step, L, p.scorer.runner.predict, inventory=p.inventory)[0]
    labels = [lab for _, lab, _ in got]
    assert labels == [p.inventory.labels[i] for i in want]
    assert len(set(labels)) > 1  # the model predicts marks: this is not trivial
    if d > 0:  # the last word was held until the end, which ends a sentence
        assert labels[-1] in ("PERIOD", "QUESTION")


def test_committed_marks_do_not_depend_on_words_beyond_the_lookahead(tiny_torch_engine, packed):
    words = _words(packed)
    prefix, L = words[:120], 2
    a = PunctStream(tiny_torch_engine, L)
    b = PunctStream(tiny_torch_engine, L)
    first = a.feed(prefix + words[200:260])
    second = b.feed(prefix + list(reversed(words[300:360])))
    k = len(prefix) - L
    assert first[:k] == second[:k]


def test_capitalisation_follows_committed_marks(tiny_torch_engine, packed):
    got = list(PunctStream(tiny_torch_engine, 2).run((packed / "words.txt").read_text().splitlines()[:4]))
    ends = 0
    for (_, lab, _), (w, _, shown) in zip(got, got[1:]):
        if mark_of(lab) in SENTENCE_END and w.isalpha():
            ends += 1
            assert shown[0].isupper(), (lab, shown)
    assert ends > 3
    assert got[0][2][0].isupper()


def test_unlimited_stream_equals_offline_punctuate(tiny_torch_engine, packed):
    text = (packed / "words.txt").read_text()
    lines = text.splitlines()
    s = PunctStream(tiny_torch_engine)
    chunks = [s.feed(ln) for ln in lines] + [s.finish()]
    assert " ".join(x for c in chunks for _, _, x in c) == " ".join(tiny_torch_engine.punctuate(text).split())
    assert len(chunks[0]) == len(lines[0].split()) - tiny_torch_engine.window  # a window's worth of words is held


def _averaging(p):
    return p.with_options(overlap="average")


def test_average_overlap_weighs_each_window_by_the_words_context(tiny_torch_engine, packed):
    """`overlap: average`: a word's distribution is the mean of every window's over it, weighted by 1 +
    its distance to that window's nearest cut edge (a stream's own start or end is no cut), and its
    label that mean's arg-max; `central` keeps the most central window's."""
    import numpy as np

    from punctkit.data.streams import IGNORE, Window, WindowDataset

    words = _words(packed)[:260]
    stream = Stream("s", ["s"], [0], words, [IGNORE] * len(words))
    window, step = tiny_torch_engine.window, tiny_torch_engine.step
    plan = plan_windows(len(words), window, step)
    predict = tiny_torch_engine.scorer.runner.predict
    per_window = predict(WindowDataset([stream], tiny_torch_engine.frontend, [Window(0, a, b) for a, b in plan]))
    got, = decode_windows_rows([stream], tiny_torch_engine.frontend, window, step, predict, overlap="average")
    central, = decode_windows_rows([stream], tiny_torch_engine.frontend, window, step, predict)
    rows, c_rows = got.rows, central.rows
    several = 0
    for i in range(len(words)):
        held = [(k, a, b) for k, (a, b) in enumerate(plan) if a <= i < b]
        w = np.array([1 + min(centrality(i, a, b, len(words)), window) for _, a, b in held], dtype=float)
        want = sum(wk * per_window[k].rows[i - a] for wk, (k, a, _) in zip(w, held)) / w.sum()
        np.testing.assert_allclose(rows[i], want, rtol=0, atol=1e-12)
        assert got.best[i] == int(np.argmax(want))
        several += len(held) > 1
    assert several > len(words) // 2  # most words are in two windows: the average is not one window's
    assert not np.allclose(rows, c_rows)  # and it differs from the most central window's


def test_unlimited_stream_equals_offline_punctuate_with_averaged_windows(tiny_torch_engine, packed):
    """With `overlap: average` an unlimited stream, fed word by word, still holds a window's worth of
    words and labels as offline punctuate does."""
    avg = _averaging(tiny_torch_engine)
    text = (packed / "words.txt").read_text()
    words = text.split()[:400]
    s = PunctStream(avg)
    got = []
    for n, w in enumerate(words, 1):
        got += s.feed([w])
        assert len(got) == max(0, n - avg.window)
    got += s.finish()
    offline = avg.punctuate(" ".join(words)).split()
    assert [x for _, _, x in got] == offline
    want = decode_lookahead([words], avg.frontend, avg.window, avg.step, None, avg.scorer.runner.predict,
                            inventory=avg.inventory, overlap="average")[0]  # the look-ahead sweep's unlimited row
    assert [lab for _, lab, _ in got] == [avg.inventory.labels[i] for i in want]
    assert offline != tiny_torch_engine.punctuate(" ".join(words)).split()  # the averaged windows label otherwise here


def test_overlap_option_is_checked():
    from punctkit.decode.options import resolve

    assert OVERLAPS == ("central", "average") and resolve().overlap == "central"
    assert resolve(trained={"overlap": "average"}).overlap == "average"
    with pytest.raises(PunctkitError, match="--overlap 'mean': expected one of central, average"):
        resolve({"overlap": "mean"})
    with pytest.raises(PunctkitError, match="n-best lists come from the most central windows"):
        resolve({"nbest": 3}, trained={"overlap": "average"})


def test_torch_and_onnx_lookahead_labels_are_the_same(tiny_torch_engine, packed):
    from punctkit import load_model

    onnx = load_model(packed / "m.pkt", threads=1, backend="onnx")
    assert onnx.backend == "onnx"
    words = _words(packed)[:400]
    chunks = [words[k:k + 7] for k in range(0, 400, 7)]  # 7 words a chunk: batched windows too
    for L in (0, 3, None):
        got = [[lab for _, lab, _ in PunctStream(p, L).run(chunks)] for p in (tiny_torch_engine, onnx)]
        assert got[0] == got[1]


def test_onnx_streaming_runs_without_torch(packed):
    code = ("import sys\nfrom punctkit import load_model\n"
            f"p = load_model({str(packed / 'm.pkt')!r}, threads=1, backend='onnx')\n"
            "from punctkit.infer.stream import PunctStream\ns = PunctStream(p, 1)\n"
            "out = s.feed('so i think we should go now') + s.finish()\n"
            "print(len(out), 'torch' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["7", "False"]


def test_encoder_decoders_stream_only_unlimited(tiny_torch_engine):
    import dataclasses

    from punctkit.models.registry import build_model

    model = build_model({"type": "transformer_seq2seq", "n_layers": 1, "n_dec_layers": 1, "d_model": 16,
                         "n_heads": 2, "d_ff": 32}, vocab_size=tiny_torch_engine.frontend.vocab_size,
                        n_labels=len(tiny_torch_engine.inventory.labels), pad_id=tiny_torch_engine.frontend.pad_id,
                        embeddings=None)
    runner = dataclasses.replace(tiny_torch_engine.scorer.runner, model=model.eval())
    p = dataclasses.replace(tiny_torch_engine, scorer=dataclasses.replace(tiny_torch_engine.scorer, runner=runner))
    with pytest.raises(PunctkitError, match="encoder-decoder"):
        PunctStream(p, 4)
    PunctStream(p, None)


def _random_tagger(punct, conf: dict, frontend=None):
    """`punct` with another (untrained, seeded) tagger and its frontend, decoding through torch's predict."""
    import dataclasses

    import torch

    from punctkit.infer.backends import TorchRunner
    from punctkit.models.registry import build_model

    fe = frontend or punct.frontend
    torch.manual_seed(0)
    model = build_model(conf, vocab_size=fe.vocab_size, n_labels=len(punct.inventory.labels), pad_id=fe.pad_id,
                        embeddings=None).eval()
    run = TorchRunner(model, "cpu", 64, 1, 1, fe.pad_id)
    return dataclasses.replace(punct, scorer=dataclasses.replace(punct.scorer, frontend=fe, runner=run))


def _check_tagger(p, words: list[str]) -> None:
    """Unlimited streaming equals punctuate; look-ahead 2 commits on time and equals whole-stream decoding."""
    got = [x for _, _, x in PunctStream(p).run(words)]
    assert " ".join(got) == p.punctuate(" ".join(words))
    s = PunctStream(p, 2)
    labels = []
    for n, w in enumerate(words, 1):
        labels += [lab for _, lab, _ in s.feed(w)]
        assert len(labels) == max(0, n - 2)
    labels += [lab for _, lab, _ in s.finish()]
    want = decode_lookahead([words], p.frontend, p.window, p.step, 2, p.scorer.runner.predict,
                            inventory=p.inventory)[0]
    assert labels == [p.inventory.labels[i] for i in want] and len(set(labels)) > 1


def test_transformer_tagger_streams(tiny_torch_engine, packed):
    p = _random_tagger(tiny_torch_engine, {"type": "transformer_tagger", "n_layers": 1, "d_model": 32, "n_heads": 2,
                               "d_ff": 64})
    _check_tagger(p, _words(packed)[:150])


def test_ff2_streams(tiny_torch_engine, tmp_path):
    pytest.importorskip("transformers", reason="the plm extra (transformers) is not installed")
    from ff2_util import VOCAB, tiny_bert, tiny_tokenizer_dir
    from punctkit.text.plm import PlmFrontend, load_tokenizer

    fe = PlmFrontend(load_tokenizer(tiny_tokenizer_dir(tmp_path / "tok")))
    conf = {"type": "ff2", "plm": {"config": tiny_bert(fe.vocab_size)}, "tnp_layers": 1, "tnp_dim": 32,
            "tnp_heads": 4, "tnp_ff": 64, "fusion_ff": 64, "max_len": 64}
    p = _random_tagger(tiny_torch_engine, conf, fe)
    rng = random.Random(1)
    words = [rng.choice(VOCAB[5:]).lstrip("#") for _ in range(120)]
    _check_tagger(p, words)


def test_plm_tagger_streams(tiny_torch_engine, tmp_path):
    """The fast student's kind (a fine-tuned encoder, one label per word's first piece) streams as every
    tagger: unlimited equals punctuate, look-ahead 2 commits on time and equals whole-stream decoding."""
    pytest.importorskip("transformers", reason="the plm extra (transformers) is not installed")
    from ff2_util import VOCAB, tiny_bert, tiny_tokenizer_dir
    from punctkit.text.plm import PlmFrontend, load_tokenizer

    fe = PlmFrontend(load_tokenizer(tiny_tokenizer_dir(tmp_path / "tok")))
    p = _random_tagger(tiny_torch_engine, {"type": "plm_tagger", "plm": {"config": tiny_bert(fe.vocab_size)}}, fe)
    rng = random.Random(2)
    words = [rng.choice(VOCAB[5:]).lstrip("#") for _ in range(120)]
    _check_tagger(p, words)


# ------------------------------------------------------------------ the line protocol (property tests)

TOKENS = st.sampled_from(["so", "i", "think", "we", "should", "go", "now", "what", "do", "you", "know", "hello,",
                          "(yes)", "u.s.", "$5", "...", ",", "I'm", "don't", "well.", "ok?", "https://x.org"])
LINES = st.lists(st.lists(TOKENS, max_size=12).map(" ".join), max_size=8)


def _split_words(punct, text: str) -> list[str]:
    from punctkit.data.formats import split_text
    from punctkit.data.labels import default_substitution

    return split_text(text, punct.inventory, default_substitution(punct.inventory)).words


def _n_words(punct, text: str) -> int:
    return len(_split_words(punct, text))


def _committed(punct, lines: list[str], d: int) -> int:
    """Input words a stream has committed after `lines`, holding back `d` of the words the model reads
    (a model trained on IWSLT's tokens reads `don't` as two; an input word goes out whole)."""
    from punctkit.decode.model_words import ModelWords

    words = [w for t in lines for w in _split_words(punct, t)]
    m = ModelWords(words, punct.frontend.split_contractions)
    ends = m.starts[1:] if m.starts else range(1, len(words) + 1)
    return sum(1 for e in ends if e <= max(0, len(m.words) - d))


@settings(max_examples=25, deadline=None)
@given(LINES, st.sampled_from([0, 2, None]))
def test_stream_lines_plain_keep_every_word_once(tiny_torch_engine, lines, L):
    """One output line per input line (+ one for the words held at the end), every word once, in
    order; unlimited, the text of offline `punctuate`."""
    from punctkit.infer.stream import stream_lines

    out = list(stream_lines(PunctStream(tiny_torch_engine, L), [t + "\n" for t in lines], "text"))
    held = len(out) - len(lines)
    assert held in (0, 1) and (held == 0 or out[-1])
    d = delay(tiny_torch_engine.window, L)
    assert [len(o.split()) for o in out[: len(lines)]] == [
        _committed(tiny_torch_engine, lines[: k + 1], d) - _committed(tiny_torch_engine, lines[:k], d)
        for k in range(len(lines))]
    assert sum(len(o.split()) for o in out) == sum(_n_words(tiny_torch_engine, t) for t in lines)
    if L is None:
        assert " ".join(out).split() == tiny_torch_engine.punctuate("\n".join(lines)).split()


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.lists(TOKENS, max_size=10).map(" ".join), st.booleans()), max_size=8),
       st.booleans())
def test_stream_lines_json_commits_finals_only(tiny_torch_engine, items, flush):
    from punctkit.infer.stream import stream_lines

    lines = [json.dumps({"text": t, "final": f}) for t, f in items]
    out = list(stream_lines(PunctStream(tiny_torch_engine, None), lines, None, flush))
    finals = [t for t, f in items if f]
    assert sum(len(o.split()) for o in out) == sum(_n_words(tiny_torch_engine, t) for t in finals)
    if flush:  # each final whole on its line, nothing held
        assert [len(o.split()) for o in out] == [_n_words(tiny_torch_engine, t) for t in finals]
    else:
        assert len(out) - len(finals) in (0, 1)
        # each final is fed as punctuate reads a line of one stream (the input's case judged per line)
        assert " ".join(out).split() == tiny_torch_engine.punctuate("\n".join(finals)).split()


# ------------------------------------------------------------------ the command

def test_cli_stream_unlimited_equals_offline(packed):
    off = cli("punctuate", "-m", packed / "m.pkt", packed / "words.txt", "--threads", 1).stdout
    on = subprocess.run(PK + ["punctuate", "-m", str(packed / "m.pkt"), "--stream", "--threads", "1"],
                        input=(packed / "words.txt").read_text(), capture_output=True, text=True)
    assert on.returncode == 0, on.stderr
    assert on.stdout.split() == off.split()
    n_in = len((packed / "words.txt").read_text().splitlines())
    assert len(on.stdout.splitlines()) == n_in + 1  # one line per input line, then the words held


def _readline(proc: subprocess.Popen, timeout: float = 60.0) -> str:
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, "no output line in time"
    return proc.stdout.readline()


def test_cli_stream_writes_before_end_of_input(packed):
    """A pipe written word by word, slowly: each line's committed words come out before EOF."""
    words = _words(packed)[:12]
    proc = subprocess.Popen(PK + ["punctuate", "-m", str(packed / "m.pkt"), "--stream", "--lookahead", "2",
                                  "--threads", "1"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, bufsize=1)
    out = []
    try:
        for n, w in enumerate(words, 1):
            proc.stdin.write(w + "\n")
            proc.stdin.flush()
            time.sleep(0.05)
            line = _readline(proc)  # stdin still open: the answer cannot be waiting for EOF
            out.append(line.split())
            assert len(out[-1]) == (1 if n > 2 else 0)
        assert proc.poll() is None
        proc.stdin.close()
        rest = proc.stdout.read().split()
    finally:
        proc.kill() if proc.poll() is None else None
        proc.wait()
    got = [w for line in out for w in line] + rest
    assert [w.lower().strip(",.?!") for w in got] == words


def _json_lines(items: list[tuple[str, bool]]) -> str:
    return "".join(json.dumps({"text": t, "final": f}) + "\n" for t, f in items)


def test_cli_stream_json_partials_and_finals(packed):
    words = _words(packed)[:60]
    finals = [" ".join(words[k:k + 10]) for k in range(0, 60, 10)]
    items = []
    for f in finals:
        items += [(" ".join(f.split()[:3]) + " uh", False), (f, True)]
    stdin = _json_lines(items)
    run = lambda *a: subprocess.run(PK + ["punctuate", "-m", str(packed / "m.pkt"), "--stream", "--threads", "1",
                                          *a], input=stdin, capture_output=True, text=True)
    r = run("--lookahead", "0")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == len(finals)  # partials write nothing; look-ahead 0: nothing held at the end
    assert [" ".join(w.lower().strip(",.?!") for w in ln.split()) for ln in lines] == finals
    # unlimited and no flush: the context goes on across finals (the first ones are held)
    r = run()
    assert r.stdout.splitlines()[0] == "" and len(r.stdout.splitlines()) == len(finals) + 1
    assert r.stdout.split() == run("--lookahead", "inf").stdout.split()
    # --flush-on-final: every final comes out whole, and the next one starts a sentence
    r = run("--flush-on-final")
    lines = r.stdout.splitlines()
    assert len(lines) == len(finals) and all(ln[0].isupper() for ln in lines)
    assert [" ".join(w.lower().strip(",.?!") for w in ln.split()) for ln in lines] == finals


def test_cli_stream_errors_are_one_line(packed):
    m = packed / "m.pkt"
    bad = subprocess.run(PK + ["punctuate", "-m", str(m), "--stream"], input='{"text": "so i"}\n{"text": 3}\n',
                         capture_output=True, text=True)
    assert bad.returncode == 1 and bad.stderr.strip().splitlines()[-1].startswith("punctkit: error: standard input "
                                                                                  "line 2")
    assert "Traceback" not in bad.stderr
    for args, msg in [(["--lookahead", "2"], "go with --stream"), (["--stream", "--lookahead", "x"], "--lookahead"),
                      (["--stream", "--format", "ctm"], "--stream writes readable")]:
        r = cli("punctuate", "-m", m, *args, ok=False)
        assert r.returncode == 1 and msg in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def _stream(packed, data: bytes, *args: str) -> subprocess.CompletedProcess:
    """`punctuate --stream` over `data` on stdin (bytes in, bytes out)."""
    return subprocess.run(PK + ["punctuate", "-m", str(packed / "m.pkt"), "--stream", "--threads", "1", *args],
                          input=data, capture_output=True, timeout=120)


def _plain(out: bytes) -> list[str]:
    return [w.lower().strip(",.?!") for w in out.decode().split()]


def test_cli_stream_decodes_as_every_input_and_writes_the_words_held_before_an_error(packed):
    """stdin is read by the one decoder of every input (files.decode_lines): a byte that is not UTF-8 is
    one line naming line and offset (it was replaced, changing a word), after the words held come out;
    --encoding reads it; a UTF-8 BOM is not part of the first word; a JSON line nested thousands deep
    (json alone overflows the stack) is one line too."""
    words = _words(packed)[:6]
    first = " ".join(words) + "\n"
    data = first.encode() + b"so caf\xe9 ok\n"
    r = _stream(packed, data)
    assert r.returncode == 1 and r.stderr.decode().splitlines() == [
        f"punctkit: error: stdin:2: byte 0xe9 at offset {len(first) + 6} is not UTF-8; give --encoding latin-1 "
        f"(or the file's encoding) or convert it to UTF-8"]
    assert _plain(r.stdout) == words  # unlimited look-ahead held them all: written before the error
    r = _stream(packed, data, "--encoding", "latin-1")
    assert r.returncode == 0 and _plain(r.stdout) == words + ["so", "café", "ok"]
    deep = '{"text": ' + "[" * 5000 + "]" * 5000 + "}\n"
    r = _stream(packed, codecs.BOM_UTF8 + (json.dumps({"text": first.strip()}) + "\n" + deep).encode())
    assert r.returncode == 1 and r.stderr.decode().splitlines() == [
        "punctkit: error: standard input line 2: not JSON (arrays and objects nested more than 100 deep, "
        "column 109); give one object {\"text\": ..., \"final\": true|false} per line, or plain words"]
    assert _plain(r.stdout) == words  # the BOM did not hide the first line's JSON, nor stay in a word


@pytest.mark.parametrize("enc", ["utf-8", "utf-16"])
def test_cli_stream_answers_lines_shorter_than_a_bom_at_once(packed, enc):
    """Each line is answered before the next is written, however short (the decoder never waits for the
    four bytes a BOM may take once the bytes cannot start one), with a UTF-16 BOM too."""
    proc = subprocess.Popen(PK + ["punctuate", "-m", str(packed / "m.pkt"), "--stream", "--lookahead", "0",
                                  "--threads", "1"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, bufsize=0)
    try:
        for k, w in enumerate(["i", "so", "we"]):
            proc.stdin.write((w + "\n").encode(enc if k == 0 else enc.replace("utf-16", "utf-16-le")))
            assert _plain(_readline(proc)) == [w]  # stdin still open: no answer waits for more bytes
        proc.stdin.close()
        assert proc.wait(60) == 0 and proc.stdout.read() == b""
    finally:
        proc.kill() if proc.poll() is None else None
        proc.wait()


def test_lookahead_sweep_runs_and_its_unlimited_row_is_offline_decoding(packed, tmp_path):
    """The benchmark script on the tiny model: its `inf` F1 is the score of offline `punctuate`."""
    from conftest import ROOT
    from punctkit.score import score_files

    test = tmp_path / "test"
    r = subprocess.run([sys.executable, str(ROOT / "local" / "iwslt" / "lookahead_sweep.py"), str(packed / "m.pkt"),
                        "--test", str(packed / "test"), "--lookahead", "0,inf", "--out", str(test), "--threads", "1"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rows = json.loads((test / "sweep.json").read_text())[str(packed / "m.pkt")]
    assert [x["lookahead"] for x in rows] == [0, "inf"] and rows[0]["delay_words"] == 0
    assert (test / "sweep.png").read_bytes()[:4] == b"\x89PNG" and "| inf |" in (test / "sweep.md").read_text()
    words = tmp_path / "words.txt"
    utts, _ = read(packed / "test")
    words.write_text("".join(" ".join(u.words) + "\n" for u in utts))
    cli("punctuate", "-m", packed / "m.pkt", words, "--format", "twocol", "--threads", 1, "-o", tmp_path / "hyp")
    assert rows[1]["f1"] == pytest.approx(score_files(packed / "test", tmp_path / "hyp")["overall"]["f1"])
