#!/usr/bin/env python3
"""Experiments to and from a lent GPU machine, which takes at most 64 MiB and returns at most 8 files of
16 MiB (run from recipes/ted; RESULTS.md, "The accurate model, shipped as `-m accurate`"):

    local/gpu_transfer.py cast SRC DST --dtype float16|float32   # a safetensors file's floating tensors cast
                                                   # (MiniLM's weights halved to travel, widened back there)
    local/gpu_transfer.py best EXP_ROOT            # there: the run with the best valid F1 in training
    local/gpu_transfer.py logs EXP_ROOT OUT        # there: every run without checkpoints, *.pt or inputs/
                                                   # (OUT/exps.tar)
    local/gpu_transfer.py export EXP OUT           # there: the logs of EXP's parent, and EXP/model.avg.pt as
                                                   # float16 in parts of --part-mb MB (OUT/avg16.pt.part0, ...)
    local/gpu_transfer.py import RETURNED          # here: exps.tar into exp/, the parts widened back to float32
                                                   # as exp/<run>/model.avg.pt (for `punctkit pack`)

export refuses an OUT that holds either already, and import an experiment directory that exists (nothing a user
owns is replaced). local/gpu_bundle.sh and local/gpu_runs.sh call these."""
from __future__ import annotations

import argparse
import io
import sys
import tarfile
from pathlib import Path

import torch

from punctkit.archive import extract_tar

PARTS = "avg16.pt.part"
LOGS = "exps.tar"
DTYPES = {"float16": torch.float16, "float32": torch.float32}


def fail(msg: str) -> None:
    sys.exit(f"gpu_transfer: {msg}")


def cast(state: dict[str, torch.Tensor], dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """`state` with its floating tensors in `dtype` (the others as they are)."""
    return {k: v.to(dtype) if v.is_floating_point() else v for k, v in state.items()}


def cast_file(src: Path, dst: Path, dtype: torch.dtype) -> None:
    from safetensors.torch import load_file, save_file

    if not src.is_file():
        fail(f"{src}: no such safetensors file")
    save_file(cast(load_file(str(src)), dtype), str(dst))


def best(root: Path) -> str:
    """The run under `root` whose training history (punctkit's reader of history.json) holds the highest valid F1."""
    from punctkit.expdir import training_history

    scores = {}
    for d in sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []:
        f1 = [h["valid_f1"] for h in training_history(d) or [] if h.get("valid_f1") is not None]
        if f1:
            scores[d.name] = max(f1)
    if not scores:
        fail(f"{root}: no run with a validated epoch (*/history.json)")
    return max(scores, key=scores.get)


def _light(m: tarfile.TarInfo) -> tarfile.TarInfo | None:
    parts = Path(m.name).parts
    return None if "checkpoints" in parts or "inputs" in parts or m.name.endswith(".pt") else m


def _fresh(out: Path) -> None:
    """`out` holds no earlier export (a stale part would be joined into the model)."""
    if (out / LOGS).exists() or any(out.glob(f"{PARTS}*")):
        fail(f"{out}: holds an earlier export ({LOGS} or {PARTS}*): give another folder")
    out.mkdir(parents=True, exist_ok=True)


def logs(root: Path, out: Path) -> Path:
    """Every run under `root` (logs, histories, configs, frontends) into `out`/exps.tar."""
    if not root.is_dir():
        fail(f"{root}: no such experiment folder")
    tmp = out / f".{LOGS}.tmp"
    with tarfile.open(tmp, "w") as tar:
        tar.add(str(root), filter=_light)
    tmp.rename(out / LOGS)
    return out / LOGS


def export(exp: Path, out: Path, part_mb: float = 15) -> list[Path]:
    """The logs of every run beside `exp`, and `exp`/model.avg.pt as float16 in parts of `part_mb` MB."""
    if not (exp / "model.avg.pt").is_file():
        fail(f"{exp}/model.avg.pt: not found (punctkit average-checkpoints {exp} makes it)")
    _fresh(out)
    st = torch.load(exp / "model.avg.pt", map_location="cpu", weights_only=True)
    buf = io.BytesIO()
    torch.save({"model": cast(st["model"], torch.float16), "averaged": [str(p) for p in st.get("averaged", [])],
                "exp": exp.name}, buf)
    data, size = buf.getvalue(), int(part_mb * 2 ** 20)
    paths = [out / f"{PARTS}{i}" for i in range(-(-len(data) // size))]
    for i, p in enumerate(paths):
        p.write_bytes(data[i * size:(i + 1) * size])
    logs(exp.parent, out)
    return paths


def import_(returned: Path) -> Path:
    """exps.tar into the current directory (exp/...), and the returned model as exp/<run>/model.avg.pt."""
    if not (returned / LOGS).is_file():
        fail(f"{returned}: no {LOGS} (not what local/gpu_transfer.py export writes)")
    with tarfile.open(returned / LOGS) as tar:
        members = [m for m in tar.getmembers() if m.isfile() or m.isdir()]
        runs = sorted({Path(m.name).parts[:2] for m in members if len(Path(m.name).parts) > 1})
        clash = [Path(*r) for r in runs if Path(*r).exists()]
        if clash:
            fail(f"{clash[0]} exists: move it aside first")
        parts = sorted(returned.glob(f"{PARTS}*"), key=lambda p: int(p.name[len(PARTS):]))
        if not parts:
            fail(f"{returned}: no {PARTS}* (a run failed there? {LOGS} has the logs)")
        st = torch.load(io.BytesIO(b"".join(p.read_bytes() for p in parts)), map_location="cpu", weights_only=True)
        try:
            extract_tar(tar, ".", members, where=str(returned / LOGS))
        except ValueError as e:
            fail(str(e))
    out = Path(runs[0][0]) / st["exp"] / "model.avg.pt"
    torch.save({"model": cast(st["model"], torch.float32), "averaged": st["averaged"]}, out)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("cast")
    c.add_argument("src", type=Path)
    c.add_argument("dst", type=Path)
    c.add_argument("--dtype", choices=sorted(DTYPES), required=True)
    sub.add_parser("best").add_argument("root", type=Path)
    lg = sub.add_parser("logs")
    lg.add_argument("root", type=Path)
    lg.add_argument("out", type=Path)
    e = sub.add_parser("export")
    e.add_argument("exp", type=Path)
    e.add_argument("out", type=Path)
    e.add_argument("--part-mb", type=float, default=15)
    sub.add_parser("import").add_argument("returned", type=Path)
    a = ap.parse_args()
    if a.cmd == "cast":
        cast_file(a.src, a.dst, DTYPES[a.dtype])
    elif a.cmd == "best":
        print(best(a.root))
    elif a.cmd == "logs":
        a.out.mkdir(parents=True, exist_ok=True)
        print(f"gpu_transfer: {a.root} -> {logs(a.root, a.out)}")
    elif a.cmd == "export":
        paths = export(a.exp, a.out, a.part_mb)
        print(f"gpu_transfer: {a.exp}/model.avg.pt -> {len(paths)} float16 part(s) in {a.out}, logs in {a.out}/{LOGS}")
    else:
        print(f"gpu_transfer: {a.returned} -> {import_(a.returned)}")


if __name__ == "__main__":
    main()
