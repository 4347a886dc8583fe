"""A network that reads speaker turns and pauses (issue #79: `model: {boundary_input: true}`): trained on a data
directory's utt2spk, segments and ctm with turns and times dropped at random (train/boundary_input.py), packed with
its ONNX graph (a `boundaries` input), and run by the engine on every path."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import IWSLT
from punct_util import cli, cli_error, tiny_conf
from punctkit.data.boundaries import NOTHING, stream_boundaries, window_boundaries
from punctkit.data.streams import Stream, Window, make_streams
from punctkit.files import PunctkitError
from punctkit.train.boundary_input import BoundaryDropout, BoundaryInput

MODEL = {"type": "drnn_lwma", "n_layers": 1, "n_heads": 1, "d_model": 16, "dropout": 0.1, "boundary_input": True}
PLM_MODEL = {"type": "plm_tagger", "dropout": 0.1, "boundary_input": True}  # plm: a tiny BERT of the data's words


def timed_dir(src: Path, out: Path) -> Path:
    """A copy of data directory `src` (100-word blocks of one talk) as a recording of two speakers taking turns
    block by block: utt2spk, spk2utt, segments and a ctm whose pauses follow the marks (1.2 s after a period,
    0.3 s after a comma, none elsewhere)."""
    out.mkdir(parents=True)
    text = [ln.split() for ln in (src / "text").read_text().splitlines()]
    labels = {ln.split()[0]: ln.split()[1:] for ln in (src / "labels").read_text().splitlines()}
    for name in ("text", "labels"):
        (out / name).write_text((src / name).read_text())
    for extra in src.iterdir():
        if extra.name not in ("text", "labels", "utt2spk", "spk2utt") and extra.is_file():
            (out / extra.name).write_text(extra.read_text())
    spk = {u[0]: f"spk{k % 2}" for k, u in enumerate(text)}
    (out / "utt2spk").write_text("".join(f"{u} {s}\n" for u, s in spk.items()))
    (out / "spk2utt").write_text("".join(f"{s} {' '.join(u for u in spk if spk[u] == s)}\n" for s in ("spk0", "spk1")))
    segs, ctm, t = [], [], 0.0
    for uttid, *words in text:
        start, at = t, 0.0
        for w, lab in zip(words, labels[uttid]):
            ctm.append(f"{uttid} 1 {at:.2f} 0.25 {w}\n")
            at += 0.25 + (1.2 if "PERIOD" in lab else 0.3 if "COMMA" in lab else 0.0)
        t = start + at + 0.5
        segs.append(f"{uttid} talk {start:.2f} {start + at:.2f}\n")
    (out / "segments").write_text("".join(segs))
    (out / "ctm").write_text("".join(ctm))
    return out


def plm_conf(d: Path, train_dir: Path) -> dict:
    """tiny_conf of PLM_MODEL over a tiny BERT (tests/ff2_util.py) whose vocabulary is `train_dir`'s words, saved in
    d/bert, and its PLM frontend."""
    from ff2_util import tiny_bert_dir

    words = [w for ln in (train_dir / "text").read_text().splitlines() for w in ln.split()[1:]]
    bert = tiny_bert_dir(d / "bert", words)
    conf = tiny_conf({**PLM_MODEL, "plm": str(bert)}, epochs=2)
    return {**conf, "frontend": {"kind": "plm", "path": str(bert)}}


@pytest.fixture(scope="module", params=["drnn_lwma", "plm_tagger"])
def trained(tmp_path_factory, request) -> Path:
    """A tiny boundary-reading network (each type that reads boundaries: a DRNN-LWMA, a plm_tagger over a tiny
    BERT) trained on 3000 timed words of dev2012 (exp/) and packed with its ONNX graph (m.pkt); the timed dev data
    (valid/) and 600 words of test2011 as plain text (words.txt)."""
    if not (IWSLT / "test2011").is_file():
        pytest.skip(f"IWSLT reference data not found at {IWSLT}")
    from punctkit.data.prepare import prepare
    from punctkit.fit import train

    d = tmp_path_factory.mktemp(f"boundary_input_{request.param}")
    prepare([IWSLT / "dev2012"], d / "plain_train", block_len=100, lines=(1, 3000))
    prepare([IWSLT / "dev2012"], d / "plain_valid", block_len=100, lines=(3001, 3600))
    conf = tiny_conf(dict(MODEL), epochs=2) if request.param == "drnn_lwma" else plm_conf(d, d / "plain_train")
    train(conf, timed_dir(d / "plain_train", d / "train"), timed_dir(d / "plain_valid", d / "valid"), d / "exp",
          quiet=True)
    cli("pack", d / "exp", "-o", d / "m.pkt", "--onnx")
    words = [ln.split("\t")[0] for ln in (IWSLT / "test2011").read_text().splitlines()[:600]]
    (d / "words.txt").write_text(" ".join(w for w in words if w) + "\n")
    return d


def labels_of(pkt: Path, units, backend: str, zeroed: bool = False) -> list[list[str]]:
    """Each unit's labels from package `pkt` run on `backend`; `zeroed`: its network's boundary table set to zero
    (the network as if it read nothing of turns and pauses; torch only)."""
    import punctkit

    engine = punctkit.load(pkt, backend=backend).engine
    if zeroed:
        model = engine.scorer.runner.model
        model.boundary.weight.data.zero_()
    return [d.labels for d in engine.label(units)]


def distributions(pkt: Path, data: Path) -> list:
    """The engine's labelled units, with their label distributions (`rows`), of data directory `data`'s streams
    (its turns and pauses read, as `punctkit decode` reads them) from package `pkt`."""
    import punctkit
    from punctkit.data.datadir import read_data_dir
    from punctkit.data.timing import read_timing

    dd = read_data_dir(data, need_labels=False)
    return list(punctkit.load(pkt).engine.label(make_streams(dd, None, read_timing(dd)), probs=True))


# ------------------------------------------------------------------ the training input

def test_stream_boundaries_of_a_hand_made_stream():
    """The boundary id after each word from its utterance's speaker and the words' times; the last word NOTHING;
    a stream that says nothing has nothing after every word."""
    s = Stream("rec", ["u1", "u2"], [0, 2], ["yes", "no", "so", "what"], [0] * 4, speakers=["A", "B"],
               times=[(0.0, 0.2), (0.21, 0.4), (1.5, 1.7), (None, None)])
    # yes->no: same speaker, 0.01 s (bucket 1); no->so: turn, 1.1 s (bucket 5); so->what: unknown time
    assert stream_boundaries(s) == [1, 6 + 5, 0, NOTHING]
    bare = Stream("rec", ["u1", "u2"], [0, 2], s.words, s.labels)
    assert stream_boundaries(bare) == [NOTHING] * 4
    turns_only = Stream("rec", ["u1", "u2"], [0, 2], s.words, s.labels, speakers=["A", "B"])
    assert stream_boundaries(turns_only) == [0, 6, 0, 0]


def test_boundary_dropout_is_checked_and_drawn_per_stream_and_pass():
    assert BoundaryDropout.from_option({"turns": 0.5}) == BoundaryDropout(0.5, 0.0)
    for bad in ({"turns": 1.5, "times": 0.1}, {"pauses": 0.2}, [0.3, 0.3], {"turns": "x"}, None):
        with pytest.raises(PunctkitError, match="train.boundary_dropout"):
            BoundaryDropout.from_option(bad)
    s = Stream("rec", ["u1", "u2"], [0, 2], ["yes", "no", "so", "what"], [0] * 4, speakers=["A", "B"],
               times=[(0.0, 0.2), (0.21, 0.4), (1.5, 1.7), (1.8, 2.0)])
    full = stream_boundaries(s)
    assert window_boundaries(BoundaryInput([s]))(s, Window(0, 1, 4))["boundaries"].tolist() == full[1:]
    dropped = window_boundaries(BoundaryInput([s], BoundaryDropout(1.0, 1.0)))
    assert dropped(s, Window(0, 0, 4))["boundaries"].tolist() == [0] * 4
    epoch = [0]
    half = window_boundaries(BoundaryInput([s] * 40, BoundaryDropout(0.5, 0.5), seed=3, epoch=lambda: epoch[0]))
    draws = []
    for epoch[0] in range(4):
        draws.append([tuple(half(s, Window(k, 0, 4))["boundaries"]) for k in range(40)])
    again = window_boundaries(BoundaryInput([s] * 40, BoundaryDropout(0.5, 0.5), seed=3, epoch=lambda: 2))
    assert [tuple(again(s, Window(k, 0, 4))["boundaries"]) for k in range(40)] == draws[2]  # deterministic
    assert draws[0] != draws[1]  # drawn anew each pass
    kinds = {ids for d in draws for ids in d}
    turns_only = stream_boundaries(Stream("r", s.uttids, s.starts, s.words, s.labels, speakers=["A", "B"]))
    times_only = stream_boundaries(Stream("r", s.uttids, s.starts, s.words, s.labels, times=s.times))
    assert kinds == {tuple(full), tuple(turns_only), tuple(times_only), (0, 0, 0, 0)}  # all four are learnt


def test_a_bad_boundary_dropout_is_one_line(tmp_path):
    (tmp_path / "d").mkdir()
    for name in ("text", "labels"):
        (tmp_path / "d" / name).write_text("u1 a b\n" if name == "text" else "u1 O PERIOD\n")
    (tmp_path / "c.yaml").write_text("model: {type: drnn_lwma, boundary_input: true}\n"
                                     "train: {boundary_dropout: {turns: 2}}\n")
    r = cli("train", "--config", tmp_path / "c.yaml", "--train-dir", tmp_path / "d", "--valid-dir", tmp_path / "d",
            "--exp", tmp_path / "exp", ok=False)
    cli_error(r, "train.boundary_dropout", "turns")


# ------------------------------------------------------------------ trained, packed, run

def test_trained_package_has_the_input_and_its_labels_are_torchs(trained):
    """The graph has a `boundaries` input; onnxruntime's labels are torch's on the timed data directory (turns
    and pauses read) and on plain text; the exp's recorded config has the dropout."""
    import onnx

    from punctkit.package import read_package

    pkg = read_package(trained / "m.pkt")
    graph = onnx.load_from_string(pkg.onnx)
    inputs = {i.name: i for i in graph.graph.input}
    assert "boundaries" in inputs and inputs["boundaries"].type.tensor_type.elem_type == onnx.TensorProto.INT64
    conf = (trained / "exp" / "config.yaml").read_text()
    assert "boundary_dropout" in conf and "boundary_input: true" in conf
    text = (trained / "words.txt").read_text()
    assert labels_of(trained / "m.pkt", [text], "onnx") == labels_of(trained / "m.pkt", [text], "torch")
    from punctkit.data.datadir import read_data_dir
    from punctkit.data.timing import read_timing

    dd = read_data_dir(trained / "valid")

    streams = make_streams(dd, None, read_timing(dd))
    assert any(k != NOTHING for k in stream_boundaries(streams[0]))
    assert labels_of(trained / "m.pkt", streams, "onnx") == labels_of(trained / "m.pkt", streams, "torch")


def test_plain_text_is_labelled_as_by_the_network_without_the_input(trained):
    """Without turns or times every id is NOTHING, whose row stays zero through training: the labels are those
    of the same network with its boundary table zeroed (the rows it learnt for turns and pauses not read)."""
    import punctkit

    text = (trained / "words.txt").read_text()
    assert labels_of(trained / "m.pkt", [text], "onnx") == labels_of(trained / "m.pkt", [text], "torch", zeroed=True)

    model = punctkit.load(trained / "m.pkt", backend="torch").engine.scorer.runner.model
    assert float(np.abs(model.boundary.weight.detach().numpy()[0]).max()) == 0.0  # NOTHING untrained
    assert float(np.abs(model.boundary.weight.detach().numpy()[1:]).max()) > 0.0  # the others learnt


def test_every_path_feeds_the_network_the_turns_and_pauses(trained, tmp_path):
    """The engine on a data directory's streams (as `punctkit decode` runs it), `decode` itself and a stream fed
    word by word with speakers and times (--stream, serve) give the same labels; the network's distributions
    with turns and pauses are not those of the same words as plain text (it reads them)."""
    import punctkit
    from punctkit.data.datadir import read_data_dir
    from punctkit.data.timing import read_timing
    from punctkit.infer.stream import PunctStream

    engine = punctkit.load(trained / "m.pkt").engine
    dd = read_data_dir(trained / "valid")
    stream = make_streams(dd, None, read_timing(dd))[0]
    # a short stream (one window: what streaming decides at its end is what the whole stream's decode decides)
    n = stream.starts[1] + 12
    short = Stream("rec", stream.uttids[:2], stream.starts[:2], stream.words[:n], stream.labels[:n],
                   speakers=stream.speakers[:2], times=stream.times[:n])
    assert any(k != NOTHING for k in stream_boundaries(short)[:-1])
    offline = [d for d in engine.label([short], probs=True)]
    labels = [lab for d in offline for lab in d.labels]
    fed = PunctStream(engine)
    got = []
    for k, (w, t) in enumerate(zip(short.words, short.times)):
        got += fed.feed(w, short.speakers[0 if k < short.starts[1] else 1], t)
    got += fed.finish()
    assert [c.word for c in got] == short.words and [c.label for c in got] == labels
    plain = [d for d in engine.label([" ".join(short.words)], probs=True)]
    assert not np.allclose(np.concatenate([d.rows for d in offline]), np.concatenate([d.rows for d in plain]))

    cli("decode", trained / "m.pkt", trained / "valid", tmp_path / "out")
    want = [d.labels for d in engine.label(make_streams(dd, None, read_timing(dd)))]
    got_dd = {ln.split()[0]: ln.split()[1:] for ln in (tmp_path / "out" / "labels").read_text().splitlines()}
    order = [u for s in make_streams(dd, None, read_timing(dd)) for u in s.uttids]
    assert [got_dd[u] for u in order] == want


def test_an_nlp_file_stream_lines_and_a_data_dir_give_the_same_labels(trained, tmp_path):
    """An Earnings-22 call's head with its speakers and word times as an NLP file (`punctuate`), as a data directory
    (an utterance a turn: utt2spk, segments, ctm; `decode`) and as a streaming recognizer's JSON lines, a word a
    line with its `speaker`, `start` and `end` (`punctuate --stream`): the same labels and the same text; the same
    words without speakers and times are labelled otherwise (the turns and pauses reach the network)."""
    import json

    from test_decode_turns import CALL, call_turns, decoded, punctuated, write_data_dir, write_nlp

    if not CALL.is_file():
        pytest.skip(f"Earnings-22 calls not found at {CALL.parent}")
    pkt, turns = trained / "m.pkt", call_turns(CALL, 600)
    assert len(turns) >= 3
    offline = punctuated(pkt, write_nlp(tmp_path / "call.nlp", turns), tmp_path / "p.tsv")
    write_data_dir(tmp_path / "dd", turns)
    labels = decoded(pkt, tmp_path / "dd", tmp_path / "d.tsv")
    assert len(labels) == sum(len(t.words) for t in turns) and labels == offline
    assert len(set(labels)) > 1  # the network punctuates: the comparisons below are not of all-O
    write_data_dir(tmp_path / "plain", turns, speakers=False, segments=False, ctm=False)
    assert len(decoded(pkt, tmp_path / "plain", tmp_path / "plain.tsv")) == len(labels)
    timed, plain = (np.concatenate([d.rows for d in distributions(pkt, tmp_path / name)]) for name in ("dd", "plain"))
    assert timed.shape == plain.shape and np.abs(timed - plain).max() > 1e-3

    (tmp_path / "call.jsonl").write_text("".join(
        json.dumps({"text": w, "speaker": t.speaker, "start": round(a, 4), "end": round(b, 4)}) + "\n"
        for t in turns for w, a, b in t.words))
    streamed = cli("punctuate", tmp_path / "call.jsonl", "-m", pkt, "--stream", "-q").stdout
    cli("punctuate", tmp_path / "call.nlp", "-m", pkt, "--format", "readable", "-o", tmp_path / "p.txt", "-q")
    assert streamed.split() == (tmp_path / "p.txt").read_text(encoding="utf-8").split()
