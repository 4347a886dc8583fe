"""`punctkit pack` / `punctkit punctuate` with a tiny transformer tagger trained here in a few seconds."""
from __future__ import annotations

import json
import subprocess
import tracemalloc
import zipfile
from pathlib import Path

import pytest
import yaml

from conftest import IWSLT
from label_util import words_labels
from punct_util import cli, json_without, tiny_conf, train_tiny
from punctkit.data.formats import read
from punctkit.data.prepare import prepare
from punctkit.data.tokenize import detokenize, display_words
from punctkit.files import PunctkitError

TINY = tiny_conf({"type": "transformer_tagger", "n_layers": 1, "d_model": 32, "n_heads": 2, "d_ff": 64,
                  "dropout": 0.1}, epochs=3)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A model dir trained on 8000 words of dev2012, a test2011 slice as a data dir, and the packed model."""
    d = tmp_path_factory.mktemp("punct")
    cli("pack", train_tiny(d, TINY), "-o", d / "tiny.pkt")
    return d


@pytest.fixture(scope="module")
def tagger_engine(tiny):
    from punctkit import load_model

    return load_model(tiny / "tiny.pkt", threads=1)


def test_words_of_test2011_score_as_decode(tiny):
    """Packed model + plain text in (100 words a line, small chunks) == decode on the data dir + score."""
    from punctkit.decode_data import decode_dir
    from punctkit.score import score_files

    decode_dir(tiny / "exp", tiny / "test", tiny / "dec.twocol", fmt="twocol")
    utts, _ = read(tiny / "test")
    (tiny / "words.txt").write_text("".join(" ".join(u.words) + "\n" for u in utts))
    cli("punctuate", "-m", tiny / "tiny.pkt", tiny / "words.txt", "-o", tiny / "hyp.twocol", "--format", "twocol",
        "--chunk-words", 100, "--threads", 1)
    ref = score_files(tiny / "test", tiny / "dec.twocol")
    hyp = score_files(tiny / "test", tiny / "hyp.twocol")
    assert hyp["overall"]["f1"] > 0  # the model does predict marks, so equality is not trivial
    assert hyp["overall"] == ref["overall"]
    dec, _ = read(tiny / "dec.twocol")
    got, _ = read(tiny / "hyp.twocol")
    assert [lab for u in got for lab in u.labels] == [lab for u in dec for lab in u.labels]


def test_chunked_stream_equals_whole_stream(tagger_engine):
    """Segmenting a stream (any chunk size, any length) changes no label."""
    from punctkit.data.streams import IGNORE, Stream
    from punctkit.decode.decoder import decode_streams_rows
    from punctkit.decode.stream_end import close_ids

    utts, _ = read(IWSLT / "test2011", "twocol")
    words = [w for u in utts for w in u.words]
    for n in (7, 40, 41, 139, 140, 141, 1000):
        got, = decode_streams_rows(tagger_engine.scorer.runner.model, tagger_engine.frontend,
                                   [Stream("s", ["s"], [0], words[:n], [IGNORE] * n)], tagger_engine.window,
                                   tagger_engine.step, 32)
        # the stream's end ends a sentence (decode/stream_end.py)
        inventory = tagger_engine.inventory
        expect = [inventory.labels[i] for i in close_ids(got.best, got.rows, inventory, closes=True)]
        for chunk in (1, 20, 100, 333):
            tagger_engine.chunk_words = chunk
            assert words_labels(tagger_engine, words[:n]) == expect, (n, chunk)
    tagger_engine.chunk_words = 10000


def _peak_bytes(punct, src: Path, out: Path):
    from punctkit.punctuator import punctuate_file

    tracemalloc.start()
    try:
        stats = punctuate_file(punct, src, out)
        return tracemalloc.get_traced_memory()[1], stats
    finally:
        tracemalloc.stop()


def test_long_input_runs_in_bounded_memory(tagger_engine, tmp_path):
    """Python memory peak of 50k words is that of 10k words (within 1 MB, 25 bytes for each word more): nothing
    grows with the input."""
    utts, _ = read(IWSLT / "test2011", "twocol")
    words = [w for u in utts for w in u.words]
    paths = {}
    for n in (10000, 50000):
        paths[n] = tmp_path / f"in{n}.txt"
        with open(paths[n], "w") as f:
            for i in range(0, n, 25):
                f.write(" ".join(words[(i + k) % len(words)] for k in range(25)) + "\n")
    tagger_engine.chunk_words = 1000
    try:
        small, _ = _peak_bytes(tagger_engine, paths[10000], tmp_path / "o10.txt")
        big, stats = _peak_bytes(tagger_engine, paths[50000], tmp_path / "o50.txt")
    finally:
        tagger_engine.chunk_words = 10000
    assert stats.words == 50000 and stats.utterances == 2000
    assert len((tmp_path / "o50.txt").read_text().splitlines()) == 2000
    assert big < small + 1_000_000, (small, big)


def test_ctm_in_ctm_and_text_out(tiny, tagger_engine, tmp_path):
    utts, _ = read(IWSLT / "test2011", "twocol")
    words = [w for u in utts for w in u.words][:300]
    lines, t = [], 0.0
    for k in range(3):
        for i, w in enumerate(words[k * 100:(k + 1) * 100]):
            lines.append(f"talk{k} A {t:.2f} 0.25 {w} 0.9{i % 10}")
            t += 0.3
            if k == 1 and i == 10:
                lines.append(f"talk{k} A {t:.2f} 0.01 , 0.50")  # a bare mark: goes to the word before
    (tmp_path / "in.ctm").write_text("\n".join(lines) + "\n")
    r = cli("punctuate", "-m", tiny / "tiny.pkt", tmp_path / "in.ctm", "--format", "ctm", "-o", tmp_path / "out.ctm",
            "--keep-input-marks")
    assert "1 tokens without a word dropped" in r.stderr
    from punctkit.punctuator import punctuate_file

    punctuate_file(tagger_engine, tmp_path / "in.ctm", tmp_path / "out.txt", keep_input_marks=True)
    out_ctm = [ln.split() for ln in (tmp_path / "out.ctm").read_text().splitlines()]
    src = [ln.split() for ln in lines if " , " not in ln]
    assert len(out_ctm) == 300
    for o, s in zip(out_ctm, src):
        assert o[:4] == s[:4] and o[5:] == s[5:]  # id, channel, times, confidence unchanged
        assert o[4].rstrip(",.?").lower() == s[4]
    text = (tmp_path / "out.txt").read_text().splitlines()
    assert [ln.split()[0] for ln in text] == ["talk0", "talk1", "talk2"]
    for k, line in enumerate(text):  # the same cased, marked words as the CTM (only the spacing differs)
        assert "".join(line.split()[1:]) == "".join(o[4] for o in out_ctm[k * 100:(k + 1) * 100])
    assert out_ctm[110][4].endswith(",")  # word 11 of talk1 kept the comma given as its own token (kept marks)
    assert any(o[4][-1] in ".?" for o in out_ctm) and text[0].split()[1][0].isupper()


def test_jsonl_and_kaldi_text(tiny, tagger_engine, tmp_path):
    words = "so i 'm here today and we do n't know what to do about it do you know".split()
    obj = {"id": "a1", "words": [{"word": w, "start": i * 0.5, "end": i * 0.5 + 0.4} for i, w in enumerate(words)]}
    (tmp_path / "in.jsonl").write_text(json.dumps(obj) + "\n" + json.dumps({"id": "a2", "text": "hello there"}) + "\n")
    (tmp_path / "text").write_text("a1 " + " ".join(words) + "\na2 hello there\n")
    from punctkit.punctuator import punctuate_file

    punctuate_file(tagger_engine, tmp_path / "in.jsonl", tmp_path / "out.jsonl", fmt="jsonl")
    punctuate_file(tagger_engine, tmp_path / "text", tmp_path / "out.txt")
    got = [json.loads(ln) for ln in (tmp_path / "out.jsonl").read_text().splitlines()]
    # the input words as they came, one space apart (split contractions stay split: tests/contracts/test_passthrough.py)
    expect = [" ".join(display_words(ws, words_labels(tagger_engine, ws))[0]) for ws in (words, ["hello", "there"])]
    assert [g["text"] for g in got] == expect
    assert (tmp_path / "out.txt").read_text() == f"a1 {expect[0]}\na2 {expect[1]}\n"
    assert [w["word"] for w in got[0]["words"]] == words and got[0]["words"][0]["start"] == 0.0
    assert [w["label"] for w in got[0]["words"]] == got[0]["labels"]
    with pytest.raises(PunctkitError, match=r"in.jsonl:2 \(utterance a2\): no word has a start time"):
        punctuate_file(tagger_engine, tmp_path / "in.jsonl", tmp_path / "j.ctm", fmt="ctm")
    assert not (tmp_path / "j.ctm").exists()  # nothing half-written
    (tmp_path / "in.jsonl").write_text(json.dumps(obj) + "\n")
    punctuate_file(tagger_engine, tmp_path / "in.jsonl", tmp_path / "j.ctm", fmt="ctm")
    assert (tmp_path / "j.ctm").read_text().splitlines()[1].startswith("a1 1 0.500 0.400 I")
    (tmp_path / "bad.jsonl").write_text('{"id": "x", "words": [{"start": 1}]}\n')
    with pytest.raises(PunctkitError, match=r"bad.jsonl:1 \(utterance x\)"):
        punctuate_file(tagger_engine, tmp_path / "bad.jsonl", tmp_path / "o")


def test_stdin_encoding_and_content_detection(tiny, tmp_path):
    """`punctuate -` decodes stdin's bytes like a file: Latin-1 is a one-line error naming the
    line and offset, read with --encoding; a CTM is detected by its content, whatever its name."""
    from punct_util import PK

    def run(*args, data: bytes | None) -> subprocess.CompletedProcess:
        return subprocess.run(PK + ["punctuate", "-m", str(tiny / "tiny.pkt"), *map(str, args)], input=data,
                              capture_output=True)

    data = "so we went to the café and then we left\n".encode("latin-1")
    r = run("-", data=data)
    offset = data.index("é".encode("latin-1"))
    assert r.returncode == 1 and r.stderr.decode().strip().splitlines() == [
        f"punctkit: error: stdin:1: byte 0xe9 at offset {offset} is not UTF-8; give --encoding "
        "latin-1 (or the file's encoding) or convert it to UTF-8"]
    r = run("-", "--encoding", "latin-1", data=data)
    assert r.returncode == 0 and "café" in r.stdout.decode("utf-8").lower()
    ctm = "".join(f"u1 A {k * 0.3:.2f} 0.25 {w}\n" for k, w in enumerate("so we went home".split()))
    (tmp_path / "asr.txt").write_text(ctm)
    for args, data in (([tmp_path / "asr.txt"], None), (["-"], ctm.encode())):
        r = run(*args, "--format", "ctm", data=data)
        assert r.returncode == 0, r.stderr
        assert [ln.split()[:4] for ln in r.stdout.decode().splitlines()] == [ln.split()[:4] for ln in ctm.splitlines()]


def test_detokenize():
    assert detokenize("i 'm sure we do n't".split(), ["O", "O", "O", "O", "O", "PERIOD"]) == "I'm sure we don't."
    words = "so what is it it 's here yes , i know".split()
    labels = ["COMMA", "O", "O", "QUESTION", "O", "O", "PERIOD", "EXCLAMATION", "O", "O", "DOTS"]
    # one space after each mark, none before; capitals only after . ? ! ... (and for I)
    assert detokenize(words, labels) == "So, what is it? It's here. Yes! , I know..."
    assert detokenize(["a", "b"], ["COMMA", "O"], capitalize=False) == "a, b"
    assert detokenize(["and", "then"], ["O", "O"], sentence_start=False) == "and then"
    # a mark between a word and its clitic keeps them apart
    assert detokenize(["do", "n't"], ["COMMA", "PERIOD"]) == "Do, n't."
    # case-aware labels: true casing from the model (U capitalised), not from the position
    assert detokenize(["hello", "john", "smith", "and", "nasa"], ["U_COMMA", "U_O", "U_PERIOD", "L_O", "U_O"]) \
        == "Hello, John Smith. and Nasa"


def test_keep_input_marks(tagger_engine):
    text = "so the , thing is that we do n't know what to do about it and we are here today to talk about it"
    free = tagger_engine.punctuate(text.replace(" ,", ""))
    assert tagger_engine.punctuate(text) == free  # given marks and case are removed and predicted again by default
    assert tagger_engine.punctuate(text.upper().replace(" ,", " ;")) == free
    kept = tagger_engine.punctuate(text + "?", keep_input_marks=True)
    assert "the, thing" in kept.lower() and kept.endswith("it?")
    # every other slot is predicted as without the flag
    words = text.replace(" ,", "").split()
    fixed = [None] * len(words)
    fixed[1], fixed[-1] = "COMMA", "QUESTION"
    labels = words_labels(tagger_engine, words, fixed)
    free_labels = words_labels(tagger_engine, words)
    assert labels[1] == "COMMA" and labels[-1] == "QUESTION"
    assert [x for i, x in enumerate(labels) if i not in (1, len(words) - 1)] == \
        [x for i, x in enumerate(free_labels) if i not in (1, len(words) - 1)]


def test_packed_model_is_self_contained(tiny, tmp_path):
    from punctkit import load_model

    with zipfile.ZipFile(tiny / "tiny.pkt") as z:
        names = set(z.namelist())
        card = json.loads(z.read("punctkit.json"))["card"]
    assert {"punctkit.json", "config.yaml", "model.pt", "frontend/frontend.yaml", "frontend/vocab.txt"} <= names
    assert card["model"] == "transformer_tagger" and card["inventory"] == "4class" and "train" in card["training_data"]
    from punctkit.packing import pack
    from punctkit.score import score_files, write_score

    write_score(score_files(tiny / "test", tiny / "test"), tmp_path / "decode_test_ref")
    pack(tiny / "exp", tmp_path / "m.pkt", "model.best.pt", [tmp_path / "decode_test_ref" / "score.json"], "dev2012")
    p = load_model(tmp_path / "m.pkt")
    assert p.card["checkpoint"] == "model.best.pt" and p.card["training_data"] == "dev2012"
    assert p.card["results"]["decode_test_ref"]["f1"] == 100.0
    assert words_labels(p, ["hello"] * 5) == words_labels(load_model(tiny / "tiny.pkt"), ["hello"] * 5)


def test_bad_packed_models_are_one_line_errors(tiny, tmp_path):
    from punctkit import load_model

    data = (tiny / "tiny.pkt").read_bytes()
    (tmp_path / "trunc.pkt").write_bytes(data[: len(data) // 2])
    (tmp_path / "text.pkt").write_text("hello\n")
    with zipfile.ZipFile(tiny / "tiny.pkt") as z, zipfile.ZipFile(tmp_path / "v99.pkt", "w") as out:
        for n in z.namelist():
            body = z.read(n)
            if n == "punctkit.json":
                body = json.dumps(dict(json.loads(body), format_version=99)).encode()
            out.writestr(n, body)
    for name, why in (("trunc.pkt", "truncated"), ("text.pkt", "not a packed punctkit model"),
                      ("v99.pkt", "format version 99"), ("missing.pkt", "not found")):
        with pytest.raises(PunctkitError, match=why) as e:
            load_model(tmp_path / name)
        assert "\n" not in str(e.value)
    r = cli("punctuate", "-m", tmp_path / "v99.pkt", tmp_path / "text.pkt", ok=False)
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1 and "v99.pkt" in r.stderr



def test_plm_model_packs_to_run_offline(tiny, tmp_path):
    """A PLM tagger named by a local directory runs from its packed file after that directory is gone."""
    transformers = pytest.importorskip("transformers", reason="the plm extra (transformers) is not installed")
    import shutil

    import torch

    from punctkit import load_model
    from punctkit.data.streams import IGNORE, Stream
    from punctkit.decode.decoder import decode_streams_rows
    from punctkit.decode.stream_end import close_ids
    from punctkit.expdir import load_experiment_model
    from punctkit.fit import train

    plm = tmp_path / "bert"
    common = sorted({w for u in read(tiny / "train")[0] for w in u.words if w.isalpha()})[:300]
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + common
    bert = {"vocab_size": len(vocab), "hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
            "intermediate_size": 64, "max_position_embeddings": 128}
    torch.manual_seed(0)
    transformers.BertModel(transformers.BertConfig(**bert)).save_pretrained(str(plm))
    (plm / "vocab.txt").write_text("\n".join(vocab) + "\n")
    (plm / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "BertTokenizer", "do_lower_case": True}))
    conf = {"frontend": {"kind": "plm", "path": str(plm)}, "model": {"type": "plm_tagger", "plm": str(plm)},
            "train": {"lr": 0.001, "batch_size": 16, "window": 40, "epochs": 1, "threads": 1},
            "decode": {"window": 40, "step": 20, "batch_size": 32, "beam": 1}}
    prepare([IWSLT / "dev2012"], tmp_path / "train", block_len=100, lines=(1, 1000))
    train(conf, tmp_path / "train", None, tmp_path / "exp", quiet=True)
    words = [w for u in read(tiny / "test")[0] for w in u.words][:300]
    model, fe, inv, _ = load_experiment_model(tmp_path / "exp")
    got, = decode_streams_rows(model, fe, [Stream("s", ["s"], [0], words, [IGNORE] * len(words))], 40, 20, 32)
    cli("pack", tmp_path / "exp", "-o", tmp_path / "plm.pkt")
    cli("pack", tmp_path / "exp", "-o", tmp_path / "plm_onnx.pkt", "--onnx", "--onnx-only")
    shutil.rmtree(plm)
    with zipfile.ZipFile(tmp_path / "plm.pkt") as z:
        assert {"frontend/plm/tokenizer.json", "frontend/plm/config.json"} <= set(z.namelist())
        assert "config" in yaml.safe_load(z.read("config.yaml"))["model"]["plm"]  # rebuilt from its config
    expect = [inv.labels[i] for i in close_ids(got.best, got.rows, inv, closes=True)]  # the stream's end: a sentence's
    assert words_labels(load_model(tmp_path / "plm.pkt"), words) == expect
    # as ONNX only, it runs where neither torch nor transformers can be imported, with the same labels
    assert json_without("from punctkit import load_model\n"
                        f"p = load_model({str(tmp_path / 'plm_onnx.pkt')!r}, threads=1)\n"
                        f"print(json.dumps(next(p.label([{words!r}])).labels))") == expect
    # and streams there (the student's `--stream --lookahead`): unlimited is offline punctuate; with a
    # look-ahead of 5 words every word comes out once, in order, 5 words late at most
    text, streamed, late = json_without(
        "from punctkit import load_model\nfrom punctkit.infer.stream import PunctStream\n"
        f"p = load_model({str(tmp_path / 'plm_onnx.pkt')!r}, threads=1)\n"
        f"words = {words!r}\n"
        "s = PunctStream(p, 5); out = []; late = 0\n"
        "for n, w in enumerate(words, 1):\n"
        "    out += [x for _, _, x in s.feed(w)]; late = max(late, n - len(out))\n"
        "out += [x for _, _, x in s.finish()]\n"
        "print(json.dumps([' '.join(x for _, _, x in PunctStream(p).run(words)) == p.punctuate(' '.join(words)),"
        " out, late]))")
    assert text and late == 5
    assert [w.strip(".,?!").lower() for w in streamed] == [w.lower() for w in words]


def test_step_option_equals_decode_with_that_step(tiny):
    """`punctuate --step S` labels as `decode --step S` does; a step outside 1..window is refused."""
    from punctkit import load_model
    from punctkit.decode_data import decode_dir

    window = int(load_model(tiny / "tiny.pkt").window)
    decode_dir(tiny / "exp", tiny / "test", tiny / "dec_s.twocol", fmt="twocol", step=window)
    utts, _ = read(tiny / "test")
    (tiny / "words_s.txt").write_text("".join(" ".join(u.words) + "\n" for u in utts))
    cli("punctuate", "-m", tiny / "tiny.pkt", tiny / "words_s.txt", "-o", tiny / "hyp_s.twocol",
        "--format", "twocol", "--step", window, "--threads", 1)
    dec, _ = read(tiny / "dec_s.twocol")
    got, _ = read(tiny / "hyp_s.twocol")
    assert [lab for u in got for lab in u.labels] == [lab for u in dec for lab in u.labels]
    r = cli("punctuate", "-m", tiny / "tiny.pkt", tiny / "words_s.txt", "--step", window + 1, ok=False)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and f"--step {window + 1}" in r.stderr


def test_quantized_model_is_int8_and_labels_like_float(tiny):
    """`--quantize`: Linear layers become dynamic int8 ones; labels stay (almost all) those of float32."""
    from torch.ao.nn.quantized.dynamic import Linear as QLinear

    from punctkit import load_model

    fp, q8 = (load_model(tiny / "tiny.pkt", threads=1, quantize=k) for k in (False, True))
    assert any(isinstance(m, QLinear) for m in q8.scorer.runner.model.modules())
    assert not any(isinstance(m, QLinear) for m in fp.scorer.runner.model.modules())
    utts, _ = read(tiny / "test")
    words = [w for u in utts for w in u.words]
    a, b = words_labels(fp, words), words_labels(q8, words)
    assert len(a) == len(b) == len(words) and any(x != "O" for x in a)
    assert sum(x == y for x, y in zip(a, b)) >= 0.95 * len(words)
    (tiny / "words_q.txt").write_text(" ".join(words[:300]) + "\n")
    r = cli("punctuate", "-m", tiny / "tiny.pkt", tiny / "words_q.txt", "--quantize", "--threads", 1)
    assert "punctuate: 1 lines, 300 words" in r.stderr and r.stdout.strip()
