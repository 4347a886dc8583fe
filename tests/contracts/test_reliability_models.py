"""Issue 56, kinds 7, 9 and 11: configs that build more than their weights, training records behind
checkpoints, and the small ones (stale checkpoint temporaries, a missing --train-dir, onnxruntime's
telemetry files).

The packages are packed here by the project's own code from the legacy experiment
(tests/fixtures/legacy/exp), then their config.yaml is edited inside the zip, as a hostile or careless
hand would; the commands run as users run them (a subprocess), their peak memory and time measured.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import pytest
import torch
import yaml

from legacy_util import LEGACY, prepare_data
from punct_util import stderr_error
from punctkit.files import PunctkitError

ROOT = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
HUGE = {"d_model": 50000, "n_layers": 200000}  # the legacy model has d_model 16, one layer
MEMORY_LIMIT_KB = 1_200_000  # a command that loads torch and refuses stays far below (about 300 MB)
TIME_LIMIT_S = 40            # building n_layers: 200000 took over a minute and 4 GB


def run_measured(args: list, cwd: Path, env: dict | None = None,
                 timeout: float = TIME_LIMIT_S) -> tuple[int, str, str, int, float]:
    """(exit status, stdout, stderr, peak RSS in KB, seconds) of `python -m punctkit.cli ARGS`;
    killed (exit -9) past `timeout`."""
    out, err = cwd / ".out", cwd / ".err"
    t0 = time.monotonic()
    with open(out, "wb") as fo, open(err, "wb") as fe:
        p = subprocess.Popen([sys.executable, "-m", "punctkit.cli", *map(str, args)], stdout=fo, stderr=fe,
                             stdin=subprocess.DEVNULL, cwd=cwd, env=env or ENV)
        peak = 0  # the child's own high-water mark (VmHWM, since its exec): wait4's ru_maxrss includes the
        while True:  # peak of this pytest process, which a forked child inherits
            try:
                hwm = [ln for ln in open(f"/proc/{p.pid}/status") if ln.startswith("VmHWM:")]
                peak = max([peak] + [int(ln.split()[1]) for ln in hwm])
            except (OSError, ValueError):
                pass
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - t0 > timeout:
                os.kill(p.pid, signal.SIGKILL)
                pid, status, usage = os.wait4(p.pid, 0)
                break
            time.sleep(0.05)
        p.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
    texts = out.read_text(errors="replace"), err.read_text(errors="replace")
    out.unlink(), err.unlink()
    return p.returncode, texts[0], texts[1], peak or usage.ru_maxrss, time.monotonic() - t0


@pytest.fixture(scope="module")
def packed(tmp_path_factory) -> Path:
    """A package packed now by `punctkit.packing.pack` from the legacy experiment (a trained tiny model)."""
    from punctkit.packing import pack

    d = tmp_path_factory.mktemp("packed")
    exp = shutil.copytree(LEGACY / "exp", d / "exp")
    pack(exp, d / "model.pkt")
    return d / "model.pkt"


def edited(src: Path, dst: Path, edit) -> Path:
    """A copy of package `src` whose config.yaml is `edit(config)`; every other member as it is."""
    with zipfile.ZipFile(src) as z, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as out:
        for info in z.infolist():
            data = z.read(info)
            if info.filename == "config.yaml":
                conf = yaml.safe_load(data)
                edit(conf)
                data = yaml.safe_dump(conf, sort_keys=False).encode()
            out.writestr(info.filename, data)
    return dst


def set_model(key: str, value):
    return lambda conf: conf["model"].__setitem__(key, value)


# ------------------------------------------------------------------ kind 7: configs larger than their weights

@pytest.mark.parametrize("key", sorted(HUGE))
def test_a_package_whose_config_builds_more_than_its_weights_is_one_line(key, packed, tmp_path):
    """`punctuate -m` on a 20 KB package whose config.yaml says d_model: 50000 (an attempt to allocate
    30 GB) or n_layers: 200000 (4 GB for over a minute): refused in one line naming the package,
    config.yaml and model.pt, within bounded memory and time; nothing is written."""
    bad = edited(packed, tmp_path / "bad.pkt", set_model(key, HUGE[key]))
    (tmp_path / "in.txt").write_text("so what is this\n")
    rc, out, err, rss, secs = run_measured(["punctuate", "-m", bad, "--backend", "torch", "in.txt",
                                            "-o", "out.txt"], tmp_path)
    line = stderr_error(err)
    assert rc == 1 and out == ""
    assert f"{bad}: config.yaml does not fit model.pt (it builds a model larger than the weights'" in line
    assert line.endswith("pack it again")
    assert rss < MEMORY_LIMIT_KB and secs < TIME_LIMIT_S, (rss, secs)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.pkt", "in.txt"]


def test_a_package_declaring_a_huge_embedding_table_is_refused_before_it_is_made(packed, tmp_path):
    """resolved.env.embeddings_shape [vocab, 5,000,000] (1.4 GB, within the package's limit on it)
    over a model.pt of 3,460 values: refused before the table is allocated."""
    def huge_table(conf):
        conf["resolved"]["env"]["embeddings_shape"] = [conf["resolved"]["env"]["vocab_size"], 5_000_000]

    bad = edited(packed, tmp_path / "bad.pkt", huge_table)
    (tmp_path / "in.txt").write_text("so what is this\n")
    rc, out, err, rss, secs = run_measured(["punctuate", "-m", bad, "in.txt"], tmp_path)
    line = stderr_error(err)
    assert rc == 1 and "config.yaml does not fit model.pt (its embeddings_shape [" in line
    assert rss < MEMORY_LIMIT_KB and secs < TIME_LIMIT_S, (rss, secs)


def test_an_onnx_package_runs_its_graph_and_its_torch_weights_are_checked(tmp_path):
    """A package with model.onnx: onnxruntime runs the graph, which holds the model (the config's sizes
    are not built); the torch backend of the same file checks the config against model.pt."""
    pytest.importorskip("onnxruntime", reason="the onnx extra is not installed")
    from punctkit import load_model

    bad = edited(LEGACY / "word_onnx.pkt", tmp_path / "bad.pkt", set_model("n_layers", HUGE["n_layers"]))
    text = (LEGACY / "input.txt").read_text().strip()
    assert load_model(bad, backend="onnx", threads=1).punctuate(text) == \
        load_model(LEGACY / "word_onnx.pkt", backend="onnx", threads=1).punctuate(text)
    t0 = time.monotonic()
    with pytest.raises(PunctkitError) as e:
        load_model(bad, backend="torch", threads=1)
    assert time.monotonic() - t0 < 10
    assert str(e.value).startswith(f"{bad}: config.yaml does not fit model.pt (") and "\n" not in str(e.value)


def test_an_experiment_whose_config_builds_more_than_its_checkpoint_is_one_line(tmp_path):
    """`pack EXP` (as `decode EXP`: the same loader) with config.yaml edited to n_layers: 200000:
    one line naming config.yaml and the checkpoint; no package written."""
    exp = shutil.copytree(LEGACY / "exp", tmp_path / "exp")
    conf = yaml.safe_load((exp / "config.yaml").read_text())
    conf["model"]["n_layers"] = HUGE["n_layers"]
    (exp / "config.yaml").write_text(yaml.safe_dump(conf, sort_keys=False))
    rc, out, err, rss, secs = run_measured(["pack", exp, "-o", "m.pkt"], tmp_path)
    line = stderr_error(err)
    assert rc == 1 and f"{exp / 'config.yaml'} does not fit {exp / 'model.avg.pt'} (it builds a model larger" in line
    assert rss < MEMORY_LIMIT_KB and secs < TIME_LIMIT_S, (rss, secs)
    assert not (tmp_path / "m.pkt").exists()


def test_the_meta_check_passes_every_model_as_built_and_finds_each_change():
    """`misfit` says nothing of a model's own weights (each model type, with pre-trained-shaped
    embeddings too), and names a size that differs or a build that outgrows them."""
    import numpy as np

    from punctkit.models.registry import build_model, misfit

    env = {"vocab_size": 50, "n_labels": 4, "pad_id": 0, "embeddings": None, "feat_dim": None}
    for conf in ({"type": "drnn_lwma", "n_layers": 2, "n_heads": 2, "d_model": 32},
                 {"type": "transformer_tagger", "n_layers": 2, "d_model": 32, "n_heads": 4, "d_ff": 64},
                 {"type": "transformer_seq2seq", "n_layers": 2, "n_dec_layers": 1, "d_model": 32, "n_heads": 4,
                  "d_ff": 64}):
        for emb in (None, np.zeros((50, 20), dtype=np.float32)):
            e = dict(env, embeddings=emb)
            shapes = {k: tuple(v.shape) for k, v in build_model(conf, **e).state_dict().items()}
            assert misfit(conf, e, shapes) is None, conf
            assert "of shape" in misfit(dict(conf, d_model=48), e, shapes)
            assert "larger than the weights'" in misfit(dict(conf, d_model=50000), e, shapes)
            assert "larger than the weights'" in misfit(dict(conf, n_layers=200000), e, shapes)


def test_the_meta_check_of_every_recipe_model_leaves_torchs_compiler_unloaded():
    """Each model type the recipes train (their conf/train_*.yaml, pre-trained encoders aside), and
    both kinds of positions, pass `misfit` and are still found too large, in a fresh process that has
    not imported torch._dynamo afterwards: a meta build that draws values or computes a table imports
    it (1.9 s of every start of punctuate, decode or pack with torch weights on an AVX2 EPYC)."""
    import json

    confs = {}
    for f in sorted(ROOT.glob("recipes/*/conf/train_*.yaml")):
        model = yaml.safe_load(f.read_text()).get("model") or {}
        if model.get("type") and "plm" not in model and model["type"] not in confs:
            confs[model["type"]] = model
    assert {"drnn_lwma", "transformer_tagger", "transformer_seq2seq", "hier_seq2seq",
            "concat_transformer"} <= set(confs)
    confs["sinusoidal"] = {"type": "transformer_tagger", "n_layers": 1, "d_model": 16, "n_heads": 2, "d_ff": 32,
                           "positions": "sinusoidal"}
    confs["learned"] = dict(confs["sinusoidal"], positions="learned")
    code = f"""
import json, sys
import torch
from punctkit.models.registry import build_model, misfit
from punctkit.nn.transformer import PositionalEncoding
env = {{"vocab_size": 60, "n_labels": 4, "pad_id": 0, "embeddings": None, "feat_dim": 40}}
said = {{}}
for name, conf in json.loads({json.dumps(json.dumps(confs))}).items():
    shapes = {{k: tuple(v.shape) for k, v in build_model(conf, **env).state_dict().items()}}
    size = next(k for k in ("d_model", "hidden") if k in conf)
    said[name] = [misfit(conf, env, shapes), misfit(dict(conf, **{{size: 50000}}), env, shapes)]
pe = PositionalEncoding(8, max_len=5)  # built on the CPU: the sinusoids themselves
said["table"] = torch.equal(pe.table_, pe._sinusoid(5))
said["compiler"] = "torch._dynamo" in sys.modules
print(json.dumps(said))
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV, timeout=120)
    assert r.returncode == 0, r.stderr
    said = json.loads(r.stdout)
    assert said.pop("compiler") is False and said.pop("table") is True
    for name, (fits, huge) in said.items():
        assert fits is None and "larger than the weights'" in huge, name


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> tuple[Path, Path]:
    """The generated train/valid data dirs the legacy model was trained on."""
    return prepare_data(tmp_path_factory.mktemp("legacy_data"))


def legacy_conf(exp: Path, **train) -> dict:
    conf = yaml.safe_load((exp / "config.yaml").read_text())
    conf.pop("resolved")
    conf["train"].update(train)
    return conf


def test_a_resume_whose_config_builds_more_than_its_checkpoint_is_refused_before_building(data, tmp_path):
    """Resuming the legacy run with n_layers: 200000: one line naming the checkpoint, in seconds,
    and nothing written (train.log, config.yaml, checkpoints as they were)."""
    from punctkit.fit import train

    exp = shutil.copytree(LEGACY / "exp", tmp_path / "exp")
    before = {p: p.read_bytes() for p in exp.rglob("*") if p.is_file()}
    conf = legacy_conf(exp, epochs=3)
    conf["model"]["n_layers"] = HUGE["n_layers"]
    t0 = time.monotonic()
    with pytest.raises(PunctkitError) as e:
        train(conf, *data, exp, quiet=True)
    assert time.monotonic() - t0 < 20
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith(f"{exp / 'checkpoints' / 'epoch_2.pt'}: does not match this config's model")
    assert {p: p.read_bytes() for p in exp.rglob("*") if p.is_file()} == before


# ------------------------------------------------------------------ kind 9 and 11a: a kill between the renames

def test_a_kill_between_checkpoint_and_history_is_repaired_and_its_temporaries_removed(data, tmp_path, monkeypatch):
    """Epoch 3 of the legacy run is killed after epoch_3.pt is renamed into place and before
    history.json is: `pack`'s card already counts 3 epochs (from the checkpoint's own record); the
    rerun repairs history.json from it and removes the unfinished checkpoint temporaries a kill
    leaves, and only those."""
    from punctkit.fit import train
    from punctkit.package import model_package
    from punctkit.train import trainer

    exp = shutil.copytree(LEGACY / "exp", tmp_path / "exp")
    conf = legacy_conf(exp, epochs=3)
    real = trainer.atomic_write

    def killed_at_history(path, *a, **k):
        if Path(path).name == "history.json":
            raise SystemExit("killed")  # as SIGKILL: nothing after this point runs
        return real(path, *a, **k)

    with monkeypatch.context() as m:
        m.setattr(trainer, "atomic_write", killed_at_history)
        with pytest.raises(SystemExit):
            train(conf, *data, exp, quiet=True)
    ckpts = exp / "checkpoints"
    assert sorted(p.name for p in ckpts.iterdir()) == ["epoch_2.pt", "epoch_3.pt"]
    assert [h["epoch"] for h in yaml.safe_load((exp / "history.json").read_text())] == [1, 2]  # behind

    assert model_package(exp).manifest["card"]["epochs"] == 3  # the card counts what the checkpoints hold

    # what a SIGKILL inside atomic_write leaves (its own names), beside files that are not its
    fd, stale = tempfile.mkstemp(prefix=".epoch_4.pt.", suffix=".tmp", dir=ckpts)
    os.write(fd, b"half a checkpoint")
    os.close(fd)
    keep = [ckpts / ".epoch_4.pt.mine.tmp", ckpts / "notes.tmp", exp / ".epoch_4.pt.abcdefgh.tmp"]
    for p in keep:
        p.write_text("the user's")

    st = train(conf, *data, exp, quiet=True)  # the rerun: nothing left to train
    assert st.epoch == 3
    history = yaml.safe_load((exp / "history.json").read_text())
    assert [h["epoch"] for h in history] == [1, 2, 3]
    assert history == torch.load(ckpts / "epoch_3.pt", weights_only=True)["state"]["history"]
    log = (exp / "train.log").read_text()
    assert "history.json: repaired from the checkpoint of epoch 3 (3 epochs)" in log
    assert not Path(stale).exists() and "removed 1 unfinished checkpoint file(s)" in log
    assert all(p.read_text() == "the user's" for p in keep)


# ------------------------------------------------------------------ kind 11b and 11c

@pytest.mark.parametrize("missing", ["--train-dir", "--valid-dir"])
def test_train_with_a_missing_data_dir_makes_nothing(missing, data, tmp_path):
    """A missing --train-dir or --valid-dir is one line naming it; --exp and its train.log are not made."""
    dirs = {"--train-dir": data[0], "--valid-dir": data[1], missing: tmp_path / "nope"}
    r = subprocess.run([sys.executable, "-m", "punctkit.cli", "train", "--config", LEGACY / "exp" / "config.yaml",
                        "--train-dir", dirs["--train-dir"], "--valid-dir", dirs["--valid-dir"],
                        "--exp", tmp_path / "exp"], capture_output=True, text=True, cwd=tmp_path, env=ENV)
    line = stderr_error(r.stderr)
    assert r.returncode == 1 and line == (f"punctkit: error: {missing} {tmp_path / 'nope'}: data directory not "
                                          f"found (give one that `punctkit prepare` wrote)")
    assert not (tmp_path / "exp").exists()


def test_onnxruntime_writes_nothing_under_home(tmp_path):
    """`punctuate` with an ONNX package: onnxruntime's telemetry database and device id
    (~/.cache/Microsoft/DeveloperTools/.onnxruntime) are not written; only the output is."""
    pytest.importorskip("onnxruntime", reason="the onnx extra is not installed")
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "in.txt").write_text("so what is this\n")
    env = {k: v for k, v in ENV.items() if k not in ("ORT_DISABLE_TELEMETRY", "XDG_CACHE_HOME")}
    r = subprocess.run([sys.executable, "-m", "punctkit.cli", "punctuate", "-m", LEGACY / "word_onnx.pkt",
                        "--backend", "onnx", "in.txt", "-o", "out.txt"], capture_output=True, text=True,
                       cwd=tmp_path, env=dict(env, HOME=str(home)))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out.txt").read_text().strip() == "So, what is this."
    assert list(home.rglob("*")) == []
