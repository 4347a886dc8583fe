#!/usr/bin/env python3
"""Experiments to and from a lent GPU machine, which returns at most 8 files of 16 MiB (run from recipes/ted):

    local/gpu_transfer.py best EXP_ROOT            # there: the run with the best valid F1 in training (history.json)
    local/gpu_transfer.py export EXP OUT           # there: EXP/model.avg.pt as float16 in parts of --part-mb MB
                                                   # (OUT/avg16.pt.part0, ...) and every run of EXP's parent
                                                   # without checkpoints, *.pt or inputs/ (OUT/exps.tar)
    local/gpu_transfer.py import RETURNED          # here: exps.tar into exp/, the parts widened back to float32
                                                   # as exp/<run>/model.avg.pt (for `punctkit pack`)

import refuses to write over an experiment directory that exists (nothing a user owns is replaced).
local/gpu_runs.sh uses best and export; RESULTS.md, "The accurate model, shipped as `-m accurate`"."""
from __future__ import annotations

import argparse
import io
import json
import sys
import tarfile
from pathlib import Path

import torch

PARTS = "avg16.pt.part"


def best(root: Path) -> str:
    """The run under `root` whose history.json holds the highest valid F1."""
    scores = {}
    for p in sorted(root.glob("*/history.json")):
        f1 = [h["valid_f1"] for h in json.loads(p.read_text(encoding="utf-8")) if h.get("valid_f1") is not None]
        if f1:
            scores[p.parent.name] = max(f1)
    if not scores:
        sys.exit(f"gpu_transfer: {root}: no run with a validated epoch (*/history.json)")
    return max(scores, key=scores.get)


def _light(m: tarfile.TarInfo) -> tarfile.TarInfo | None:
    parts = Path(m.name).parts
    return None if "checkpoints" in parts or "inputs" in parts or m.name.endswith(".pt") else m


def export(exp: Path, out: Path, part_mb: float = 15) -> list[Path]:
    """`exp`/model.avg.pt as float16 in parts of `part_mb` MB, and the logs of every run beside it."""
    st = torch.load(exp / "model.avg.pt", map_location="cpu", weights_only=True)
    half = {k: v.half() if v.is_floating_point() else v for k, v in st["model"].items()}
    buf = io.BytesIO()
    torch.save({"model": half, "averaged": [str(p) for p in st.get("averaged", [])], "exp": exp.name}, buf)
    data, size = buf.getvalue(), int(part_mb * 2 ** 20)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(0, len(data), size):
        paths.append(out / f"{PARTS}{len(paths)}")
        paths[-1].write_bytes(data[i:i + size])
    with tarfile.open(out / "exps.tar", "w") as tar:
        tar.add(str(exp.parent), filter=_light)
    return paths


def import_(returned: Path) -> Path:
    """exps.tar into the current directory (exp/...), and the returned model as exp/<run>/model.avg.pt."""
    with tarfile.open(returned / "exps.tar") as tar:
        members = [m for m in tar.getmembers() if m.isfile() or m.isdir()]
        runs = sorted({Path(m.name).parts[:2] for m in members if len(Path(m.name).parts) > 1})
        clash = [Path(*r) for r in runs if Path(*r).exists()]
        if clash:
            sys.exit(f"gpu_transfer: {clash[0]} exists: move it aside first")
        parts = sorted(returned.glob(f"{PARTS}*"), key=lambda p: int(p.name[len(PARTS):]))
        if not parts:
            sys.exit(f"gpu_transfer: {returned}: no {PARTS}* (a run failed there? exps.tar has the logs)")
        st = torch.load(io.BytesIO(b"".join(p.read_bytes() for p in parts)), map_location="cpu", weights_only=True)
        tar.extractall(".", members=members, filter="data")
    root = Path(runs[0][0]) if runs else Path("exp")
    out = root / st["exp"] / "model.avg.pt"
    model = {k: v.float() if v.is_floating_point() else v for k, v in st["model"].items()}
    torch.save({"model": model, "averaged": st["averaged"]}, out)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("best").add_argument("root", type=Path)
    e = sub.add_parser("export")
    e.add_argument("exp", type=Path)
    e.add_argument("out", type=Path)
    e.add_argument("--part-mb", type=float, default=15)
    sub.add_parser("import").add_argument("returned", type=Path)
    a = ap.parse_args()
    if a.cmd == "best":
        print(best(a.root))
    elif a.cmd == "export":
        paths = export(a.exp, a.out, a.part_mb)
        print(f"gpu_transfer: {a.exp}/model.avg.pt -> {len(paths)} float16 part(s) in {a.out}, logs in {a.out}/exps.tar")
    else:
        print(f"gpu_transfer: {a.returned} -> {import_(a.returned)}")


if __name__ == "__main__":
    main()
