"""local/ted/gpu_transfer.py: a trained experiment out of a lent GPU machine (the best run, its averaged model
in float16 parts a call can return, every run's logs) and back into a recipe, where it packs and punctuates."""
import json
import shutil
import subprocess
import tarfile
from pathlib import Path

import torch

from engine_util import make_dirs
from punctkit.config import load_config
from punctkit.fit import train

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "recipes" / "ted" / "local" / "gpu_transfer.py"


def run(*args, cwd):
    return subprocess.run(["python", str(SCRIPT), *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def test_export_and_import_round_trip_refusing_to_replace(iwslt, tmp_path):
    train_dir, valid_dir = make_dirs(iwslt, tmp_path, "1:1500", "1501:1800")
    conf = load_config(ROOT / "recipes" / "ted" / "conf" / "train_tiny.yaml")
    conf["train"]["epochs"] = 2
    there = tmp_path / "there"
    train(conf, train_dir, valid_dir, there / "exp" / "run_a", quiet=True)
    # a second run beside it, better on valid (its history says so): `best` must pick it
    shutil.copytree(there / "exp" / "run_a", there / "exp" / "run_b")
    hist = json.loads((there / "exp" / "run_b" / "history.json").read_text())
    hist[-1]["valid_f1"] = max(h["valid_f1"] for h in hist) + 1.0
    (there / "exp" / "run_b" / "history.json").write_text(json.dumps(hist))
    r = run("best", "exp", cwd=there)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "run_b"
    subprocess.run(["punctkit", "average-checkpoints", "exp/run_b", "--n", "2"], cwd=there, check=True,
                   capture_output=True)

    out = tmp_path / "returned"
    r = run("export", "exp/run_b", out, "--part-mb", 0.02, cwd=there)
    assert r.returncode == 0, r.stderr
    parts = sorted(out.glob("avg16.pt.part*"))
    assert len(parts) > 1 and all(p.stat().st_size <= 0.02 * 2 ** 20 for p in parts)
    with tarfile.open(out / "exps.tar") as tar:
        names = tar.getnames()
    assert "exp/run_a/train.log" in names and "exp/run_b/config.yaml" in names
    assert not [n for n in names if n.endswith(".pt") or "/checkpoints" in n]
    # an earlier export is not written over (a stale part would be joined into the model); one line each
    sizes = [p.stat().st_size for p in parts]
    r = run("export", "exp/run_a", out, cwd=there)
    assert r.returncode != 0 and "holds an earlier export" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert [p.stat().st_size for p in sorted(out.glob("avg16.pt.part*"))] == sizes
    r = run("export", "exp/run_c", tmp_path / "other", cwd=there)  # no such run
    assert r.returncode != 0 and "model.avg.pt: not found" in r.stderr and not (tmp_path / "other").exists()

    here = tmp_path / "here"
    here.mkdir()
    r = run("import", out, cwd=here)
    assert r.returncode == 0, r.stderr
    orig = torch.load(there / "exp" / "run_b" / "model.avg.pt", weights_only=True)["model"]
    back = torch.load(here / "exp" / "run_b" / "model.avg.pt", weights_only=True)["model"]
    assert orig.keys() == back.keys()
    for k, v in orig.items():
        assert back[k].dtype == v.dtype
        assert torch.equal(back[k], v.half().to(v.dtype) if v.is_floating_point() else v)
    assert (here / "exp" / "run_a" / "history.json").is_file()
    # the returned experiment packs and punctuates; words pass through
    subprocess.run(["punctkit", "pack", "exp/run_b", "-o", "m.pkt"], cwd=here, check=True, capture_output=True)
    words = "so what do you think nasa will do next"
    p = subprocess.run(["punctkit", "punctuate", "-m", "m.pkt"], cwd=here, input=words + "\n", capture_output=True,
                       text=True, check=True)
    assert [w.strip(",.?!").lower() for w in p.stdout.split()] == words.split()

    # a second import would replace what is there: refused in one line, nothing changed
    before = (here / "exp" / "run_b" / "model.avg.pt").read_bytes()
    r = run("import", out, cwd=here)
    assert r.returncode != 0 and "exists: move it aside first" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert (here / "exp" / "run_b" / "model.avg.pt").read_bytes() == before
    r = run("import", tmp_path, cwd=here)
    assert r.returncode != 0 and "no exps.tar" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    # no model came back (a run failed there): said, and nothing extracted
    for p in parts:
        p.unlink()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    r = run("import", out, cwd=elsewhere)
    assert r.returncode != 0 and "no avg16.pt.part*" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (elsewhere / "exp").exists()


def test_cast_halves_and_widens_a_safetensors_file(tmp_path):
    """MiniLM's weights travel in float16 and train in float32: floating tensors cast, the others kept."""
    from safetensors.torch import load_file, save_file

    w = {"w": torch.randn(4, 3), "ids": torch.arange(5)}
    save_file(w, str(tmp_path / "a.safetensors"))
    r = run("cast", tmp_path / "a.safetensors", tmp_path / "h.safetensors", "--dtype", "float16", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    r = run("cast", tmp_path / "h.safetensors", tmp_path / "f.safetensors", "--dtype", "float32", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    h, f = load_file(str(tmp_path / "h.safetensors")), load_file(str(tmp_path / "f.safetensors"))
    assert h["w"].dtype == torch.float16 and f["w"].dtype == torch.float32
    assert torch.equal(f["w"], w["w"].half().float()) and torch.equal(f["ids"], w["ids"])
    r = run("cast", tmp_path / "nope.safetensors", tmp_path / "x.safetensors", "--dtype", "float16", cwd=tmp_path)
    assert r.returncode != 0 and "no such safetensors file" in r.stderr and not (tmp_path / "x.safetensors").exists()


def test_import_refuses_a_hostile_archive_in_one_line(tmp_path):
    """exps.tar comes back from another machine: a member outside the experiment folder is refused before
    anything is written (on every Python: punctkit.archive.extract_tar)."""
    import io

    returned = tmp_path / "returned"
    returned.mkdir()
    buf = io.BytesIO()
    torch.save({"model": {"w": torch.zeros(2, dtype=torch.float16)}, "averaged": [], "exp": "run"}, buf)
    (returned / "avg16.pt.part0").write_bytes(buf.getvalue())
    with tarfile.open(returned / "exps.tar", "w") as tar:
        for name in ("exp/run/train.log", "exp/run/../../../evil.txt"):
            info = tarfile.TarInfo(name)
            info.size = 3
            tar.addfile(info, io.BytesIO(b"log"))
    here = tmp_path / "a" / "b" / "here"
    here.mkdir(parents=True)
    r = run("import", returned, cwd=here)
    assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "exp/run/../../../evil.txt" in r.stderr and "refused" in r.stderr
    assert not (here / "exp").exists() and not (tmp_path / "a" / "evil.txt").exists()
