"""Writing packages (`punctkit pack`): one trained model's members, an ensemble's, and the atomic
write of the zip (loaded back by punctkit/packing.py before it replaces the output)."""
from __future__ import annotations

import contextlib
import io
import json
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

import yaml

from punctkit import __version__
from punctkit.data.labels import get_inventory
from punctkit.decode.boundary import BoundaryFusion
from punctkit.files import PunctkitError, atomic_write, parse_json, require_file
from punctkit.package.card import CARD_DECODE, CARD_OWN, card_paths, card_result, make_card, quoted_decoding
from punctkit.package.format import (
    BOUNDARY,
    ENSEMBLE,
    FORMAT_NAME,
    FORMAT_VERSION,
    FRONTEND,
    MANIFEST,
    MAX_MEMBERS,
    META_LIMIT,
    allowed_members,
    member_prefix,
)
from punctkit.text.frontend import CONF_FILE


def model_files(exp_dir: str | Path, *, checkpoint: str | None = None, card_results: Iterable[str | Path] = (),
                train_data: str | None = None, onnx: bool = False, int8: bool = False,
                quote: bool = True, onnx_only: bool = False,
                notes: dict[str, str] | None = None) -> tuple[dict[str, Any], list[tuple[str, bytes, int]]]:
    """The manifest and the (name, bytes, compression) members of one trained model's package.

    `onnx` adds the tagger as an ONNX graph (punctkit/onnx.py), checked against torch;
    `int8` stores that graph with int8 weights; `onnx_only`: the graph without model.pt.
    `quote`: the package decodes with the settings behind the quoted `card_results`
    (else they are only listed on the card).
    """
    onnx = onnx or onnx_only
    if int8 and not onnx:
        raise PunctkitError("--int8 is the ONNX graph's weight type: add --onnx")
    import torch

    from punctkit.expdir import find_checkpoint, load_experiment_model, offline_model_conf
    exp = Path(exp_dir)
    model, frontend, _, conf = load_experiment_model(exp, checkpoint)
    ckpt = find_checkpoint(exp, checkpoint)  # its name goes on the card
    fe_dir = exp / "frontend"
    require_file(fe_dir / CONF_FILE, "frontend description")
    conf = dict(conf, model=offline_model_conf(conf["model"], fe_dir))
    results = [Path(p) for p in card_results]
    quoted = quoted_decoding(results) if quote else None
    if quoted is not None:  # the package decodes as its quoted scores were decoded
        conf["decode"] = {**conf["decode"], **quoted}
    manifest = {
        "format": FORMAT_NAME, "format_version": FORMAT_VERSION, "punctkit_version": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "card": make_card(exp, conf, ckpt, results, train_data, notes),
    }
    graph = None
    if onnx:
        from punctkit.onnx import export_onnx, quantize_graph

        graph = export_onnx(model, frontend.vocab_size, frontend.pad_id)
        if int8:
            graph = quantize_graph(graph)
        manifest["card"]["onnx"] = ("int8" if int8 else "float32") + (" only (no torch weights)" if onnx_only else "")
    weights = io.BytesIO()
    torch.save(model.state_dict(), weights)
    allowed = set(allowed_members(frontend.kind))
    files = [(MANIFEST, json.dumps(manifest, indent=1).encode(), zipfile.ZIP_DEFLATED),
             ("config.yaml", yaml.safe_dump(conf, sort_keys=False).encode(), zipfile.ZIP_DEFLATED)]
    for p in sorted(fe_dir.rglob("*")):
        name = FRONTEND + p.relative_to(fe_dir).as_posix()
        if p.is_file() and name in allowed:  # what read_package accepts (no editor backups, ...)
            files.append((name, p.read_bytes(), zipfile.ZIP_DEFLATED))
    if not onnx_only:
        files.append(("model.pt", weights.getvalue(), zipfile.ZIP_STORED))
    if graph is not None:
        files.append(("model.onnx", graph, zipfile.ZIP_STORED))
    return manifest, files


def is_package_file(path: Path) -> bool:
    """Whether `path` is a zip holding punctkit's manifest (a package `pack` may replace)."""
    try:
        with zipfile.ZipFile(path) as z:
            return MANIFEST in z.namelist()
    except (OSError, zipfile.BadZipFile):
        return False


@dataclass(frozen=True)
class Packed:
    """A package's members, ready to write: its manifest, its files (name, bytes, zip compression)
    and the backends it can run with (each checked by loading the file back before the rename)."""

    manifest: dict[str, Any]
    files: list[tuple[str, bytes, int]]
    backends: tuple[str, ...]


def check_package_output(out: str | Path) -> None:
    """A one-line error unless `out` may take a package: a new file, or a package that it replaces
    (punctkit never overwrites a file it did not write); `pack` checks it before it builds anything."""
    p = Path(out)
    if p.is_dir():
        raise PunctkitError(f"{p}: is a directory; give the package's file name (e.g. {p / 'model.pkt'})")
    if p.is_file() and not is_package_file(p):
        raise PunctkitError(f"{p}: exists and is not a punctkit package; choose another name or move it away")


@contextlib.contextmanager
def writing(out: str | Path, packed: Packed) -> Iterator[Path]:
    """Write `packed` into `out` atomically: the zip is complete under a temporary name when this
    yields it (load it back there), and replaces `out` only when the block ends without an error;
    an existing `out` is replaced only if it is a package (`check_package_output`)."""
    check_package_output(out)
    with atomic_write(out, "wb") as f:
        with zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED) as z:
            for name, data, compress in packed.files:
                info = zipfile.ZipInfo(name, date_time=time.localtime()[:6])
                info.compress_type = compress
                info.external_attr = 0o644 << 16
                z.writestr(info, data)
        f.flush()
        yield Path(f.name)


def model_package(exp_dir: str | Path, *, checkpoint: str | None = None,
                  card_results: Iterable[str | Path] = (), train_data: str | None = None,
                  onnx: bool = False, int8: bool = False, onnx_only: bool = False,
                  notes: dict[str, str] | None = None) -> Packed:
    """The package of a trained model dir (`punctkit pack`; punctkit/packing.py writes it).

    `onnx` adds the tagger as an ONNX graph (punctkit/onnx.py), checked against torch;
    `int8` stores that graph with int8 weights (faster on CPU; labels may differ slightly);
    `onnx_only`: the graph alone, without model.pt (a smaller file that onnxruntime runs);
    `notes`: more entries for the card (`make_card`).
    """
    manifest, files = model_files(exp_dir, checkpoint=checkpoint, card_results=card_results, train_data=train_data,
                                  onnx=onnx, int8=int8, onnx_only=onnx_only, notes=notes)
    return Packed(manifest, files, ("onnx",) if onnx_only else ("torch", "onnx") if onnx else ("torch",))


def repackage(pkg_path: str | Path, *, card_results: Iterable[str | Path],
              notes: dict[str, str] | None = None, boundary: str | Path | None = None) -> Packed:
    """A package re-packed (`punctkit pack PACKAGE [--card-results ...]`): its model's members as they
    are (weights, frontend; its ONNX graph with the rewrites of this version's `pack` that leave its
    logits as they were: punctkit.onnx.same_logits_rewrite), its decoding settings those of the quoted
    scores (`quoted_decoding`: a decoding chosen on valid after packing, e.g. `punctkit decode PACKAGE
    ... --step 50`) and its card's figures theirs, or both as they were without `card_results`;
    `notes` replace or add card entries other than its own (`rebuild`, ...); `boundary`: a fusion of turns and
    pauses (decode/boundary.py's JSON, local/fit_boundary.py's boundary.json) packed in, replacing its own."""
    from punctkit.files import parse_yaml
    from punctkit.package.read import EnsemblePackage, read_package

    pkg = read_package(pkg_path)  # validated before any member is taken over
    if isinstance(pkg, EnsemblePackage):
        raise PunctkitError(f"{pkg_path}: an ensemble package; re-pack one model (or pack the ensemble's EXP_DIRS)")
    results = [Path(r) for r in card_results]
    quoted = quoted_decoding(results) if results else {}
    if quoted is None:
        raise PunctkitError("pack PACKAGE: give --card-results of scores decoded by punctkit decode (their "
                            "decode_options.yaml sets the package's decoding)")
    with zipfile.ZipFile(pkg_path) as z:
        members = [(i.filename, z.read(i), i.compress_type) for i in z.infolist() if not i.is_dir()]
    raw = dict((name, data) for name, data, _ in members)
    # config.yaml as packed (read_package rebuilt its encoder section for loading); the manifest as read
    conf = parse_yaml(raw["config.yaml"].decode("utf-8"), f"{pkg_path} (config.yaml)")
    conf["decode"] = {**(conf.get("decode") or {}), **quoted}
    manifest = pkg.manifest
    card = dict(manifest.get("card", {}))
    card["decode"] = {k: conf["decode"][k] for k in CARD_DECODE if k in conf["decode"]}
    if results:
        card["results"] = {p.parent.name: card_result(p) for p in results}
    for key, text in (notes or {}).items():
        if key in CARD_OWN:
            raise PunctkitError(f"--card-note {key}: the card's own entry; name the note otherwise")
        card[key] = text
    manifest = dict(manifest, punctkit_version=__version__, created=time.strftime("%Y-%m-%dT%H:%M:%S"),
                    card=card_paths(card, [Path.cwd()]))
    replaced = {MANIFEST: json.dumps(manifest, indent=1).encode(),
                "config.yaml": yaml.safe_dump(conf, sort_keys=False).encode()}
    if pkg.onnx is not None:
        from punctkit.onnx import check_batch, same_logits_rewrite

        replaced["model.onnx"] = same_logits_rewrite(pkg.onnx, check_batch(pkg.frontend.vocab_size,
                                                                            pkg.frontend.pad_id))
    if boundary is not None:
        fusion = read_boundary(boundary)
        fusion.columns(get_inventory(conf["resolved"]["inventory"]))
        replaced[BOUNDARY] = json.dumps(fusion.to_dict()).encode()
        card["boundary"] = {"weight": fusion.weight, "from": str(boundary)}
        manifest["card"] = card_paths(card, [Path.cwd()])
        replaced[MANIFEST] = json.dumps(manifest, indent=1).encode()
    files = [(name, replaced.pop(name, data), compress) for name, data, compress in members]
    files += [(name, data, zipfile.ZIP_DEFLATED) for name, data in replaced.items() if name == BOUNDARY]
    backends = (("torch",) if pkg.weights_member is not None else ()) + (("onnx",) if pkg.onnx is not None else ())
    return Packed(manifest, files, backends)


def read_boundary(path: str | Path) -> BoundaryFusion:
    """A fusion of turns and pauses from its JSON file (decode/boundary.py), checked as a package's is."""
    p = require_file(path, "boundary fusion (local/fit_boundary.py's boundary.json)")
    if p.stat().st_size > META_LIMIT:
        raise PunctkitError(f"{p}: larger than a boundary fusion can be ({META_LIMIT} bytes)")
    try:
        data = parse_json(p.read_text(encoding="utf-8"))
    except (ValueError, RecursionError) as e:
        raise PunctkitError(f"{p}: not JSON ({str(e).splitlines()[0][:80]})") from None
    return BoundaryFusion.from_dict(data, str(p))


def member_scores(exp: Path) -> list[Path]:
    """The scores a member's card quotes: EXP/decode_*/score.json (written by `punctkit score -o`)."""
    return sorted(exp.glob("decode_*/score.json"))


def ensemble_package(exp_dirs: list[str | Path], weights: list[float],
                     checkpoint: str | None = None, card_results: Iterable[str | Path] = (),
                     onnx: bool = False, int8: bool = False) -> Packed:
    """Several trained models as one ensemble package (members `models/K/`, `weights` summing
    to 1); the card lists each member (its experiment, model, checkpoint and the test figures of
    its EXP/decode_*/score.json) and the weights; `card_results`: the ensemble's own scores."""
    if not 1 <= len(exp_dirs) <= MAX_MEMBERS:
        raise PunctkitError(f"an ensemble package holds 1 to {MAX_MEMBERS} models, not {len(exp_dirs)}")
    if len(weights) != len(exp_dirs):
        raise PunctkitError(f"--weights: {len(weights)} weights for {len(exp_dirs)} models; give one per model")
    packed = [str(e) for e in exp_dirs if Path(e).is_file()]
    if packed:
        raise PunctkitError(f"{packed[0]}: a package cannot be an ensemble member: pack an ensemble from trained "
                            f"model directories (exp/NAME), or ensemble packages at run time (-m A -m B)")
    files: list[tuple[str, bytes, int]] = []
    members = []
    for k, exp in enumerate(exp_dirs):
        manifest, mine = model_files(exp, checkpoint=checkpoint, card_results=member_scores(Path(exp)), onnx=onnx,
                                     int8=int8, quote=False)
        members.append(dict(manifest["card"], exp=str(exp)))
        files += [(member_prefix(k) + name, data, compress) for name, data, compress in mine]
    inventories = {m["inventory"] for m in members}
    if len(inventories) > 1:
        a, b = members[0], next(m for m in members if m["inventory"] != members[0]["inventory"])
        raise PunctkitError(f"{a['exp']} (inventory {a['inventory']}) and {b['exp']} (inventory {b['inventory']}) "
                            f"label different marks: the models of an ensemble must share one inventory")
    card = {"model": ENSEMBLE, "inventory": members[0]["inventory"], "weights": weights, "members": members,
            "results": {Path(p).parent.name: card_result(Path(p)) for p in card_results}}
    card = card_paths(card, [Path.cwd(), *(Path(e).parent for e in exp_dirs)])  # no absolute path of this machine
    top = {"format": FORMAT_NAME, "format_version": FORMAT_VERSION, "punctkit_version": __version__,
           "created": time.strftime("%Y-%m-%dT%H:%M:%S"), "kind": ENSEMBLE, "weights": weights, "card": card}
    files.insert(0, (MANIFEST, json.dumps(top, indent=1).encode(), zipfile.ZIP_DEFLATED))
    return Packed(top, files, ("torch", "onnx") if onnx else ("torch",))
