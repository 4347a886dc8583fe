"""The trainer: batching, schedules, losses, checkpoints (average, kill-and-resume), and a CLI run end to end."""
from __future__ import annotations

import copy
import json
import re
import subprocess
import time
from pathlib import Path

import pytest
import torch

import commands
from engine_util import TINY, make_dirs
from punctkit.batch import collate
from punctkit.config import load_config
from punctkit.data.datadir import read_data_dir, write_data_dir
from punctkit.data.formats import Utterance
from punctkit.data.labels import get_inventory
from punctkit.data.streams import IGNORE, WindowDataset, bucket_batches, make_streams, shard, train_windows
from punctkit.expdir import load_checkpoint
from punctkit.files import PunctkitError
from punctkit.fit import train
from punctkit.text.frontend import train_frontend
from punctkit.train.checkpoint import average_checkpoints, save_checkpoint
from punctkit.train.losses import class_weights, make_loss
from punctkit.train.schedules import make_schedule

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    from conftest import IWSLT

    if not (IWSLT / "dev2012").is_file():
        pytest.skip(f"IWSLT reference data not found at {IWSLT}")
    root = tmp_path_factory.mktemp("train")
    return make_dirs(IWSLT, root, "1:1500", "1501:1800")


# ------------------------------------------------------------------ batching

def test_streams_and_training_windows(dirs):
    dd = read_data_dir(dirs[0])
    streams = make_streams(dd)
    assert len(streams) == 1 and len(streams[0]) == dd.words() == 1500  # 15 blocks of one talk stream
    assert streams[0].uttids == sorted(u.uttid for u in dd.utterances)
    firsts = set()
    for epoch in range(1, 5):
        wins = train_windows(streams, 60, seed=1, epoch=epoch)
        covered = [i for w in wins for i in range(w.start, w.end)]
        assert covered == list(range(1500))  # every word once per epoch, in order
        assert all(30 <= w.end - w.start < 90 for w in wins)
        firsts.add(wins[1].start)
    assert len(firsts) > 1  # a new random offset each epoch
    assert train_windows(streams, 60, 1, 2) == train_windows(streams, 60, 1, 2)


def test_non_stream_dir_collate_and_extra_hook(tmp_path):
    inv = get_inventory("4class")
    utts = [Utterance("a", ["hello", "world"], ["O", "PERIOD"]),
            Utterance("b", ["how", "are", "you"], ["O", "O", "QUESTION"])]
    write_data_dir(tmp_path / "d", utts, inv)
    streams = make_streams(read_data_dir(tmp_path / "d"))
    assert [s.key for s in streams] == ["a", "b"]  # utt2spk = utterance: one stream each
    fe = train_frontend({"kind": "word"}, [u.words for u in utts], tmp_path / "fe")
    ds = WindowDataset(streams, fe, extra=lambda s, w: {"feats": torch.ones(w.end - w.start, 3)})
    batch = collate([ds[0], ds[1]], fe.pad_id)
    assert set(batch) == {"tokens", "token_mask", "word_pos", "word_mask", "labels", "index", "feats"}
    assert batch["tokens"].shape == (2, 3) and batch["token_mask"].tolist() == [[True, True, False], [True] * 3]
    assert batch["labels"].tolist() == [[0, 2, IGNORE], [0, 0, 3]]
    assert batch["feats"].shape == (2, 3, 3) and batch["feats"][0, 2].sum() == 0
    order = bucket_batches([5, 1, 3, 2, 4, 6, 7], 2, shuffle=True, seed=3)
    assert sorted(i for b in order for i in b) == list(range(7))
    assert shard(order, 0, 2) + shard(order, 1, 2) != [] and len(shard(order, 0, 2)) == len(shard(order, 1, 2))


# ------------------------------------------------------------------ schedules, losses, config

def test_schedules():
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    noam = make_schedule("noam", opt, 0.01, warmup=10)
    lrs = []
    for _ in range(40):
        lrs.append(opt.param_groups[0]["lr"])
        noam.on_step()
    assert max(lrs) == pytest.approx(0.01) and lrs.index(max(lrs)) == 9 and lrs[-1] < 0.01
    nb = make_schedule("newbob", opt, 0.1, factor=0.5)
    for f1 in (10.0, 20.0, 19.0, 25.0, 25.0):
        nb.on_epoch(f1)
    assert opt.param_groups[0]["lr"] == pytest.approx(0.025)
    with pytest.raises(PunctkitError):
        make_schedule("cosine", opt, 0.1)


def test_losses():
    logits = torch.randn(2, 5, 4)
    labels = torch.tensor([[0, 1, 2, 3, IGNORE], [1, 1, 0, IGNORE, IGNORE]])
    ce = make_loss("ce")(logits, labels)
    assert torch.allclose(make_loss("focal", gamma=0.0)(logits, labels), ce)
    assert make_loss("focal", gamma=2.0)(logits, labels) < ce
    assert make_loss("ce", label_smoothing=0.1)(logits, labels) != ce
    w = class_weights([900, 50, 40, 10])
    assert w[3] > w[1] > w[0]


def test_config_defaults_overrides_and_errors(tmp_path):
    conf = load_config(ROOT / "recipes/iwslt/conf/train_drnn_lwma.yaml", ["train.lr=0.5", "model.n_heads=1"])
    assert conf["train"]["lr"] == 0.5 and conf["model"]["n_heads"] == 1 and conf["train"]["clip"] == 5.0
    (tmp_path / "c.yaml").write_text("model: {type: x}\ntrain: {lr: 1, nope: 2}\n")
    with pytest.raises(PunctkitError, match="nope"):
        load_config(tmp_path / "c.yaml")
    with pytest.raises(PunctkitError, match="--set"):
        load_config({"model": {"type": "x"}}, ["train.lr"])


@pytest.mark.parametrize("override, says", [
    ("train.lr=abc", "train.lr must be a finite number, got 'abc'"),
    ("train.lr=.nan", "train.lr must be a finite number"),
    ("train.lr=1e-3", "write it with a point"),
    ("train.batch_size=0", "train.batch_size must be >= 1"),
    ("train.window=2.5", "train.window must be a whole number"),
    ("train.max_minutes=-1", "train.max_minutes must be > 0"),
    ("train.patience=0", "train.patience must be >= 1"),
    ("train.betas=[1, 2]", "train.betas must be two numbers"),
    ("train.class_weights=[a]", "train.class_weights must be"),
    ("model.dropout=1.5", "option dropout is a probability"),
    ("model.n_layers=1.5", "option n_layers must be int"),
    ("model.d_model=0", "option d_model must be >= 1"),
    ("train=[1]", "the train section must be a mapping"),
])
def test_bad_config_values_fail_in_one_line_before_the_exp_dir_is_made(tmp_path, override, says):
    conf = {**TINY, "model": {"type": "drnn_lwma", "n_layers": 1, "n_heads": 1, "d_model": 16}}
    with pytest.raises(PunctkitError, match=re.escape(says)):
        train(conf, tmp_path / "no-data", None, tmp_path / "exp", overrides=[override], quiet=True)
    assert not (tmp_path / "exp").exists()


# ------------------------------------------------------------------ checkpoints

def test_average_of_identical_checkpoints_equals_the_checkpoint(tmp_path):
    torch.manual_seed(0)
    state = {"w": torch.randn(3, 4), "b": torch.randn(4), "steps": torch.tensor(7)}
    for k in (1, 2, 3):
        save_checkpoint(tmp_path / f"epoch_{k}.pt", {"model": state})
    average_checkpoints([tmp_path / f"epoch_{k}.pt" for k in (1, 2, 3)], tmp_path / "avg.pt")
    avg = load_checkpoint(tmp_path / "avg.pt")["model"]
    assert all(torch.equal(avg[k], state[k]) for k in state)
    (tmp_path / "cut.pt").write_bytes((tmp_path / "epoch_1.pt").read_bytes()[:50])
    with pytest.raises(PunctkitError, match="cut.pt: corrupt"):
        load_checkpoint(tmp_path / "cut.pt")


class Kill(KeyboardInterrupt):
    """Stands for the job being killed."""


def _params(exp: Path, epoch: int) -> dict:
    return load_checkpoint(exp / "checkpoints" / f"epoch_{epoch}.pt")["model"]


def test_training_lowers_loss_and_kill_resume_equals_uninterrupted(dirs, tmp_path):
    conf = copy.deepcopy(TINY)
    a = train(copy.deepcopy(conf), *dirs, tmp_path / "a", quiet=True)
    exp = tmp_path / "a"
    assert [h["epoch"] for h in a.history] == [1, 2, 3] and a.history[-1]["loss"] < a.history[0]["loss"]
    for name in ("config.yaml", "frontend/frontend.yaml", "frontend/vocab.txt", "inventory", "history.json",
                 "train.log", "model.best.pt", "model.avg.pt", "checkpoints/epoch_3.pt"):
        assert (exp / name).is_file(), name
    assert load_config(exp / "config.yaml")["resolved"]["inventory"] == "4class"

    def kill_after_epoch_1(tr):
        if tr.state.epoch == 1:
            raise Kill

    per_epoch = a.history[0]["steps"]

    def kill_mid_epoch_2(tr):
        if tr.state.step == per_epoch + 2:  # in the middle of epoch 2
            raise Kill

    b = tmp_path / "b"
    with pytest.raises(Kill):
        train(copy.deepcopy(conf), *dirs, b, quiet=True, on_epoch_end=[kill_after_epoch_1])
    with pytest.raises(Kill):
        train(copy.deepcopy(conf), *dirs, b, quiet=True, on_step=[kill_mid_epoch_2])
    assert not (b / "checkpoints" / "epoch_2.pt").exists()
    resumed = train(copy.deepcopy(conf), *dirs, b, quiet=True)
    assert "resumed from" in (b / "train.log").read_text()
    ref, got = _params(exp, 3), _params(b, 3)
    assert all(torch.equal(ref[k], got[k]) for k in ref)
    assert [h["loss"] for h in resumed.history] == [h["loss"] for h in a.history]
    with pytest.raises(PunctkitError, match="has checkpoints"):
        train(copy.deepcopy(conf), *dirs, b, resume=False, quiet=True)


def test_iters_per_epoch_runs_passes_on_across_epochs_and_resumes_at_the_batch(dirs, tmp_path):
    """ESPnet's num_iters_per_epoch: epochs of N batches cut from passes that go on across them;
    a checkpoint in the middle of a pass resumes at the next batch (the data an uninterrupted run sees)."""
    from punctkit.train.epochs import epoch_batches, pass_batches
    from punctkit.train.options import TrainOptions
    from punctkit.train.trainer import TrainState

    dd = read_data_dir(dirs[0])
    fe = train_frontend({"kind": "word", "min_count": 1}, [u.words for u in dd.utterances], tmp_path / "fe")
    ds = WindowDataset(make_streams(dd), fe)
    opts = TrainOptions.from_section({"window": 40, "batch_size": 8, "seed": 3, "iters_per_epoch": 3})
    passes = [pass_batches(ds, opts, p) for p in (1, 2, 3)]
    size = len(passes[0])
    assert size > 3 and size % 3 and passes[0] != passes[1]
    state = TrainState()
    epochs = [epoch_batches(ds, opts, state, e) for e in (1, 2, 3)]
    assert [size for _, size in epochs] == [3, 3, 3]
    epochs = [list(order) for order, _ in epochs]  # (drawn in order, as the trainer draws them)
    assert sum(epochs, []) == sum(passes, [])[:9]  # pass 1, then pass 2 from its first batch
    assert (state.data_pass, state.pass_batches, state.pass_size) == (9 // size + 1, 9 % size, size)
    resumed = TrainState(**copy.deepcopy(state.__dict__))  # as a checkpoint restores it
    assert list(epoch_batches(ds, opts, resumed, 4)[0]) == sum(passes, [])[9:12]
    plain = TrainOptions.from_section({"window": 40, "batch_size": 8, "seed": 3})
    assert epoch_batches(ds, plain, TrainState(), 2) == (passes[1], len(passes[1]))  # default: an epoch is a pass

    conf = copy.deepcopy(TINY)
    conf["train"].update(iters_per_epoch=3, epochs=4)
    full = train(copy.deepcopy(conf), *dirs, tmp_path / "a", quiet=True)
    assert [h["steps"] for h in full.history] == [3, 6, 9, 12]
    assert [h["passes"] for h in full.history] == [round(n / size, 4) for n in (3, 6, 9, 12)]
    assert "passes over the data" in (tmp_path / "a" / "train.log").read_text()

    def kill_after_epoch_1(tr):
        if tr.state.epoch == 1:
            raise Kill

    with pytest.raises(Kill):
        train(copy.deepcopy(conf), *dirs, tmp_path / "b", quiet=True, on_epoch_end=[kill_after_epoch_1])
    again = train(copy.deepcopy(conf), *dirs, tmp_path / "b", quiet=True)
    assert [h["loss"] for h in again.history] == [h["loss"] for h in full.history]
    ref, got = _params(tmp_path / "a", 4), _params(tmp_path / "b", 4)
    assert all(torch.equal(ref[k], got[k]) for k in ref)

    # cut by max_minutes after one batch, then given time: the next epoch starts at batch 2
    conf["train"].update(max_minutes=1e-9, epochs=2)
    st = train(copy.deepcopy(conf), *dirs, tmp_path / "m", quiet=True)
    assert st.stopped == "max_minutes" and (st.data_pass, st.pass_batches) == (1, 1)
    conf["train"].update(max_minutes=None)
    st = train(copy.deepcopy(conf), *dirs, tmp_path / "m", quiet=True)
    assert st.step == 4 and st.data_pass * size - size + st.pass_batches == 4


def test_keep_checkpoints_keeps_the_best_and_the_last_and_resumes(dirs, tmp_path):
    from punctkit.train.checkpoint import best_epochs

    conf = copy.deepcopy(TINY)
    conf["train"].update(epochs=5, keep_checkpoints=1, n_average=2)
    exp = tmp_path / "k"
    (exp / "checkpoints").mkdir(parents=True)
    (exp / "checkpoints" / "notes.txt").write_text("mine")  # not punctkit's: stays
    st = train(copy.deepcopy(conf), *dirs, exp, quiet=True)
    kept = sorted(int(p.stem.split("_")[1]) for p in (exp / "checkpoints").glob("epoch_*.pt"))
    assert kept == sorted(set(best_epochs(st.history, 2)) | {5}) and len(kept) < 5
    assert (exp / "checkpoints" / "notes.txt").read_text() == "mine" and (exp / "model.avg.pt").is_file()
    conf["train"]["epochs"] = 6
    st = train(copy.deepcopy(conf), *dirs, exp, quiet=True)  # resumes from the last, which was kept
    assert st.epoch == 6 and "resumed from" in (exp / "train.log").read_text()
    assert 6 in [int(p.stem.split("_")[1]) for p in (exp / "checkpoints").glob("epoch_*.pt")]


def test_patience_and_max_minutes_stop_early(dirs, tmp_path):
    conf = copy.deepcopy(TINY)
    conf["train"].update(epochs=50, lr=0.0, patience=2)  # lr 0: dev F1 never improves
    st = train(conf, *dirs, tmp_path / "p", quiet=True)
    assert st.stopped == "patience" and st.epoch == 3
    conf["train"].update(patience=None, max_minutes=1e-9, lr=0.01)
    st = train(conf, *dirs, tmp_path / "m", quiet=True)
    assert st.stopped == "max_minutes" and st.epoch == 1 and st.history[0]["steps"] == 1
    # rerun with a larger limit: the run goes on from its checkpoint instead of stopping at once
    conf["train"].update(max_minutes=None, epochs=2)
    st = train(conf, *dirs, tmp_path / "m", quiet=True)
    assert st.stopped == "" and st.epoch == 2 and st.history[1]["steps"] > 1
    assert "continuing a run stopped by max_minutes" in (tmp_path / "m" / "train.log").read_text()


def test_bf16_precision_trains_and_keeps_fp32_weights(dirs, tmp_path):
    conf = copy.deepcopy(TINY)
    conf["train"].update(epochs=2)
    ref = train(copy.deepcopy(conf), *dirs, tmp_path / "fp32", quiet=True)
    conf["train"]["precision"] = "bf16"
    st = train(conf, *dirs, tmp_path / "bf16", quiet=True)
    assert st.history[-1]["loss"] < st.history[0]["loss"] and st.history[-1]["valid_f1"] is not None
    # autocast was on: the same seed gives other losses than in fp32, and the weights stay fp32
    assert [h["loss"] for h in st.history] != [h["loss"] for h in ref.history]
    weights = _params(tmp_path / "bf16", 2)
    assert all(w.dtype == torch.float32 for w in weights.values() if w.is_floating_point())
    assert load_config(tmp_path / "bf16" / "config.yaml")["train"]["precision"] == "bf16"
    with pytest.raises(PunctkitError, match="train.precision 'fp16' is not one of fp32, bf16"):
        load_config(conf, ["train.precision=fp16"])


def test_w2v_embeddings_train_and_decode(dirs, tmp_path):
    from punctkit.decode_data import decode_dir

    conf = copy.deepcopy(TINY)
    conf["train"]["epochs"] = 1
    conf["embeddings"] = {"w2v_train": {"dim": 8, "epochs": 1, "workers": 1}}
    train(conf, *dirs, tmp_path / "e", quiet=True)
    resolved = load_config(tmp_path / "e" / "config.yaml")["resolved"]["env"]
    vocab = (tmp_path / "e" / "frontend" / "vocab.txt").read_text().split()
    assert resolved["embeddings_shape"] == [len(vocab), 8] and (tmp_path / "e" / "w2v.txt").is_file()
    state = load_checkpoint(tmp_path / "e" / "model.avg.pt")["model"]
    assert state["emb.weight"].shape == (len(vocab), 8) and state["emb.weight"][0].abs().sum() == 0
    r = decode_dir(tmp_path / "e", dirs[1], tmp_path / "hyp")
    assert r["words"] == read_data_dir(dirs[1]).words()


# ------------------------------------------------------------------ the commands, end to end

def test_cli_prepare_inputs_train_decode_score(dirs, tmp_path):
    def pk(*args):
        t = time.time()
        r = commands.run([str(a) for a in args])  # a process of its own, as `python -m punctkit.cli ARGS`
        print(args[0], round(time.time() - t, 1))
        return r
    conf = ROOT / "recipes/iwslt/conf/train_tiny.yaml"
    exp = tmp_path / "exp"
    r = pk("prepare-inputs", dirs[0], exp / "inputs", "--config", conf)
    assert r.returncode == 0, r.stderr
    r = pk("train", "--config", conf, "--train-dir", dirs[0], "--valid-dir", dirs[1], "--exp", exp,
           "--inputs", exp / "inputs", "--set", "train.epochs=1")
    assert r.returncode == 0, r.stderr
    assert (exp / "model.avg.pt").is_file() and json.loads((exp / "history.json").read_text())[0]["epoch"] == 1
    r = pk("decode", exp, dirs[1], tmp_path / "hyp", "--config", ROOT / "recipes/iwslt/conf/decode.yaml")
    assert r.returncode == 0, r.stderr
    r = pk("score", dirs[1], tmp_path / "hyp", "--out", tmp_path / "score")
    assert r.returncode == 0, r.stderr
    assert "overall" in json.loads((tmp_path / "score" / "score.json").read_text())
    (tmp_path / "bad.pt").write_bytes(b"garbage")
    r = pk("decode", exp, dirs[1], tmp_path / "o", "--checkpoint", tmp_path / "bad.pt")
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1 and "bad.pt: corrupt" in r.stderr


def test_stage3_rebuilds_derived_vectors(dirs, tmp_path):
    """Rerunning stage 3 with other word2vec options rewrites w2v.txt (never a stale file)."""
    from punctkit.text.embeddings import load_vectors
    from punctkit.train.inputs import prepare_inputs

    conf = load_config(copy.deepcopy(TINY) | {"embeddings": {"w2v_train": {"dim": 8, "epochs": 1, "workers": 1}}})
    prepare_inputs(conf, dirs[0], tmp_path / "in", log=lambda m: None)
    assert load_vectors(tmp_path / "in" / "w2v.txt").vector_size == 8
    conf["embeddings"]["w2v_train"]["dim"] = 12
    prepare_inputs(conf, dirs[0], tmp_path / "in", log=lambda m: None)
    assert load_vectors(tmp_path / "in" / "w2v.txt").vector_size == 12


def test_precision_auto_follows_the_device(tmp_path):
    """`train.precision: auto` is accepted, becomes bf16 only where bfloat16 is native, and an
    explicit bf16 on a CPU without it is kept with a one-line warning."""
    from punctkit.train.options import native_bf16, resolve_precision

    cfg = tmp_path / "c.yaml"
    cfg.write_text("model: {type: drnn_lwma}\ntrain: {precision: auto}\n")
    assert load_config(cfg)["train"]["precision"] == "auto"
    cfg.write_text("model: {type: drnn_lwma}\ntrain: {precision: fp16}\n")
    with pytest.raises(PunctkitError, match="auto"):
        load_config(cfg)
    cpu = torch.device("cpu")
    native = native_bf16(cpu)
    lines: list[str] = []
    assert resolve_precision("auto", cpu, lines.append) == ("bf16" if native else "fp32")
    assert resolve_precision("fp32", cpu, lines.append) == "fp32"
    assert resolve_precision("bf16", cpu, lines.append) == "bf16"
    warned = [m for m in lines if m.startswith("warning:")]
    assert len(warned) == (0 if native else 1) and all("\n" not in m for m in lines)


@pytest.mark.parametrize("frontend, says", [
    ({"kind": "bogus"}, "unknown frontend kind 'bogus'"),
    ({"kind": "word", "min_count": -3}, "frontend section: option min_count of a 'word' frontend must be"),
])
def test_a_bad_frontend_section_fails_before_the_experiment_is_made(iwslt, tmp_path, frontend, says):
    """The config's frontend section is checked with the rest of the config: one line, and no EXP
    directory left behind (it was made, holding only the failed run's log)."""
    from punct_util import PK

    train, valid = make_dirs(iwslt, tmp_path, "1:200", "201:300")
    conf = tmp_path / "c.yaml"
    conf.write_text(json.dumps({"frontend": frontend, "model": {"type": "drnn_lwma"}}))
    r = subprocess.run(PK + ["train", "--config", str(conf), "--train-dir", str(train), "--valid-dir", str(valid),
                             "--exp", str(tmp_path / "exp")], capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and says in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (tmp_path / "exp").exists()
