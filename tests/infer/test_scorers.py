"""Ensembles: averaged per-word label probabilities (`punctuate -m A -m B`, `pack --ensemble`, decode EXP1 EXP2)."""
from __future__ import annotations

import json
import shutil
import zipfile

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from label_util import streamed_labels, utterance_labels, words_labels, words_rows
from punct_util import cli, tiny_conf, train_tiny
from punctkit.data.formats import read
from punctkit.data.prepare import prepare
from punctkit.data.probs import read_probs
from punctkit.decode.stream_end import closing_label
from punctkit.files import PunctkitError

TINY = tiny_conf({"type": "transformer_tagger", "n_layers": 1, "d_model": 32, "n_heads": 2, "d_ff": 64,
                  "dropout": 0.1}, epochs=2)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """d/a.pkt: a tiny tagger (2 epochs); d/b.pkt: the same run after its first epoch (another model,
    the same inventory); d/c.pkt: a 6-class model; d/test: test2011 words as a data dir."""
    d = tmp_path_factory.mktemp("ens")
    exp = train_tiny(d, TINY)
    exp_b = d / "exp_b"
    shutil.copytree(exp, exp_b)
    for f in ("model.avg.pt", "model.best.pt"):
        (exp_b / f).unlink(missing_ok=True)
    for f in (exp_b / "checkpoints").glob("epoch_*.pt"):
        if f.name != "epoch_1.pt":
            f.unlink()
    cli("pack", exp, "-o", d / "a.pkt")
    cli("pack", exp_b, "-o", d / "b.pkt")
    from conftest import IWSLT
    from punctkit.fit import train

    prepare([IWSLT / "dev2012"], d / "train6", block_len=100, lines=(1, 1500), inventory="6class")
    train(dict(TINY, train=dict(TINY["train"], epochs=1)), d / "train6", d / "train6", d / "exp6", quiet=True)
    cli("pack", d / "exp6", "-o", d / "c.pkt")
    utts, _ = read(d / "test")
    d.joinpath("words.txt").write_text(" ".join(w for u in utts[:6] for w in u.words) + "\n")
    return d


@pytest.fixture(scope="module")
def ens_pkt(models):
    """`pack --ensemble` of exp and exp_b with weights 0.6,0.4."""
    cli("pack", "--ensemble", models / "exp", models / "exp_b", "--weights", "0.6,0.4", "-o", models / "e.pkt")
    return models / "e.pkt"


def _words(d) -> list[str]:
    return d.joinpath("words.txt").read_text().split()


def test_ensemble_of_a_model_with_itself_is_the_model(models):
    from punctkit import load_model

    words = _words(models)
    one = load_model(models / "a.pkt", threads=1)
    ens = load_model([models / "a.pkt", models / "a.pkt"], threads=1)
    labels, rows = words_labels(one, words, probs=True)
    e_labels, e_rows = words_labels(ens, words, probs=True)
    assert e_labels == labels and np.abs(e_rows - rows).max() < 1e-9
    assert streamed_labels(ens, words) == labels
    r = cli("punctuate", "-m", models / "a.pkt", "-m", models / "a.pkt", models / "words.txt", "--threads", 1)
    assert r.stdout == cli("punctuate", "-m", models / "a.pkt", models / "words.txt", "--threads", 1).stdout


def test_weights_average_the_members_rows(models):
    """0.7 a + 0.3 b, per word; the label is the arg-max of the average; fixed marks keep that row."""
    from punctkit import load_model

    words = _words(models)[:500]
    a = load_model(models / "a.pkt", threads=1, chunk_words=120)
    b = load_model(models / "b.pkt", threads=1)
    ens = load_model([models / "a.pkt", models / "b.pkt"], "0.7,0.3", threads=1, chunk_words=120)
    ra, rb = words_rows(a, words), words_rows(b, words)
    assert np.abs(ra - rb).max() > 0.01  # two different models
    labels, rows = words_labels(ens, words, probs=True)
    assert np.abs(rows - (0.7 * ra + 0.3 * rb)).max() < 1e-9
    want = [ens.inventory.labels[i] for i in rows.argmax(1)]
    want[-1] = closing_label(want[-1], rows[-1], ens.inventory)  # the stream's end ends a sentence
    assert labels == want
    utts = [(words[:40], None), ([], None), (words[40:100], None)]
    got = list(utterance_labels(ens, utts, probs=True))
    assert [len(lab) for lab, _ in got] == [40, 0, 60]
    want = 0.7 * words_rows(a, words[40:100]) + 0.3 * words_rows(b, words[40:100])
    assert np.abs(got[2][1] - want).max() < 1e-9


def test_two_member_package_round_trips_and_punctuates(models, ens_pkt):
    from punctkit import Ensemble
    from punctkit.package import read_package

    with zipfile.ZipFile(ens_pkt) as z:
        names = z.namelist()
    assert {"punctkit.json", "models/0/model.pt", "models/1/model.pt", "models/0/config.yaml",
            "models/1/frontend/vocab.txt"} <= set(names)
    assert not any(n in names for n in ("model.pt", "config.yaml"))
    pkg = read_package(ens_pkt)
    assert pkg.weights == [0.6, 0.4] and len(pkg.members) == 2
    from punctkit import load_model

    ens = load_model(ens_pkt, threads=1)
    assert isinstance(ens.scorer, Ensemble) and ens.scorer.weights == [0.6, 0.4]
    card = ens.card
    # relative to the experiments' parent: a card never holds the packing machine's absolute paths
    assert card["weights"] == [0.6, 0.4] and [m["exp"] for m in card["members"]] == ["exp", "exp_b"]
    assert [m["checkpoint"] for m in card["members"]] == ["model.avg.pt", "epoch_1.pt"]
    words = _words(models)[:300]
    direct = load_model([models / "a.pkt", models / "b.pkt"], "0.6,0.4", threads=1)
    assert words_labels(ens, words, probs=True)[0] == words_labels(direct, words)
    assert np.abs(words_rows(ens, words) - words_rows(direct, words)).max() < 1e-9
    r = cli("punctuate", "-m", ens_pkt, models / "words.txt", "--threads", 1)
    assert r.stdout.split() and "punctuate: 1 lines" in r.stderr
    r = cli("punctuate", "-m", ens_pkt, models / "words.txt", "--weights", "1,0", "--threads", 1)
    assert r.stdout == cli("punctuate", "-m", models / "a.pkt", models / "words.txt", "--threads", 1).stdout


@pytest.fixture(scope="module")
def onnx_ens(models):
    """`pack --ensemble --onnx` of exp and exp_b (0.6,0.4): members with ONNX graphs over one frontend."""
    cli("pack", "--ensemble", models / "exp", models / "exp_b", "--weights", "0.6,0.4", "--onnx",
        "-o", models / "e_onnx.pkt")
    return models / "e_onnx.pkt"


def test_frontend_digest_tells_shared_frontends_apart(models):
    from punctkit.package import read_package

    a, b, c = (read_package(models / f).frontend_digest for f in ("a.pkt", "b.pkt", "c.pkt"))
    assert a == b and a != c and len(a) == 64  # exp_b copies exp's frontend; exp6 learned its own


@pytest.mark.parametrize("threads", [1, 2])
def test_onnx_members_side_by_side_equal_member_by_member(models, onnx_ens, threads):
    """One frontend, one window plan, ONNX graphs: the members run on shared batches, and every
    label and row is the one member-by-member averaging gives (utterances and streams alike)."""
    from punctkit import Engine, load_model

    words = _words(models)
    fast = load_model(onnx_ens, threads=threads)
    slow = load_model(onnx_ens, threads=threads)
    slow.scorer.shared = None  # type: ignore[union-attr]
    assert fast.scorer.shared is not None and fast.backend == "onnx+onnx"  # type: ignore[union-attr]
    labels, rows = words_labels(fast, words, probs=True)
    want_labels, want_rows = words_labels(slow, words, probs=True)
    assert labels == want_labels and np.abs(rows - want_rows).max() < 1e-9
    assert np.allclose(rows.sum(1), 1)
    first = Engine(scorer=fast.scorer.members[0])  # type: ignore[union-attr]
    assert np.abs(rows - words_rows(first, words)).max() > 1e-3  # the members differ: a real average
    utts = [(words[i:i + 37], None) for i in range(0, 370, 37)]
    got = list(utterance_labels(fast, utts, probs=True))
    for (g_lab, g_rows), (w_lab, w_rows) in zip(got, utterance_labels(slow, utts, probs=True)):
        assert g_lab == w_lab and np.abs(g_rows - w_rows).max() < 1e-9


def test_onnx_ensemble_package_punctuates_as_torch(models, onnx_ens):
    """`punctuate` of the ONNX ensemble package (side by side) writes what its torch backend
    (member by member) writes."""
    args = ("punctuate", "-m", onnx_ens, models / "words.txt", "--threads", 2)
    assert cli(*args).stdout == cli(*args, "--backend", "torch").stdout


def test_side_by_side_needs_onnx_one_frontend_and_one_plan(models, onnx_ens):
    from punctkit.infer.scorers import side_by_side
    from punctkit.package import read_package

    members = read_package(onnx_ens).members
    assert side_by_side(members, {})
    assert not side_by_side(members[:1], {})
    assert not side_by_side(members, {"backend": "torch"})
    assert not side_by_side(members, {"quantize": True})
    plain = [read_package(models / f) for f in ("a.pkt", "b.pkt")]  # packed without --onnx
    assert not side_by_side(plain, {})
    assert not side_by_side([members[0], read_package(models / "c.pkt")], {})
    import dataclasses

    uni = dataclasses.replace(members[1], conf=dict(members[1].conf, model=dict(members[1].conf["model"],
                                                                                  direction="uni", delay=2)))
    assert not side_by_side([members[0], uni], {})  # another look-ahead by construction
    assert side_by_side(members, {"step": 30, "threads": 1})  # punctuate's options apply to every member


def test_side_by_side_ensemble_streams_and_others_are_refused(models, onnx_ens):
    """`punctuate --stream` runs an ensemble whose members run side by side as that one tagger
    (unlimited look-ahead: the offline words and marks); other ensembles are one-line errors."""
    import subprocess

    from punct_util import PK

    text = (models / "words.txt").read_text()
    off = cli("punctuate", "-m", onnx_ens, models / "words.txt", "--threads", 1).stdout
    on = subprocess.run(PK + ["punctuate", "-m", str(onnx_ens), "--stream", "--threads", "1"], input=text,
                        capture_output=True, text=True)
    assert on.returncode == 0, on.stderr
    assert on.stdout.split() == off.split() and len(off.split()) == len(text.split())
    bad = subprocess.run(PK + ["punctuate", "-m", str(models / "a.pkt"), "-m", str(models / "b.pkt"), "--stream"],
                         input=text, capture_output=True, text=True)
    assert bad.returncode != 0 and len(bad.stderr.strip().splitlines()) == 1
    assert "ensemble of ONNX members" in bad.stderr and "Traceback" not in bad.stderr


def test_decode_of_several_experiments_averages_their_probs(models, tmp_path):
    cli("decode", models / "exp", models / "exp_b", models / "test", tmp_path / "ens", "--weights", "0.5,0.5",
        "--probs")
    for k, exp in enumerate(("exp", "exp_b")):
        cli("decode", models / exp, models / "test", tmp_path / f"m{k}", "--probs")
    n = 4
    a, b, e = (read_probs(tmp_path / x / "probs", n) for x in ("m0", "m1", "ens"))
    assert list(e) == list(a)
    for k in e:
        assert np.abs(e[k] - (a[k] + b[k]) / 2).max() <= 2e-4  # each file has 4 decimals
    utts, found = read(tmp_path / "ens")
    from punctkit.data.labels import get_inventory

    inv = get_inventory("4class")
    for u in utts:  # the labels are the arg-max of the average (rows within 1e-4 of each other aside)
        close = np.sort(e[u.uttid], 1)[:, -1] - np.sort(e[u.uttid], 1)[:, -2] < 2e-4
        want = [inv.labels[i] for i in e[u.uttid].argmax(1)]
        if u is utts[-1]:  # one stream: its last word ends a sentence
            want[-1] = closing_label(want[-1], e[u.uttid][-1], inv)
        assert all(c or lab == w for lab, w, c in zip(u.labels, want, close))


def test_mismatched_inventories_are_one_line_errors(models, tmp_path):
    from punctkit import load_model

    with pytest.raises(PunctkitError, match="must share one inventory"):
        load_model([models / "a.pkt", models / "c.pkt"], threads=1)
    r = cli("punctuate", "-m", models / "a.pkt", "-m", models / "c.pkt", models / "words.txt", ok=False)
    assert r.returncode == 1 and r.stderr.count("\n") == 1
    assert "a.pkt" in r.stderr and "c.pkt" in r.stderr and "6class" in r.stderr
    r = cli("pack", models / "exp", models / "exp6", "-o", tmp_path / "x.pkt", ok=False)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "exp6" in r.stderr
    assert not (tmp_path / "x.pkt").exists()
    r = cli("punctuate", "-m", models / "a.pkt", "-m", models / "b.pkt", "--weights", "1,2,3",
            models / "words.txt", ok=False)
    assert r.returncode == 1 and "3 weights for 2 models" in r.stderr and r.stderr.count("\n") == 1


def _rezip(src, dst, rename: dict[str, str]) -> None:
    with zipfile.ZipFile(src) as z, zipfile.ZipFile(dst, "w") as out:
        for info in z.infolist():
            out.writestr(rename.get(info.filename, info.filename), z.read(info))


@pytest.mark.parametrize("bad, why", [
    ("models/2/model.pt", "not a member of this ensemble of 2 models"),
    ("models/0/../1/model.pt", "'..' in its path"),
    ("models/1/frontend/hook.py", "not a file of a punctkit package"),
    ("models/01/model.pt", "not a file of a punctkit package"),
])
def test_tampered_ensemble_package_is_refused(models, ens_pkt, tmp_path, bad, why):
    _rezip(ens_pkt, tmp_path / "bad.pkt", {"models/1/model.pt": bad} if "hook" not in bad
           else {"models/1/frontend/vocab.txt": bad})
    from punctkit.package import read_package

    with pytest.raises(PunctkitError, match="refused") as e:
        read_package(tmp_path / "bad.pkt")
    assert why in str(e.value) and "\n" not in str(e.value)
    r = cli("punctuate", "-m", tmp_path / "bad.pkt", models / "words.txt", ok=False)
    assert r.returncode == 1 and r.stderr.count("\n") == 1


def test_single_model_package_with_an_ensemble_member_is_refused(models, tmp_path):
    with zipfile.ZipFile(models / "a.pkt") as z, zipfile.ZipFile(tmp_path / "bad.pkt", "w") as out:
        for info in z.infolist():
            out.writestr(info.filename, z.read(info))
        out.writestr("models/0/model.pt", b"x")
        manifest = json.loads(z.read("punctkit.json"))
    assert manifest.get("kind") is None
    from punctkit.package import read_package

    with pytest.raises(PunctkitError, match="an ensemble member in a single-model package"):
        read_package(tmp_path / "bad.pkt")


def test_ensemble_weights_script_searches_the_grid_on_valid(models):
    """Members' own F1 are punctkit score's; the best of the grid is at least the best member's."""
    import re
    import subprocess
    import sys

    from conftest import ROOT
    from punctkit.score import score_files

    r = subprocess.run([sys.executable, ROOT / "local" / "iwslt" / "ensemble_weights.py", models / "exp",
                        models / "b.pkt", "--valid", models / "valid", "--step", "0.25"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    f1 = [float(x) for x in re.findall(r"member \d .*: valid F1 ([\d.]+)", r.stdout)]
    best = re.search(r"best weights ([\d.,]+): valid F1 ([\d.]+) \((\d+) weightings tried\)", r.stdout)
    assert len(f1) == 2 and best and best.group(3) == "5"
    assert sum(map(float, best.group(1).split(","))) == pytest.approx(1.0)
    assert float(best.group(2)) >= max(f1)
    cli("decode", models / "exp", models / "valid", models / "dec_valid")
    assert f1[0] == pytest.approx(score_files(models / "valid", models / "dec_valid")["overall"]["f1"], abs=0.006)
    # at most one member: the 2 one-hot weightings only, and the best is the better member
    r = subprocess.run([sys.executable, ROOT / "local" / "iwslt" / "ensemble_weights.py", models / "exp",
                        models / "b.pkt", "--valid", models / "valid", "--step", "0.25", "--max-members", "1"],
                       capture_output=True, text=True)
    best = re.search(r"best weights ([\d.,]+): valid F1 ([\d.]+) \((\d+) weightings tried\)", r.stdout)
    assert r.returncode == 0 and best and best.group(3) == "2" and float(best.group(2)) == max(f1)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 40), st.lists(st.sampled_from(["models", "0", "1", "01", "frontend", "plm", "..", "", ".",
                                                     "model.pt", "vocab.txt", "punctkit.json", "\\", "\n"]),
                                    min_size=1, max_size=5).map("/".join))
def test_ensemble_member_names_stay_inside_their_member(k, inner):
    """Any name check_entries accepts is a single model's file at the top or under exactly one models/K/
    (K < 16, no leading zero), and joins under a directory without leaving it; refusals are one line."""
    import os
    from pathlib import Path

    from punctkit.package import KNOWN, MAX_MEMBERS, check_entries, is_dir_entry, split_member

    name = f"models/{k}/{inner}"
    try:
        check_entries(Path("e.pkt"), [_info(name)])
    except PunctkitError as e:
        assert "\n" not in str(e)
        return
    prefix, rest = split_member(name)
    assert prefix == f"models/{k}/" and k < MAX_MEMBERS and rest == inner
    assert rest in KNOWN or is_dir_entry(name)
    joined = os.path.normpath(os.path.join("/base", *name.rstrip("/").split("/")))
    assert joined.startswith(f"/base/models/{k}")


def _info(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.file_size = info.compress_size = 10
    return info


@pytest.mark.parametrize("backend", ["torch", "onnx"])
def test_decode_of_experiments_labels_as_their_package_punctuates(models, onnx_ens, tmp_path, backend):
    """One labelling path (issue 35): `decode EXP EXP_B DATA OUT` and `punctuate --format twocol` with
    their ensemble package give the same labels on the same words, on one document (DATA is one
    stream; the plain-text lines are one stream). Torch is exact; ONNX may differ only at near-ties."""
    from punctkit.data.datadir import read_data_dir

    assert len(set(read_data_dir(models / "test", need_labels=False).utt2spk.values())) == 1  # one document
    cli("decode", models / "exp", models / "exp_b", models / "test", tmp_path / "dec", "--weights", "0.6,0.4",
        "--probs")
    dec, _ = read(tmp_path / "dec")
    (tmp_path / "words.txt").write_text("".join(" ".join(u.words) + "\n" for u in dec))
    cli("punctuate", "-m", onnx_ens, tmp_path / "words.txt", "--format", "twocol", "--backend", backend,
        "--threads", 1, "-o", tmp_path / "hyp.twocol")
    got, _ = read(tmp_path / "hyp.twocol")
    assert [w for u in got for w in u.words] == [w for u in dec for w in u.words]
    want = [lab for u in dec for lab in u.labels]
    have = [lab for u in got for lab in u.labels]
    assert len(set(want)) > 1  # the models predict marks: equality is not trivial
    rows = read_probs(tmp_path / "dec" / "probs", 4)
    top2 = np.concatenate([np.sort(rows[u.uttid], 1)[:, -2:] for u in dec])
    differ = [i for i, (a, b) in enumerate(zip(want, have)) if a != b]
    if backend == "torch":
        assert differ == []
    else:
        assert all(top2[i, 1] - top2[i, 0] < 2e-3 for i in differ), differ  # near-ties only
        assert len(differ) <= len(want) // 100


def test_members_in_threads_label_as_in_turn(models):
    """The typed ways to run an ensemble's members (`MemberRun`) give the same labels and rows;
    a model and an ensemble are scorers of the one engine (`Engine`), and only a shared-window ensemble
    streams."""
    from punctkit import Ensemble, load_model
    from punctkit.infer import Engine, ModelScorer

    words = _words(models)[:400]
    turn = load_model([models / "a.pkt", models / "b.pkt"], "0.6,0.4", threads=1, backend="torch")
    threads = load_model([models / "a.pkt", models / "b.pkt"], "0.6,0.4", threads=1, backend="torch")
    assert isinstance(turn.scorer, Ensemble) and isinstance(threads.scorer, Ensemble)
    threads.scorer.run = "threads"
    assert turn.scorer.member_run == "in_turn" and threads.scorer.member_run == "threads"
    labels, rows = words_labels(threads, words, probs=True)
    want_labels, want_rows = words_labels(turn, words, probs=True)
    assert labels == want_labels and np.abs(rows - want_rows).max() < 1e-9
    assert isinstance(turn, Engine) and isinstance(turn.scorer.members[0], ModelScorer)
    one = Engine(scorer=turn.scorer.members[0])
    assert one.streamable() is one and one.scorer.streamable() is one.scorer
    with pytest.raises(PunctkitError, match="ensemble of ONNX members"):
        turn.streamable()
    with pytest.raises(PunctkitError, match="unknown way to run"):
        Ensemble(members=turn.scorer.members, weights=[0.5, 0.5], run="parallel")  # type: ignore[arg-type]
